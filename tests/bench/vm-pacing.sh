#!/bin/bash
# vm-pacing.sh: what pacing costs and what it shares, plain vs Justitia, in
# one boot of the Soft-RoCE guest (make bench runs it through justitia-vm
# --rxe).  Numbers only, never pass/fail.  Two daemons as on two hosts
# (default pace_mode "auto", chunk_default 1 MiB, chunk_latency 5 KiB),
# every perftest process preloaded in the Justitia runs.  Each setting
# alternates plain / Justitia ROUNDS times so a slow moment of the emulated
# host hurts both alike; medians and their ratio are printed.
#
#   lone      1 MiB ib_write_bw, ib_read_bw, ib_send_bw; qperf rc_bw and
#             rc_rdma_write_bw (64 KiB): no latency flow (pace mode off)
#             SHIM2 (a libjustitia.so build): a third setting each round,
#             the same Justitia run with SHIM2 preloaded instead (an A/B of
#             two shims in one boot); each row is followed by its rounds'
#             values
#   latency   1 MiB ib_write_bw while a latency flow is registered (mode
#             protect, MaxRate = the lone plain ib_write_bw's rate): achieved
#             rate / the mean rate the daemon granted, both in 10^6 B/s
#             (perftest's "MB/sec" is MiB/s: converted; before 2026-11-26
#             this row compared MiB/s with 10^6 B/s, 4.6% short), and the
#             median of each round's fill, and of the grant its backlog
#             could not bank (JUSTITIA_STATS tokens_lost_ns) over the run
# The daemons are each other's peers (reference flow every 5 ms, split-QP
# lookups), as on two hosts.
#   two       1 MiB + 64 KiB ib_write_bw at once (mode share): each and sum
#   tput      64 B ib_write_bw (throughput) next to a 1 MiB elephant: ops/s;
#             with Justitia the 64 B flow is JUSTITIA_CLASS=tput and the
#             daemons' max_ops is what a lone 64 B flow did plain (TokenOps
#             then values an operation at what the NIC really does), as
#             max_rate is for bytes
#             DAEMON2 (a justitiad build): a third setting each round, the
#             same Justitia run under DAEMON2's daemons (an A/B of two
#             daemons in one boot); DAEMON2_MAX_OPS: their max_ops instead
#             (with DAEMON2=build/justitiad, an A/B of the setting)
#   cpu       the lone 1 MiB ib_write_bw client's CPU (user + system, the
#             shim's progress thread included) per MB moved
# After the latency, two and tput parts, anchors: the same workload paced by
# the application itself (build/justbench's rate=, no shim, no daemon) in
# the same boot, so that what Justitia loses can be told from what pacing
# on Soft-RoCE (the guest's CPUs are the "NIC") costs anyway:
#   latency   the elephant paced at the median grant g, in 5 KiB messages
#             (Justitia's latency chunk, 8 in flight) and in whole 1 MiB
#             messages: achieved / g each; an unpaced 5 KiB flow (what rxe
#             carries in 5 KiB messages); Justitia's fill over the 5 KiB
#             anchor's fill
#   two       1 MiB + 64 KiB justbench flows, unpaced, then each paced at
#             half the plain perftest aggregate: each, sum, shares; the
#             paced sum over the plain perftest one, Justitia's over it
#   tput      in each round after plain and Justitia: the same 64 B
#             ib_write_bw, plain, next to a 1 MiB justbench elephant (window
#             128, busy polling) paced at what Justitia's elephant carried
#             in that round, then unpaced (the gain ideal pacing of the
#             elephant gives this very flow); after all rounds,
#             a 64 B justbench flow next to a 1 MiB elephant unpaced, then
#             paced at what Justitia's elephant carried: Mpps of each
# Flows that compete start together: both servers listen first, then both
# clients start (otherwise the first runs alone for a second or two and the
# "aggregate" is partly a lone flow's).  PARTS selects parts (default all:
# "lone latency two tput cpu"); ROUNDS (default 5) and SECS (default 5);
# SHARE_SECS (default SECS, at least 15) for the two and tput parts: share
# mode's capacity settles in a few seconds (it starts at MaxRate and probes
# from there), so 5 s rounds measured mostly its start (the 64 B flow 0.47
# of plain at 5 s, 0.76-0.82 at 15-20 s in session 16's boots).  The
# latency part's Justitia rounds run SHARE_SECS too: perftest's -D rate
# covers its run but the first and the last 2 s (its --margin), so a 5 s
# round's was one second's, a sixth of it lost to a single stall of the
# guest; the grant is averaged over the same window.
set -u
cd "$(dirname "$0")/../.."
C=$PWD/build/justctl
R=$PWD/build/tests/flowreg
SHIM=$PWD/build/libjustitia.so
O=$(realpath -m "${BENCH_OUT:-/tmp/vm-pacing}") # absolute: the daemons want absolute paths
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-5}
SHARE_SECS=${SHARE_SECS:-$((SECS > 15 ? SECS : 15))}
PARTS=${PARTS:-lone latency two tput cpu}
part() { [[ " $PARTS " == *" $1 "* ]]; }
mkdir -p "$O"
JV_RESULTS=/dev/null JV_OUT=$O . tests/vm/lib.sh

