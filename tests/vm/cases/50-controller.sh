#!/bin/bash
# The isolation controller on real rxe: two daemons that are each other's
# reference peers over an authenticated channel (jd0 on rxe0 listening on
# $RXE_IP0, jd1 on rxe1 on $RXE_IP1, always_on), their reference flows up and
# measuring; calibration against the peer; a latency flow (ib_send_lat under
# the shim) and a bandwidth flow registered with jd1; then an unpaced 1 MB
# ib_write_bw from rxe1 to rxe0 with a target between the idle and the
# loaded p99: jd1's SafeUtil halves (never below the floor) and recovers
# once the load stops; a latency flow that registers during the load gets
# the admission warning.  Directions only: TCG timings are noisy.
#
# The guest has two vCPUs, Soft-RoCE is the CPU and perftest busy-polls: the
# perftest programs run at nice 19, so that the NIC's work (rxe's kernel
# tasks) and the daemons are not queued behind them and the reference flow
# measures the (emulated) NIC rather than the CPU scheduler.
NICE="nice -n 19"
. tests/vm/lib.sh
. tests/vm/shimlib.sh
D=$PWD/build/justitiad
C=$PWD/build/justctl
R=$PWD/build/tests/flowreg
MAXRATE=400000000
mkdir -p "$JV_OUT"
head -c 32 /dev/urandom | base64 >"$JV_OUT/secret"
chmod 600 "$JV_OUT/secret"

conf() { # NAME DEVICE LISTEN PEER MAX_RATE LOOPBACK_CORRECTION POLL_US
	cat >"$JV_OUT/$1.json" <<EOF
{
  "runtime_dir": "/run/$1",
  "state_dir": "$JV_OUT/$1-state",
  "log_level": "info",
  "devices": [ { "name": "$2", "gid_index": $RXE_GID, "max_rate": $5 } ],
  "reference": {
    "listen_address": $([ -n "$3" ] && echo "\"$3\"" || echo null),
    "peers": [ { "address": "$4" } ],
    "secret_file": "$JV_OUT/secret",
    "always_on": true,
    "loopback_correction": $6,
    "poll_us": $7,
    "window": 400
  },
  "controller": { "target99_us": 1000000, "stale_ms": 200 }
}
EOF
}

start_daemon() { # NAME
	"$D" -c "$JV_OUT/$1.json" -D ref,ctrl >>"$JV_OUT/$1.log" 2>&1 &
	eval "PID_$1=$!"
	for _ in $(seq 100); do
		[ -S "/run/$1/justitiad.sock" ] && return 0
		sleep 0.05
	done
	echo "daemon $1 did not come up:"
	cat "$JV_OUT/$1.log"
	return 1
}

ctl() { # NAME ARGS...
	local n=$1
	shift
	"$C" -s "/run/$n/justitiad.sock" "$@"
}

st() { # NAME JQ: a jq expression over the daemon's status
	ctl "$1" --json status | jq -r "$2"
}

# wait_for NAME JQ [SECONDS]: until the expression is "true"
wait_for() {
	local i
	for i in $(seq $((${3:-20} * 5))); do
		[ "$(st "$1" "$2" 2>/dev/null)" = true ] && return 0
		sleep 0.2
	done
	return 1
}

# jd0 listens where its reference device is (listen_address unset)
conf jd0 "$RXE_DEV0" "" "$RXE_IP1" '"auto"' true 2000
conf jd1 "$RXE_DEV1" "$RXE_IP1" "$RXE_IP0" "\"${MAXRATE}bit\"" false 0
start_daemon jd0 && start_daemon jd1 || exit 1

# ---- the reference flows come up, authenticated, and measure
wait_for jd1 '.controller.reference.state == "up" and .controller.reference.samples > 300' 30
wait_for jd0 '.controller.reference.state == "up" and .controller.reference.samples > 300' 30
for n in jd0 jd1; do
	expect_eq "$n.reference.up" "up true true" \
		"$(st $n '"\(.controller.reference.state) \(.controller.current99_ns != null) \(.controller.reference.channel.authenticated)"')"
done
expect_eq jd1.reference.peer "$RXE_IP0:7471" "$(st jd1 .controller.reference.peer)"
expect_eq jd0.listen.reference.address "$RXE_IP0 AES-256-GCM" \
	"$(st jd0 '"\(.controller.reference.channel.listen) \(.controller.reference.channel.encryption)"')"
expect_eq jd0.listen.not.everywhere "" \
	"$(ss -Hltn "sport = :7471" | awk '{ print $4 }' | grep -v -e "^$RXE_IP0:7471\$" -e "^$RXE_IP1:7471\$")"

# ---- secure by default: a peer on another host and no secret is refused
# (file:line:col), unless the configuration says insecure_peers
echo "{ \"reference\": { \"peers\": [ { \"address\": \"$RXE_IP1\" } ] } }" >"$JV_OUT/clear.json"
"$D" --check-config -c "$JV_OUT/clear.json" >"$JV_OUT/clear.out" 2>&1
expect_eq config.clear.refused "1 yes" "$? $(grep -q "clear.json:1:.*reference.peers\[0\].address: a peer on another host needs reference.secret_file" "$JV_OUT/clear.out" && echo yes)"
sed -i 's/} ] }/} ], "insecure_peers": true }/' "$JV_OUT/clear.json"
"$D" --check-config -c "$JV_OUT/clear.json" >"$JV_OUT/clear2.out" 2>&1
expect_eq config.clear.insecure.accepted 0 "$?"
# jd0 subtracts a loopback probe on rxe0 from every sample (RPerf-style)
expect_eq jd0.loopback.correction "true true" \
	"$(st jd0 '"\(.controller.reference.loopback_correction) \(.controller.reference.loopback_ns > 0)"')"
# both views: the p99 before the correction too, and the corrected one no
# higher (0 when the loopback twin is as slow as the probe: on a busy
# guest rxe0's loopback is processed by the same CPUs as the probe)
expect_eq jd0.loopback.both.views "true true" \
	"$(st jd0 '"\(.controller.reference.uncorrected99_ns > 0) \(.controller.current99_ns != null and .controller.current99_ns <= .controller.reference.uncorrected99_ns)"')"
echo "  jd0: p99 $(st jd0 .controller.current99_ns) ns corrected, $(st jd0 .controller.reference.uncorrected99_ns) ns before"
expect_eq jd1.no.correction.no.second.view null "$(st jd1 .controller.reference.uncorrected99_ns)"
# jd0 polls each probe's CQ after posting it (up to 2 ms), jd1 never does
expect_eq jd0.reference.polled yes \
	"$(st jd0 'if .controller.reference.polled > 0 then "yes" else "no: \(.controller.reference.polled) of \(.controller.reference.samples)" end')"
echo "  jd0: $(st jd0 '"\(.controller.reference.polled) of \(.controller.reference.samples)"') samples polled"
expect_eq jd1.reference.polled 0 "$(st jd1 .controller.reference.polled)"
expect_eq jd1.responder.serves.jd0 1 "$(st jd1 .controller.reference.responders)"
expect_eq jd1.max_rate.config "$MAXRATE config" \
	"$(st jd1 '"\(.controller.max_rate_bps) \(.controller.max_rate_source)"')"
expect_eq jd0.max_rate.link link "$(st jd0 .controller.max_rate_source)"
ctl jd1 status >"$JV_OUT/status-idle.txt"
expect_eq justctl.status.text yes \
	"$(grep -q "^reference: *up, peer $RXE_IP0:7471" "$JV_OUT/status-idle.txt" && echo yes)"