# each other's peer (authenticated reference flow, split-QP lookups), as
# two hosts would be; RefPeriod 5 ms as in 55-isolation
head -c 32 /dev/urandom | base64 >"$O/secret"
chmod 600 "$O/secret"
# daemons_up [DEVICE_EXTRA]: both daemons, DEVICE_EXTRA added to their
# device object (e.g. '"max_ops": 30000')
daemons_up() {
	local n dev me peer
	for n in 0 1; do
		dev=RXE_DEV$n
		me=RXE_IP$n peer=RXE_IP$((1 - n))
		cat >"$O/jd$n.json" <<EOT
{ "runtime_dir": "/run/jp$n", "log_level": "${BENCH_LOG:-warn}", "debug": [ ${BENCH_DEBUG:-} ],
  "qpwatch": false,
  "devices": [ { "name": "${!dev}", "gid_index": $RXE_GID ${1:+, $1} } ],
  "reference": { "listen_address": "${!me}", "period_us": 5000,
                 "peers": [ { "address": "${!peer}", "device": "${!dev}" } ],
                 "secret_file": "$O/secret" } }
EOT
		jv_daemon_start "$O/jd$n.json" /run/jp$n/justitiad.sock || exit 1
		eval "JD$n=$JD"
	done
}
daemons_down() {
	kill -TERM "$JD0" "$JD1" 2>/dev/null
	wait "$JD0" "$JD1" 2>/dev/null
}
daemons_up

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }
# mul A B: A x B (e.g. perftest's MiB/s x 1.048576 = 10^6 B/s)
mul() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a * b }'; }

# pre SIDE MODE: the command prefix of one side (0 server, 1 client);
# $XENV (VAR=VALUE...) is added under Justitia
pre() {
	[ "$2" = plain ] && return
	echo "env LD_PRELOAD=$SHIM JUSTITIA_SOCKET=/run/jp$1/justitiad.sock ${XENV:-}"
}

# next_port: the next of 900 listening ports, in turn from a random start
# (a random port per server could give a pair's two servers the same
# one).  Sets PORT.
PORT_SEQ=$((RANDOM % 900))
next_port() {
	PORT_SEQ=$(((PORT_SEQ + 1) % 900))
	PORT=$((19000 + PORT_SEQ))
}

# srv TOOL SIZE MODE TAG [EXTRA...]: a perftest server on rxe0 in the
# background, listening when this returns.  Sets PF_SRV PF_PORT.
srv() {
	local tool=$1 size=$2 mode=$3 tag=$4
	shift 4
	next_port
	PF_PORT=$PORT
	timeout $((SECS + 60)) $(pre 0 "$mode") $tool -d "$RXE_DEV0" -x "$RXE_GID" -p $PF_PORT \
		-s "$size" -D "$SECS" "$@" >"$O/$tag.srv" 2>&1 &
	PF_SRV=$!
	wait_port $PF_PORT 30 $PF_SRV >/dev/null 2>&1
}
# cli TOOL SIZE MODE TAG PORT [EXTRA...]: its client on rxe1 in the
# background; output in $O/TAG.cli, its CPU seconds (user + system, all its
# threads) in $O/TAG.cpu.  Sets PF_CLI.
cli() {
	local tool=$1 size=$2 mode=$3 tag=$4 port=$5
	shift 5
	(
		timeout $((SECS + 60)) $(pre 1 "$mode") $tool -d "$RXE_DEV1" -x "$RXE_GID" \
			-p $port -s "$size" -D "$SECS" "$@" "$RXE_IP0" >"$O/$tag.cli" 2>&1
		# (times itself, not in a pipeline: a pipeline's subshell has
		# no children)
		times >"$O/$tag.times"
		awk 'NR == 2 { u = $1; s = $2; gsub(/[ms]/, " ", u); gsub(/[ms]/, " ", s)
			split(u, a, " "); split(s, b, " "); print a[1] * 60 + a[2] + b[1] * 60 + b[2] }' \
			"$O/$tag.times" >"$O/$tag.cpu"
	) &
	PF_CLI=$!
}
# perf TOOL SIZE MODE TAG [EXTRA...]: one perftest pair, rxe1 -> rxe0.
perf() {
	local tool=$1 size=$2 mode=$3 tag=$4
	shift 4
	srv "$tool" "$size" "$mode" "$tag" "$@"
	cli "$tool" "$size" "$mode" "$tag" $PF_PORT "$@"
}
# col TAG SIZE N: column N of perftest's result line (4: MB/s, 5: Mpps)
col() { awk -v s="$2" -v c="$3" '$1 == s { print $c; ok = 1 } END { if (!ok) print 0 }' "$O/$1.cli"; }