# ---- a hostile peer on the daemon channel: refused and counted, nothing
# allocated without bound, the legitimate peer (jd1) unaffected.  perl
# (perl-base) binds the source address, so it can speak as the peer's host.
hostile() { # FROM MODE
	perl -MIO::Socket::INET -e '
		my ($from, $to, $mode) = @ARGV;
		my @keep;
		if ($mode eq "flood") {
			for (1 .. 200) {
				my $c = IO::Socket::INET->new(PeerAddr => $to, LocalAddr => $from,
							      Timeout => 2) or last;
				push @keep, $c;
			}
			sleep 1;
			exit 0;
		}
		my $s = IO::Socket::INET->new(PeerAddr => $to, LocalAddr => $from, Timeout => 5)
			or die "connect: $!";
		my $hello = q({"v":2,"type":"hello","role":"client","node":"00000000000000ff",) .
			    q("nonce":"000102030405060708090a0b0c0d0e0f","auth":true}) . "\n";
		if ($mode eq "garbage") { print $s "not json\n"; }
		elsif ($mode eq "badmac") {
			print $s $hello . q({"v":2,"type":"auth","mac":") . ("0" x 64) . q("}) . "\n";
		}
		elsif ($mode eq "long") { print $s $hello . ("x" x 20000) . "\n"; }
		elsif ($mode eq "truncated") { print $s q({"v":2,"type":"hel); }
		my $buf;
		1 while sysread($s, $buf, 4096); # until the daemon closes it
	' "$1" "$RXE_IP0:7471" "$2"
}
rss0=$(awk '/^VmRSS/ {print $2}' "/proc/$PID_jd0/status")
samples0=$(st jd1 .controller.reference.samples)
hostile "$RXE_IP0" garbage    # not a configured peer's address
for mode in garbage badmac long truncated; do
	hostile "$RXE_IP1" "$mode"
done
hostile "$RXE_IP1" flood
wait_for jd0 '.controller.reference.channel.refused.protocol >= 4' 15
st jd0 .controller.reference.channel.refused >"$JV_OUT/refused.json"
cat "$JV_OUT/refused.json"
expect_eq hostile.refused.counted "true true true" \
	"$(jq -r '"\(.address >= 1) \(.limit >= 150) \(.protocol >= 4)"' "$JV_OUT/refused.json")"
expect_eq hostile.jd0.log yes "$(grep -q 'authentication failed' "$JV_OUT/jd0.log" && echo yes)"
wait_for jd1 ".controller.reference.state == \"up\" and .controller.reference.samples > $samples0 + 100" 20
expect_eq hostile.peer.unaffected "up true AES-256-GCM" \
	"$(st jd1 '"\(.controller.reference.state) \(.controller.reference.channel.authenticated) \(.controller.reference.channel.encryption)"')"
rss1=$(awk '/^VmRSS/ {print $2}' "/proc/$PID_jd0/status")
echo "hostile peer: jd0 RSS $rss0 -> $rss1 kB"
expect_eq hostile.rss.bounded yes \
	"$( ((rss1 < rss0 + rss0 / 4 + 1024)) && echo yes || echo "no: $rss0 -> $rss1 kB")"

# ---- calibration: jd0's "auto" MaxRate becomes the measured one, kept across a restart
ctl jd0 calibrate >"$JV_OUT/calibrate.txt" 2>&1
expect_eq calibrate.ok 0 $?
cat "$JV_OUT/calibrate.txt"
expect_eq calibrate.source "calibrated yes" \
	"$(st jd0 '"\(.controller.max_rate_source) \(if .controller.max_rate_bps > 1000000 and .controller.max_rate_bps < 100000000000 then "yes" else "no" end)"')"
expect_eq calibrate.state.file yes \
	"$(jq -e '.devices[0].max_rate_bps > 0' "$JV_OUT/jd0-state/calibration.json" >/dev/null && echo yes)"
expect_eq calibrate.nobody.denied 1 "$(setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$C" -s /run/jd0/justitiad.sock calibrate >/dev/null 2>&1; echo $?)"
kill -TERM "$PID_jd0"
wait "$PID_jd0"
start_daemon jd0
expect_eq calibrate.loaded.at.start calibrated "$(st jd0 .controller.max_rate_source)"
wait_for jd0 '.controller.reference.state == "up"' 30

# ---- flows on jd1: a latency flow and an (active, light) bandwidth flow,
# for as long as the checks below take on a slow guest (they are killed at
# the end; CI once saw the 150 s a previous version gave them run out)
$NICE timeout 500 ib_send_lat -d "$RXE_DEV0" -x "$RXE_GID" -p 18801 -D 400 \
	>"$JV_OUT/slat.srv" 2>&1 &
SLAT_SRV=$!
wait_port 18801
env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET=/run/jd1/justitiad.sock JUSTITIA_CLASS=lat \
	$NICE timeout 500 ib_send_lat -d "$RXE_DEV1" -x "$RXE_GID" -p 18801 -D 400 \
	"$RXE_IP0" >"$JV_OUT/slat.cli" 2>&1 &
SLAT_CLI=$!
"$R" /run/jd1/justitiad.sock 1 -c bandwidth -d "$RXE_DEV1" -a -t 400 >"$JV_OUT/bw.out" 2>&1 &
BW=$!
wait_for jd1 '.controller.flows.latency == 1 and .controller.flows.bandwidth == 1' 20
expect_eq flows.counted "1 1 latency" \
	"$(st jd1 '"\(.controller.flows.latency) \(.controller.flows.bandwidth) \(.counts.latency > 0 | if . then "latency" else "none" end)"')"
ctl jd1 --json flows >"$JV_OUT/flows-before.json"
ctl jd1 flows >"$JV_OUT/flows-before.txt"
expect_eq bw.flow.paced yes \
	"$(jq -r '.flows[] | select(.comm == "flowreg") | if .paced_rate_bps > 0 and .active then "yes" else "no: \(.paced_rate_bps) \(.active)" end' "$JV_OUT/flows-before.json")"
expect_eq latency.flow.unpaced "null" \
	"$(jq -r '[.flows[] | select(.class == "latency")][0].paced_rate_bps' "$JV_OUT/flows-before.json")"
# (B counts the flow while its counters grow: TCG may starve flowreg for a while)
wait_for jd1 ".controller.floor_bps == $((MAXRATE / 2))" 10
floor=$(st jd1 .controller.floor_bps)
expect_eq floor.half "$((MAXRATE / 2))" "$floor"

# load LABEL SECONDS PORT: 1 MB WRITEs rxe1 -> rxe0 without the shim (not
# paced), in the background ($LOAD_SRV, $LOAD_CLI)
load() {
	$NICE timeout 120 ib_write_bw -d "$RXE_DEV0" -x "$RXE_GID" -p "$3" -s 1048576 -D "$2" \
		>"$JV_OUT/$1.srv" 2>&1 &
	LOAD_SRV=$!
	wait_port "$3"
	$NICE timeout 120 ib_write_bw -d "$RXE_DEV1" -x "$RXE_GID" -p "$3" -s 1048576 -D "$2" \
		"$RXE_IP0" >"$JV_OUT/$1.cli" 2>&1 &
	LOAD_CLI=$!
}

# trace99 FILE: append jd1's Current99 trace ("t_ms ns": one per 25 ms over
# its last 5 s) to FILE
trace99() { st jd1 '.controller.trace[] | select(.current99_ns != null) | "\(.t_ms) \(.current99_ns)"' >>"$1"; }
# dist FILE [FROM_MS]: "P50 P90 MAX N" of the Current99 values in FILE
# (each 25 ms once), from FROM_MS of jd1's clock
dist() {
	sort -n -u -k1,1 "$1" | awk -v f="${2:-0}" '$1 > f { print $2 }' | sort -n |
		awk '{ v[NR] = $1 } END { if (!NR) { print 0, 0, 0, 0; exit }
			print v[int((NR + 1) / 2)], v[int((NR * 9 + 9) / 10)], v[NR], NR }'
}

# the target sits between the p99 without load (the latency flow runs) and
# the p99 under load, both measured here (TCG's timing varies from run to
# run): the medians of jd1's Current99 over 5 s without load and over the
# burst, from its trace.  (One status read per 0.3 s took the highest: a
# spike of the burst, 78 ms where the load then showed at most 9 ms, put the
# target above everything the load showed.)
: >"$JV_OUT/trace-idle.txt"
: >"$JV_OUT/trace-burst.txt"
sleep 5
trace99 "$JV_OUT/trace-idle.txt"
read -r idle99 idle90 idlemax nidle <<<"$(dist "$JV_OUT/trace-idle.txt")"
t_burst=$(st jd1 '.controller.trace[-1].t_ms')
load burst 8 18803
while kill -0 "$LOAD_CLI" 2>/dev/null; do
	trace99 "$JV_OUT/trace-burst.txt"
	sleep 2
done
trace99 "$JV_OUT/trace-burst.txt"
wait $LOAD_CLI
wait $LOAD_SRV
read -r busy99 busy90 busymax nbusy <<<"$(dist "$JV_OUT/trace-burst.txt" "$t_burst")"
target_us=$(((idle99 + busy99) / 2000))
echo "Current99 without load: median ${idle99} p90 ${idle90} max ${idlemax} ns (${nidle} x 25 ms);" \
	"with load: median ${busy99} p90 ${busy90} max ${busymax} ns (${nbusy} x 25 ms): target ${target_us} us"
# (judged on the p90s: the burst's trace also holds the seconds ib_write_bw
# takes to connect, no load yet, and session 24's rehearsal had 896 values
# for an 8 s burst: median 0.96 -> 1.43 ms, p90 1.14 -> 28.2 ms)
expect_eq load.shows.in.p99 yes \
	"$([ "$busy90" -gt $((idle90 * 3 / 2)) ] && echo yes || echo "no: p90 $idle90 -> $busy90")"
ctl jd1 set target "$target_us" >/dev/null
expect_eq set.target "$((target_us * 1000))" "$(st jd1 .controller.target99_ns)"
# (the burst may have cost a halving or two: additive increase climbs back).
# Judged on the trace's highest SafeUtil over its last 5 s, not on one
# status: next to the busy-polling latency flow a reference probe now and
# then waits for a vCPU long enough to halve again, and a status read at that
# moment shows the climb, not its top.
wait_for jd1 "([.controller.trace[].max_bps] | max) == $MAXRATE" 45
expect_eq before.load.at.max "$MAXRATE" "$(st jd1 '[.controller.trace[].max_bps] | max')"

# ---- artificial load: 1 MB WRITEs rxe1 -> rxe0 without the shim (not paced)
dec0=$(st jd1 .controller.decreases)
load load 15 18802
: >"$JV_OUT/trace-load.jsonl"
admitted=
for i in $(seq 60); do
	ctl jd1 --json status | jq -c '.controller | {t: .trace[-1].t_ms, su: .safe_util_bps, c99: .current99_ns, m: .measured_ns, dec: .decreases, trace: .trace}' \
		>>"$JV_OUT/trace-load.jsonl"
	# a latency flow that registers now, while the target is missed (the
	# measurement is noisy: try again until one registers while it is).
	# "violating" covers the last 100 ms only, and starting flowreg in the
	# loaded guest can take longer: a decrease since the last look counts
	# too (one rehearsal's 60 looks found no registration in time)
	dec_now=$(st jd1 .controller.decreases)
	if [ -z "$admitted" ] && [ "$(st jd1 ".controller.reference.state == \"up\" and (.controller.violating or .controller.decreases > ${dec_seen:-$dec0})")" = true ]; then
		rm -f "$JV_OUT/admit.json"
		"$R" /run/jd1/justitiad.sock 1 -c latency -d "$RXE_DEV1" -t 5 -r "$JV_OUT/admit.json" \
			>/dev/null 2>&1 &
		ADMIT=$!
		for _ in $(seq 40); do [ -s "$JV_OUT/admit.json" ] && break; sleep 0.05; done
		if grep -q 'exceeds the target' "$JV_OUT/admit.json" 2>/dev/null; then
			ctl jd1 flows >"$JV_OUT/flows-admit.txt"
			admitted=yes
		else
			kill $ADMIT 2>/dev/null
			wait $ADMIT
		fi
	fi
	dec_seen=$dec_now
	kill -0 $LOAD_CLI 2>/dev/null || break
	sleep 0.25
done
wait $LOAD_CLI
expect_eq load.client.rc 0 $?
wait $LOAD_SRV
load_end=$(st jd1 '.controller.trace[-1].t_ms')
min_su=$(jq -s '[.[].trace[].min_bps] | min' "$JV_OUT/trace-load.jsonl")
# the floor of each 25 ms interval: (B+T)/(L+B+T) MaxRate with the counts of
# that moment (the admission flow raises L for a while)
below=$(jq -s '[.[].trace[] | select(.min_bps < .floor_bps)] | length' "$JV_OUT/trace-load.jsonl")
max99=$(jq -s '[.[] | .c99 // 0, .m // 0] | max' "$JV_OUT/trace-load.jsonl")
dec1=$(jq -s '[.[].dec] | max' "$JV_OUT/trace-load.jsonl")
echo "during the load: max latency measured ${max99} ns (target $((target_us * 1000))), min SafeUtil ${min_su}, $((dec1 - dec0)) decreases"
expect_eq load.violates.target yes "$([ "$max99" -gt $((target_us * 1000)) ] && [ "$dec1" -gt "$dec0" ] && echo yes || echo "no: $max99, $dec0 -> $dec1 decreases")"
expect_eq load.halves yes "$([ "$min_su" -le $((MAXRATE / 2)) ] && echo yes || echo "no: $min_su")"
expect_eq load.floor.kept 0 "$below"
expect_eq admission.warning yes \
	"$(jq -r '.warning // ""' "$JV_OUT/admit.json" 2>/dev/null | grep -q 'exceeds the target' && echo yes || echo "no: $(cat "$JV_OUT/admit.json" 2>/dev/null)")"
expect_eq admission.warn.column yes \
	"$(grep latency "$JV_OUT/flows-admit.txt" 2>/dev/null | grep -q 'exceeds the target' && echo yes || echo no)"
[ -n "$admitted" ] && wait $ADMIT

# ---- the load is gone: SafeUtil climbs back to MaxRate
recovered=no
for _ in $(seq 60); do
	if [ "$(st jd1 "[.controller.trace[] | select(.t_ms > $load_end and .max_bps == $MAXRATE)] | length > 0")" = true ]; then
		recovered=yes
		break
	fi
	sleep 0.5
done
ctl jd1 --json status >"$JV_OUT/status-after.json"
expect_eq load.gone.recovers yes "$recovered"
expect_eq latency.flow.still.there 1 "$(jq -r .controller.flows.latency "$JV_OUT/status-after.json")"
expect_eq mode.normal normal "$(jq -r .controller.mode "$JV_OUT/status-after.json")"

# ---- the shared memory says the same (a shim's view): flags and chunk
expect_eq global.latency.chunk "5120" "$(jq -r .controller.chunk_bytes "$JV_OUT/status-after.json")"

kill $BW $SLAT_CLI $SLAT_SRV 2>/dev/null
wait $BW $SLAT_CLI $SLAT_SRV 2>/dev/null
ctl jd1 --json status >"$JV_OUT/status-end.json"
kill -TERM "$PID_jd0" "$PID_jd1"
wait "$PID_jd0"
rc0=$?
wait "$PID_jd1"
expect_eq daemons.exit.clean "0 0" "$rc0 $?"
grep -h "warning\|error" "$JV_OUT/jd0.log" "$JV_OUT/jd1.log" | head -20
jv_summary