one() { # TOOL SIZE MODE: MB/s of a lone flow
	perf "$1" "$2" "$3" lone
	wait $PF_CLI
	wait $PF_SRV
	col lone "$2" 4
}

qperf_one() { # TEST MODE: MB/s
	local srv out
	$(pre 0 "$2") qperf >/dev/null 2>&1 &
	srv=$!
	sleep 1
	out=$(timeout $((SECS + 30)) $(pre 1 "$2") qperf -cm1 -t "$SECS" -m 64K "$RXE_IP0" "$1" 2>&1)
	kill $srv 2>/dev/null
	wait $srv 2>/dev/null
	echo "$out" | awk '/bw *=/ { v = $3; u = $4; if (u ~ /^GB/) v *= 1000; if (u ~ /^KB/) v /= 1000; print v; ok = 1 } END { if (!ok) print 0 }'
}

# ---- the anchors: justbench, no shim, no daemon (the daemons stay up and
# probe each other, as in the Justitia rounds, but nothing registers).
# jb TAG FLOW...: a justbench server on rxe0, then its client on rxe1 with
# FLOWs (justbench flow specifications) for SECS s; all the flows start
# together; the client's JSON report in $O/TAG.json
JB=$PWD/build/justbench
# jb_srv TAG: a justbench server on rxe0, listening when this returns.
# Sets JB_SRV JB_PORT.
jb_srv() {
	next_port
	JB_PORT=$PORT
	timeout $((SECS + 60)) "$JB" server -p $JB_PORT -d "$RXE_DEV0" -g "$RXE_GID" \
		>"$O/$1.srv" 2>&1 &
	JB_SRV=$!
	wait_port $JB_PORT 30 $JB_SRV >/dev/null 2>&1
}
# jb_cli TAG PORT FLOW...: its client on rxe1, in the foreground
jb_cli() {
	local tag=$1 port=$2
	shift 2
	timeout $((SECS + 60)) "$JB" client "$RXE_IP0" -p $port -d "$RXE_DEV1" -g "$RXE_GID" \
		-t "$SECS" --json -o "$O/$tag.json" "$@" >"$O/$tag.cli" 2>&1
}
jb() {
	local tag=$1
	shift
	jb_srv "$tag"
	jb_cli "$tag" $JB_PORT "$@"
	wait $JB_SRV
}
# jbv TAG NAME KEY: flow NAME of $O/TAG.json: KEY mbs (10^6 B/s, bytes over
# its active time, first post to last completion), mibs (2^20 B/s, perftest's
# "MB/sec"), mops (millions of messages/s); 0 if it has none
jbv() {
	jq -r --arg n "$2" --arg k "$3" '[.flows[] | select(.name == $n)][0] // {} |
		if (.bytes // 0) > 0 and (.elapsed_ns // 0) > 0 then
			(if $k == "mops" then .mops elif $k == "mibs" then .bytes * 1e9 / .elapsed_ns / 1048576
			 else .bytes * 1e3 / .elapsed_ns end)
		else 0 end' "$O/$1.json" 2>/dev/null | awk -v k="$3" 'NF { printf (k == "mops" ? "%.4f\n" : "%.2f\n"), $1; ok = 1 } END { if (!ok) print 0 }'
}
anchor_head() { printf '%-34s %10s %10s %7s\n' "$1" "$2" "$3" "${4:-ratio}"; }

echo "== vm-pacing: $ROUNDS rounds of $SECS s ($SHARE_SECS s for two, tput and the latency part's Justitia rounds), plain then Justitia (mode auto)"
printf '%-34s %10s %10s %7s\n' setting plain justitia ratio
row() { printf '%-34s %10s %10s %7s\n' "$1" "$2" "$3" "$(ratio "$3" "$2")"; }

# lone flows (pace mode off); the lone plain ib_write_bw also sets MaxRate
# for the latency part
# lone_rows LABEL: the rows of one lone setting from $O/{p,j,o} (o: SHIM2's
# rounds), then every round's value
lone_rows() {
	row "$1" "$(median <"$O/p")" "$(median <"$O/j")"
	[ -n "${SHIM2:-}" ] && row "... SHIM2's shim" "$(median <"$O/p")" "$(median <"$O/o")"
	echo "(per round, plain / Justitia${SHIM2:+ / SHIM2}: $(paste -sd' ' "$O/p") / $(paste -sd' ' "$O/j")${SHIM2:+ / $(paste -sd' ' "$O/o")})"
}
for t in "ib_write_bw 1048576" "ib_read_bw 1048576" "ib_send_bw 1048576"; do
	set -- $t
	part lone || { [ "$1" = ib_write_bw ] && part latency; } || continue
	: >"$O/p"; : >"$O/j"; : >"$O/o"
	for _ in $(seq "$ROUNDS"); do
		one "$1" "$2" plain >>"$O/p"
		one "$1" "$2" justitia >>"$O/j"
		[ -n "${SHIM2:-}" ] && SHIM=$SHIM2 one "$1" "$2" justitia >>"$O/o"
	done
	lone_rows "lone $1 1M (MB/s)"
	[ "$1" = ib_write_bw ] && WRITE_PLAIN=$(median <"$O/p")
done
for t in rc_bw rc_rdma_write_bw; do
	part lone || continue
	: >"$O/p"; : >"$O/j"; : >"$O/o"
	for _ in $(seq "$ROUNDS"); do
		qperf_one $t plain >>"$O/p"
		qperf_one $t justitia >>"$O/j"
		[ -n "${SHIM2:-}" ] && SHIM=$SHIM2 qperf_one $t justitia >>"$O/o"
	done
	lone_rows "lone qperf $t 64K (MB/s)"
done

# ---- a latency flow registered: the elephant against its grant.
# MaxRate: what a lone 1 MiB ib_write_bw carried plain above (rxe's nominal
# 10 Gbit/s would grant the elephant far more than the link carries, and
# the row would measure nothing)
if part latency; then
# (perftest's "MB/sec" is MiB/s: its --help says "MiB=2^20 byte")
mr=$(awk -v b="${WRITE_PLAIN:-0}" 'BEGIN { printf "%d", b * 8 * 1.048576 }')
if ((mr > 0)); then
	for n in 0 1; do "$C" -s /run/jp$n/justitiad.sock set max-rate "${mr}Mbit" >/dev/null; done
fi
: >"$O/a"; : >"$O/g"; : >"$O/fl"; : >"$O/lost"
LSECS=$SHARE_SECS
for _ in $(seq "$ROUNDS"); do
	rm -f "$O"/lat-stats-*.json
	"$R" /run/jp1/justitiad.sock 1 -c latency -d "$RXE_DEV1" -t $((LSECS + 8)) >/dev/null 2>&1 &
	LAT=$!
	sleep 1
	SECS=$LSECS XENV="JUSTITIA_STATS=$O/lat-stats-%p.json" perf ib_write_bw 1048576 justitia lat
	# the grant follows SafeUtil: its mean, twice a second, over the
	# window perftest's rate covers (from 2 s in to 2 s before the end);
	# one justctl process samples, jq reads its lines afterwards (a
	# justctl and a jq started twice a second took the guest's CPUs,
	# which are the NIC, from the flow being measured)
	sleep 2
	"$C" -s /run/jp1/justitiad.sock -j watch -n 0.5 -c $(((LSECS - 4) * 2)) \
		>"$O/grant.json" 2>/dev/null
	g=$(jq -s '[.[] | [.flows[] | select(.comm == "ib_write_bw") | .paced_rate_bps // 0]
		| max // 0 | select(. > 0)] | if length > 0 then add / length | floor else 0 end' \
		"$O/grant.json" 2>/dev/null)
	g=${g:-0}
	wait $PF_CLI
	wait $PF_SRV
	kill $LAT 2>/dev/null
	wait $LAT 2>/dev/null
	# achieved and granted both in 10^6 B/s (perftest's MiB/s x
	# 1.048576), and the round's fill
	ar=$(mul "$(col lat 1048576 4)" 1.048576)
	echo "$ar" >>"$O/a"
	awk -v g="$g" 'BEGIN { printf "%.2f\n", g / 8e6 }' >>"$O/g"
	ratio "$ar" "$(awk -v g="$g" 'BEGIN { printf "%.2f", g / 8e6 }')" >>"$O/fl"
	echo >>"$O/fl"
	# the grant its backlog could not bank (libjustitia(7), tokens_lost_ns),
	# over the run's LSECS
	l=$(jq -s '[.[].qps[]?.tokens_lost_ns // 0] | add // 0' "$O"/lat-stats-*.json 2>/dev/null)
	awk -v l="${l:-0}" -v s="$LSECS" 'BEGIN { printf "%.3f\n", l / (s * 1e9) }' >>"$O/lost"
done
a=$(median <"$O/a")
g=$(median <"$O/g")
printf '%-34s %10s %10s %7s\n' "latency flow: achieved / granted" "$a" "$g" "$(ratio "$a" "$g")"
printf '%-34s %10s %10s %7s\n' "... each round's fill, median" "" "" "$(grep -v '^-' "$O/fl" | median)"
printf '%-34s %10s %10s %7s\n' "... grant lost, late drains / run" "" "" "$(median <"$O/lost")"
echo "(10^6 B/s: perftest's MiB/s x 1.048576, the daemon's grant / 8e6)"
LAT_CPU=$(awk -v c="$(cat "$O/lat.cpu")" -v b="$(mul "$a" 0.953674)" -v s="$LSECS" \
	'BEGIN { if (b > 0) printf "%.2f", c * 1000 / (b * s); else print 0 }')
echo "(MaxRate ${mr} Mbit/s, the lone ib_write_bw's plain rate; below, with no
latency flow, it only seeds share mode's C when the flows moved nothing yet)"

# ---- the latency part's anchors, ideal pacing: the application paces its
# own elephant at the rate Justitia granted (the median grant g above), no
# shim, no daemon.  Columns: achieved, target (g), their ratio, all in
# 10^6 B/s, as the rows above (perftest's "MB/sec" is MiB/s, converted).
#   anchor 5 KiB x8   bw:write:5K:window=8, rate g, busy polling: the
#                     elephant split in Justitia's latency chunk (5 KiB),
#                     8 in flight as the shim's window, paced by itself
#   anchor 1 MiB      whole 1 MiB messages (window 128, perftest's tx
#                     depth) paced at g
#   unpaced 5 KiB x8  the 5 KiB flow with no rate: what rxe carries in
#                     5 KiB messages (is g reachable in them at all?)
#   Justitia / 5 KiB anchor: Justitia's fill (in 10^6 B/s) over the 5 KiB
#                     anchor's; 1 = as good as pacing in the application
# Each round runs the three one after the other; medians over ROUNDS.
grate=$(awk -v g="$g" 'BEGIN { printf "%d", g * 8e6 }')
if ((grate >= 1000)); then
	: >"$O/n5"; : >"$O/n1"; : >"$O/u5"
	for _ in $(seq "$ROUNDS"); do
		jb an5 "bw:write:5K:window=8,rate=$grate,poll=busy,name=a5"
		jbv an5 a5 mbs >>"$O/n5"
		jb an1 "bw:write:1M:window=128,rate=$grate,poll=busy,name=a1"
		jbv an1 a1 mbs >>"$O/n1"
		jb un5 "bw:write:5K:window=8,poll=busy,name=u5"
		jbv un5 u5 mbs >>"$O/u5"
	done
	n5=$(median <"$O/n5") n1=$(median <"$O/n1") u5=$(median <"$O/u5")
	aj=$a
	anchor_head "latency anchors (no shim/daemon)" achieved target
	printf '%-34s %10s %10s %7s\n' "anchor 5 KiB x8 at g (MB/s)" "$n5" "$g" "$(ratio "$n5" "$g")"
	printf '%-34s %10s %10s %7s\n' "anchor 1 MiB at g (MB/s)" "$n1" "$g" "$(ratio "$n1" "$g")"
	printf '%-34s %10s %10s %7s\n' "unpaced 5 KiB x8 (MB/s)" "$u5" "$g" "$(ratio "$u5" "$g")"
	printf '%-34s %10s %10s %7s\n' "Justitia / 5 KiB anchor fill" "$(ratio "$aj" "$g")" \
		"$(ratio "$n5" "$g")" "$(ratio "$aj" "$n5")"
	echo "(g = $grate bit/s, the median grant; 10^6 B/s throughout these rows)"
fi
fi

# pair BIG_SIZE SMALL_SIZE MODE TAG_BIG TAG_SMALL [SMALL_XENV]: two
# ib_write_bw at once, started together (both servers listen, then both
# clients start); SMALL_XENV: the second flow's $XENV.  (BENCH_LOG=debug
# BENCH_DEBUG='"ctrl"' log the controller's windows in $O/jd*.log.)
pair() {
	local s1 s2 p1 p2 c1
	srv ib_write_bw "$1" "$3" "$4"; s1=$PF_SRV p1=$PF_PORT
	XENV=${6:-} srv ib_write_bw "$2" "$3" "$5"; s2=$PF_SRV p2=$PF_PORT
	cli ib_write_bw "$1" "$3" "$4" $p1; c1=$PF_CLI
	XENV=${6:-} cli ib_write_bw "$2" "$3" "$5" $p2
	wait $c1 $PF_CLI
	wait $s1 $s2
}

# anchor_pair TAG_SMALL TAG_JB FLOW: a plain 64 B ib_write_bw (as pair's
# small flow) next to a justbench client with FLOW (the elephant, no shim),
# started together
anchor_pair() {
	local s1 p1 c1
	srv ib_write_bw 64 plain "$1"; s1=$PF_SRV p1=$PF_PORT
	jb_srv "$2"
	jb_cli "$2" $JB_PORT "$3" &
	c1=$!
	cli ib_write_bw 64 plain "$1" $p1
	wait $c1 $PF_CLI
	wait $s1 $JB_SRV
}

# pair_record P BIG SMALL: one round of two flows into $O/P{b,s,a,f}: each
# rate, their sum, and the round's fairness (the smaller over the larger)
pair_record() {
	echo "$2" >>"$O/$1b"
	echo "$3" >>"$O/$1s"
	awk -v a="$2" -v b="$3" 'BEGIN { print a + b }' >>"$O/$1a"
	awk -v a="$2" -v b="$3" 'BEGIN { if (a > 0 && b > 0) print (a < b ? a / b : b / a); else print 0 }' >>"$O/$1f"
}

# the two and tput parts run SHARE_SECS rounds (the helpers read SECS)
PART_SECS=$SECS
SECS=$SHARE_SECS

# ---- two bandwidth flows, 1 MiB and 64 KiB: shares and aggregate
if part two; then
: >"$O/pb"; : >"$O/ps"; : >"$O/jb"; : >"$O/js"; : >"$O/pa"; : >"$O/ja"; : >"$O/pf"; : >"$O/jf"
for _ in $(seq "$ROUNDS"); do
	for m in plain justitia; do
		pair 1048576 65536 $m big small
		b=$(col big 1048576 4) s=$(col small 65536 4)
		k=${m:0:1}
		pair_record "$k" "$b" "$s"
	done
done
row "two flows: 1 MiB (MB/s)" "$(median <"$O/pb")" "$(median <"$O/jb")"
row "two flows: 64 KiB (MB/s)" "$(median <"$O/ps")" "$(median <"$O/js")"
row "two flows: aggregate (MB/s)" "$(median <"$O/pa")" "$(median <"$O/ja")"
printf '%-34s %10s %10s\n' "two flows: smaller / larger share" "$(median <"$O/pf")" "$(median <"$O/jf")"

# ---- the two part's anchors: the same two flows from one justbench client
# (1 MiB and 64 KiB WRITEs, a QP and a thread each, window 128 as perftest's
# tx depth, busy polling as perftest), no shim, no daemon, started together;
# unpaced, then each paced by itself at half the plain perftest aggregate
# above (the fair split of what the two carry plain), alternating.  MiB/s as
# perftest.  Columns: unpaced, paced, paced / unpaced; then the paced
# aggregate against the plain perftest one (what ideal pacing at the fair
# share keeps of it; compare Justitia's ratio above).
half=$(awk -v p="$(median <"$O/pa")" 'BEGIN { printf "%d", p * 1048576 * 8 / 2 }')
if ((half >= 1000)); then
	: >"$O/ub"; : >"$O/us"; : >"$O/ua"; : >"$O/uf"
	: >"$O/qb"; : >"$O/qs"; : >"$O/qa"; : >"$O/qf"
	for _ in $(seq "$ROUNDS"); do
		for m in u q; do
			r=
			[ $m = q ] && r=",rate=$half"
			jb two$m "bw:write:1M:window=128,poll=busy,name=big$r" \
				"bw:write:64K:window=128,poll=busy,name=small$r"
			b=$(jbv two$m big mibs) s=$(jbv two$m small mibs)
			pair_record "$m" "$b" "$s"
		done
	done
	anchor_head "two anchors (justbench, no shim)" unpaced paced
	row "anchor two: 1 MiB (MiB/s)" "$(median <"$O/ub")" "$(median <"$O/qb")"
	row "anchor two: 64 KiB (MiB/s)" "$(median <"$O/us")" "$(median <"$O/qs")"
	row "anchor two: aggregate (MiB/s)" "$(median <"$O/ua")" "$(median <"$O/qa")"
	printf '%-34s %10s %10s\n' "anchor two: smaller / larger share" "$(median <"$O/uf")" "$(median <"$O/qf")"
	anchor_head "" "plain" "paced"
	row "paced aggregate / plain perftest" "$(median <"$O/pa")" "$(median <"$O/qa")"
	anchor_head "" "paced" "justitia"
	row "Justitia aggregate / paced anchor" "$(median <"$O/qa")" "$(median <"$O/ja")"
	echo "(each anchor flow paced at $half bit/s, half the plain perftest aggregate)"
fi
fi

# ---- a 64 B throughput flow next to a 1 MiB elephant
if part tput; then
# what a lone 64 B flow does, plain: the daemons' max_ops
: >"$O/p"
for _ in $(seq 3); do
	SECS=$PART_SECS one ib_write_bw 64 plain >/dev/null
	col lone 64 5 >>"$O/p"
done
mops=$(awk -v m="$(median <"$O/p")" 'BEGIN { printf "%d", m * 1e6 }')
# and max_rate: what a lone 1 MiB flow does plain (the latency part's, or
# measured here).  TokenOps values an operation at max_rate / max_ops: with
# rxe's nominal 10 Gbit/s against a measured max_ops, the elephant's real
# 0.3 Gbit/s looks like a few percent of its share, it is judged limited by
# itself and never paced, and its queue in rxe starves the 64 B flow (0.28
# of plain in a boot that ran this part alone)
if [ -z "${mr:-}" ]; then
	: >"$O/w"
	for _ in $(seq 3); do
		SECS=$PART_SECS one ib_write_bw 1048576 plain >>"$O/w"
	done
	mr=$(awk -v b="$(median <"$O/w")" 'BEGIN { printf "%d", b * 8 * 1.048576 }')
fi
tput_dev="\"max_ops\": $mops${mr:+, \"max_rate\": \"${mr}Mbit\"}"
tput_dev2="\"max_ops\": ${DAEMON2_MAX_OPS:-$mops}${mr:+, \"max_rate\": \"${mr}Mbit\"}"
daemons_down
daemons_up "$tput_dev"
: >"$O/p"; : >"$O/j"; : >"$O/pe"; : >"$O/je"; : >"$O/o"; : >"$O/oe"
: >"$O/a"; : >"$O/ae"; : >"$O/n"; : >"$O/ne"
for _ in $(seq "$ROUNDS"); do
	for m in plain justitia ${DAEMON2:+other}; do
		k=${m:0:1}
		if [ $m = other ]; then
			# the same round under DAEMON2's daemons (the shim alike)
			daemons_down
			JV_JUSTITIAD=$DAEMON2 daemons_up "$tput_dev2"
			m=justitia
		fi
		pair 1048576 64 $m ele tp JUSTITIA_CLASS=tput
		col tp 64 5 >>"$O/$k"
		col ele 1048576 4 >>"$O/${k}e"
		if [ "$k" = o ]; then
			daemons_down
			daemons_up "$tput_dev"
		fi
	done
	# the same round's anchors, the same 64 B ib_write_bw plain next
	# to a justbench elephant: paced by itself at what Justitia's
	# elephant carried in this round, then unpaced
	er=$(awk -v e="$(tail -n1 "$O/je")" 'BEGIN { printf "%d", e * 1048576 * 8 }')
	for k in a n; do
		r=
		[ $k = a ] && r=",rate=$er"
		((er >= 1000)) || [ $k = n ] || { echo 0 >>"$O/a"; echo 0 >>"$O/ae"; continue; }
		anchor_pair tp jele "bw:write:1M:window=128,poll=busy,name=ele$r"
		col tp 64 5 >>"$O/$k"
		jbv jele ele mibs >>"$O/${k}e"
	done
done
row "64 B next to elephant (Mpps)" "$(median <"$O/p")" "$(median <"$O/j")"
row "... the elephant (MB/s)" "$(median <"$O/pe")" "$(median <"$O/je")"
anchor_head "same 64 B flow, justbench elephant" plain "paced"
row "anchor: 64 B, elephant paced (Mpps)" "$(median <"$O/p")" "$(median <"$O/a")"
row "... the paced elephant (MiB/s)" "$(median <"$O/pe")" "$(median <"$O/ae")"
row "anchor: 64 B, elephant unpaced" "$(median <"$O/p")" "$(median <"$O/n")"
anchor_head "" "paced" "justitia"
row "Justitia 64 B / the paced anchor" "$(median <"$O/a")" "$(median <"$O/j")"
echo "(per round, plain / Justitia / paced anchor / unpaced anchor, 64 B: $(paste -sd' ' "$O/p") / $(paste -sd' ' "$O/j") / $(paste -sd' ' "$O/a") / $(paste -sd' ' "$O/n"))"
if [ -n "${DAEMON2:-}" ]; then
	row "64 B, DAEMON2's daemons (Mpps)" "$(median <"$O/p")" "$(median <"$O/o")"
	row "... the elephant (MB/s)" "$(median <"$O/pe")" "$(median <"$O/oe")"
	echo "(per round, plain / Justitia / DAEMON2: 64 B $(paste -sd' ' "$O/p") / $(paste -sd' ' "$O/j") / $(paste -sd' ' "$O/o"))"
fi
echo "(max_ops $mops, a lone 64 B flow's plain rate, and max_rate $mr Mbit/s, a lone 1 MiB
flow's; the 64 B flow JUSTITIA_CLASS=tput)"

# ---- the tput part's anchor: one justbench client, a 64 B WRITE flow
# (batches of 16, 8 in flight: perftest's 128 outstanding) next to a 1 MiB
# elephant (window 128, busy polling), no shim, no daemon; the elephant
# unpaced, then paced by itself at what Justitia's elephant carried above.
# Columns: unpaced elephant, paced elephant, ratio (the 64 B flow's gain
# from ideal pacing of the elephant; compare Justitia's ratio above).
erate=$(awk -v e="$(median <"$O/je")" 'BEGIN { printf "%d", e * 1048576 * 8 }')
if ((erate >= 1000)); then
	: >"$O/ut"; : >"$O/qt"; : >"$O/ue"; : >"$O/qe"
	for _ in $(seq "$ROUNDS"); do
		for m in u q; do
			r=
			[ $m = q ] && r=",rate=$erate"
			jb tp$m "tput:write:64:batch=16,window=8,name=tp" \
				"bw:write:1M:window=128,poll=busy,name=ele$r"
			jbv tp$m tp mops >>"$O/${m}t"
			jbv tp$m ele mibs >>"$O/${m}e"
		done
	done
	anchor_head "tput anchor (justbench, no shim)" unpaced paced
	row "anchor: 64 B next to elephant (Mpps)" "$(median <"$O/ut")" "$(median <"$O/qt")"
	row "anchor: ... the elephant (MiB/s)" "$(median <"$O/ue")" "$(median <"$O/qe")"
	echo "(the anchor's elephant paced at $erate bit/s, Justitia's elephant's median)"
fi
fi

SECS=$PART_SECS

# ---- CPU per MB: the lone 1 MiB ib_write_bw client (all its threads, the
# shim's progress thread included; Soft-RoCE's packet work in its system
# calls too, for plain and Justitia alike)
if part cpu; then
: >"$O/p"; : >"$O/j"
for _ in $(seq "$ROUNDS"); do
	for m in plain justitia; do
		perf ib_write_bw 1048576 $m cpu
		wait $PF_CLI
		wait $PF_SRV
		awk -v c="$(cat "$O/cpu.cpu")" -v b="$(col cpu 1048576 4)" \
			-v s="$SECS" 'BEGIN { if (b > 0) printf "%.2f\n", c * 1000 / (b * s); else print 0 }' \
			>>"$O/${m:0:1}"
	done
done
row "client CPU per MB moved (ms/MB)" "$(median <"$O/p")" "$(median <"$O/j")"
[ -n "${LAT_CPU:-}" ] &&
	printf '%-34s %10s %10s\n' "... split and paced, last latency round" "" "$LAT_CPU"
fi

daemons_down
