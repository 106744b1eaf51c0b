#!/bin/bash
# vm-isolation.sh: the isolation claim against ideal pacing, in one boot of
# the Soft-RoCE guest (make bench runs it through justitia-vm --rxe).
# Numbers only, never pass/fail.  A 2-byte ib_send_lat ping-pong (rxe1 ->
# rxe0, busy polling) in four settings (and two optional ones, below),
# ROUNDS times (default 5) in turn, so that a slow moment of the emulated
# host hurts every setting alike:
#
#   alone     the latency flow alone
#   plain     next to a 1 MiB ib_write_bw elephant (rxe1 -> rxe0), no
#             daemon, no shim
#   justitia  the same under Justitia: two daemons (each other's peer,
#             RefPeriod 5 ms, Target99 twice round 1's lone p99, MaxRate
#             what round 1's plain elephant left on the link), all four
#             perftest processes preloaded
#   anchor    ideal pacing, no daemon, no shim: the elephant is justbench
#             sending 8 KiB WRITEs, 4 in flight, paced by itself, polling
#             as the elephant does (busy next to ib_write_bw), at the rate
#             Justitia's elephant moved (its flow's bytes, justctl flows)
#             while the latency flow ran in the same round, times a scale
#             that puts as much on the wire as Justitia's round did:
#             justbench makes up no time it was not scheduled, and at the
#             bare rate carried 0.8 of it (2026-11-27); the scale starts at
#             1.25 and follows the steady wire rates of the round before
#             (veth1 from half a second into each ping-pong, into
#             Justitia's once its elephant is split and paced, to the end)
#
# ELEPHANT picks the elephant of plain and justitia:
#   perftest  (default) ib_write_bw -s 1M: 128 MiB in flight and a busy
#             poller, so three busy threads share the guest's two vCPUs with
#             the ping-pong; the anchor busy-polls too
#   justbench justbench's bw:write:1M:window=4, event-driven (it sleeps on
#             its completion channel) like the anchor: busy threads = vCPUs,
#             and Justitia and the anchor differ only in who paces
#
# SHIM2=PATH adds a setting, justitia2: justitia with another build
# of libjustitia.so (an A/B of a shim change in one boot).
# ANCHOR_DAEMONS=1 adds a setting, anchord: the anchor with both daemons
# running as in the Justitia rounds, their reference flow probing every
# 5 ms (always_on: nothing is preloaded, so no latency flow registers and
# it would not run otherwise, as before 2026-11-27), which tells the
# daemons' own cost on the guest's two vCPUs from the pacing's.
#
# Every latency sample comes from ib_send_lat -H.  Per setting: the median
# and the range over the rounds of the p50, p95, p99 and of the share of
# round trips over 1 ms (a scheduler tick on this testbed is 4 ms: the
# share says how often one was met); then Justitia / anchor.  LAT_N round
# trips per measurement (default 3000); BENCH_OUT keeps the outputs.
set -u
cd "$(dirname "$0")/../.."
C=$PWD/build/justctl
B=$PWD/build/justbench
SHIM=$PWD/build/libjustitia.so
SHIM2=${SHIM2:-}
O=$(realpath -m "${BENCH_OUT:-/tmp/vm-isolation}") # absolute: the daemons want absolute paths
ROUNDS=${ROUNDS:-5}
LAT_N=${LAT_N:-3000}
TMO=${TMO:-180}
ELEPHANT=${ELEPHANT:-perftest}
ANCHOR_DAEMONS=${ANCHOR_DAEMONS:-0}
# the anchor polls as the elephant does
APOLL=$([[ $ELEPHANT == justbench ]] && echo event || echo busy)
mkdir -p "$O"
JV_RESULTS=/dev/null JV_OUT=$O . tests/vm/lib.sh
head -c 32 /dev/urandom | base64 >"$O/secret"
chmod 600 "$O/secret"
port=19300

wire() { echo "$(jv_now) $(cat /sys/class/net/veth1/statistics/tx_bytes)"; }
# wireprof: "SECONDS BYTES" of veth1 twenty times a second, until killed
# (bash builtins only: no process per sample)
wireprof() {
	local b
	exec 9<> <(:)
	while :; do
		read -r b </sys/class/net/veth1/statistics/tx_bytes
		echo "$EPOCHREALTIME $b"
		read -r -t 0.05 -u 9 _
	done
}
# steady NAME R FILE START: veth1 MB/s in FILE (wireprof's) from half a
# second after START to the end of the ping-pong (LAT_T1), into $O/steady
# as "NAME R MB/s"
steady() {
	[[ -n $4 ]] || return 0 # (no sample saw the latency flow)
	awk -v a="$4" -v b="$LAT_T1" -v k="$1 $2" '$1 >= a + 0.5 && $1 <= b { if (!n++) { t = $1; x = $2 } T = $1; X = $2 }
		END { if (n >= 2 && T > t) printf "%s %.2f\n", k, (X - x) / (T - t) / 1e6 }' "$3" >>"$O/steady"
}
mbps() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " ");
	printf "%.2f", (y[2] - x[2]) / (y[1] - x[1]) / 1e6 }'; }

daemons_up() {
	local n dev me peer
	for n in 0 1; do
		dev=RXE_DEV$n
		me=RXE_IP$n peer=RXE_IP$((1 - n))
		cat >"$O/jd$n.json" <<EOT
{ "runtime_dir": "/run/ji$n", "log_level": "warn", "qpwatch": false,
  "devices": [ { "name": "${!dev}", "gid_index": $RXE_GID, "max_rate": "${MAXRATE}Mbit" } ],
  "controller": { "target99_us": $TARGET_US },
  "reference": { "listen_address": "${!me}", "period_us": 5000, "always_on": ${REF_ALWAYS:-false},
                 "peers": [ { "address": "${!peer}", "device": "${!dev}" } ],
                 "secret_file": "$O/secret" } }
EOT
		jv_daemon_start "$O/jd$n.json" /run/ji$n/justitiad.sock || exit 1
		eval "JD$n=$JD"
	done
	sleep 1 # the channel up before the flows register
}
daemons_down() { kill -TERM "$JD0" "$JD1" 2>/dev/null; wait "$JD0" "$JD1" 2>/dev/null; }

pre() { # MODE SIDE
	if [[ $1 == justitia2 ]]; then
		echo "env LD_PRELOAD=$SHIM2 JUSTITIA_SOCKET=/run/ji$2/justitiad.sock"
	elif [[ $1 == justitia ]]; then
		echo "env LD_PRELOAD=$SHIM JUSTITIA_SOCKET=/run/ji$2/justitiad.sock"
	else
		echo env
	fi
}

# perf NAME MODE CLASS BIN ARGS...: perftest server on rxe0, client on rxe1,
# in the background ($SRV, $CLI)
perf() {
	local name=$1 mode=$2 cls=$3 bin=$4
	shift 4
	port=$((port + 1))
	# shellcheck disable=SC2046
	$(pre "$mode" 0) JUSTITIA_CLASS="$cls" timeout "$TMO" "$bin" -d "$RXE_DEV0" \
		-x "$RXE_GID" -p $port "$@" >"$O/$name.srv" 2>&1 &
	SRV=$!
	wait_port $port 30 $SRV || return 1
	# shellcheck disable=SC2046
	$(pre "$mode" 1) JUSTITIA_CLASS="$cls" timeout "$TMO" "$bin" -d "$RXE_DEV1" \
		-x "$RXE_GID" -p $port "$@" "$RXE_IP0" >"$O/$name.cli" 2>&1 &
	CLI=$!
}

# lat NAME MODE: one ping-pong in the foreground; its samples (us, one per
# line) in $O/NAME.us; LAT_WIRE: veth1 MB/s meanwhile
lat() {
	local w0 w1
	perf "$1" "$2" lat ib_send_lat -s 2 -n "$LAT_N" -H || return 1
	w0=$(wire)
	LAT_T0=$EPOCHREALTIME
	wait "$CLI"
	LAT_T1=$EPOCHREALTIME
	w1=$(wire)
	wait "$SRV"
	LAT_WIRE=$(mbps "$w0" "$w1")
	# ib_send_lat -H: a "#, usec" header, then one "N, usec" line per sample
	awk -F, '/^#, *usec/ { on = 1; next } on && NF == 2 && $1 ~ /^ *[0-9]+ *$/ { print $2 + 0 }' \
		"$O/$1.cli" >"$O/$1.us"
}

# stats FILE: "p50 p95 p99 over_1ms_%" of the samples in FILE
stats() {
	sort -g "$1" | awk '{ v[NR] = $1; if ($1 > 1000) o++ }
		function q(p) { i = int(NR * p + 0.999999); return v[i < 1 ? 1 : i] }
		END { if (!NR) { print "- - - -"; exit }
		      printf "%.1f %.1f %.1f %.2f\n", q(0.5), q(0.95), q(0.99), 100 * o / NR }'
}

# elephant MODE NAME: the 1 MiB elephant in the background ($ESRV, $ECLI)
elephant() {
	if [[ $ELEPHANT == justbench ]]; then
		port=$((port + 1))
		# shellcheck disable=SC2046
		$(pre "$1" 0) timeout "$TMO" "$B" server -p $port -d "$RXE_DEV0" -g "$RXE_GID" \
			>"$O/$2.srv" 2>&1 &
		ESRV=$!
		wait_port $port 30 $ESRV || return 1
		# shellcheck disable=SC2046
		$(pre "$1" 1) timeout "$TMO" "$B" client "$RXE_IP0" -p $port -d "$RXE_DEV1" \
			-g "$RXE_GID" -t $((TMO - 20))s "bw:write:1M:window=4,name=elephant" \
			>"$O/$2.cli" 2>&1 &
		ECLI=$!
	else
		perf "$2" "$1" bw ib_write_bw -s 1048576 -D $((TMO - 20)) || return 1
		ESRV=$SRV ECLI=$CLI
	fi
	sleep 2
}
elephant_stop() { kill "$ECLI" "$ESRV" 2>/dev/null; wait "$ECLI" "$ESRV" 2>/dev/null; }

# anchor RATE NAME: justbench's paced 8 KiB WRITEs in the background
anchor() {
	port=$((port + 1))
	timeout "$TMO" "$B" server -p $port -d "$RXE_DEV0" -g "$RXE_GID" >"$O/$2.srv" 2>&1 &
	ESRV=$!
	wait_port $port 30 $ESRV || return 1
	timeout "$TMO" "$B" client "$RXE_IP0" -p $port -d "$RXE_DEV1" -g "$RXE_GID" \
		-t $((TMO - 20))s "bw:write:8K:window=4,rate=$1,poll=$APOLL,name=anchor" \
		>"$O/$2.cli" 2>&1 &
	ECLI=$!
	sleep 2
}

# eflow: "SECONDS LATENCY_FLOWS GRANT_BPS BYTES" of jd1 per sample: how
# many latency flows are registered, and its bandwidth flow's (the
# elephant's) grant and bytes; eflow_watch samples ten times a second with
# one justctl process all along, eflow_parse reads its lines afterwards
# (jq, slow to start on the loaded guest)
eflow_watch() { exec "$C" -s /run/ji1/justitiad.sock -j watch -n 0.1 2>/dev/null; }
eflow_parse() {
	jq -r '([.flows[] | select(.class == "latency")] | length) as $l |
		([.flows[] | select(.class == "bandwidth")][0] // {}) as $b |
		"\(.time) \($l) \($b.paced_rate_bps // 0) \($b.bytes // 0)"' 2>/dev/null
}

# justitia_round MODE R: the latency flow next to the elephant under
# Justitia (MODE justitia or justitia2); in $O/moved.MODE.R the elephant's
# rate while the latency flow was registered (bit/s of payload: its bytes
# between the first and the last sample that saw the latency flow) and
# its mean grant then.  (Sampled all along, ten times a second: one
# sample after the latency run, as before 2026-11-27, came once the flow
# had left and the elephant ran free again, and the run was often over
# before a sample saw it start: 4 rounds of 5 had no rate, and the anchor
# ran at another round's.)
justitia_round() {
	local m=$1 r=$2 gp wp
	daemons_up
	elephant "$m" "bw-$m.$r"
	eflow_watch >"$O/eflow-raw.$m.$r" &
	gp=$!
	wireprof >"$O/wire.$m.$r" &
	wp=$!
	lat "$m.$r" "$m"
	kill $gp $wp 2>/dev/null
	wait $gp $wp 2>/dev/null
	eflow_parse <"$O/eflow-raw.$m.$r" >"$O/eflow.$m.$r"
	awk 'NF == 4 && $2 >= 1 { if (!n++) { t = $1; b = $4 } T = $1; B = $4; G += $3 }
	     END { if (n >= 2 && T > t) printf "%d %d\n", (B - b) * 8 / (T - t), G / n }' \
		"$O/eflow.$m.$r" >"$O/moved.$m.$r"
	# the wire once the elephant is split and paced: from the first
	# sample that saw the latency flow
	steady "$m" "$r" "$O/wire.$m.$r" "$(awk 'NF == 4 && $2 >= 1 { print $1; exit }' "$O/eflow.$m.$r")"
	elephant_stop
	daemons_down
	echo "$m $r $(stats "$O/$m.$r.us") $LAT_WIRE $(cat "$O/moved.$m.$r")" >>"$O/rows"
}

# anchor_round NAME R: the latency flow next to the anchor paced at ARATE,
# nothing preloaded (NAME anchor, or anchord with the daemons up)
anchor_round() {
	local wp
	anchor "$ARATE" "$1-bw.$2"
	wireprof >"$O/wire.$1.$2" &
	wp=$!
	lat "$1.$2" plain
	kill $wp 2>/dev/null
	wait $wp 2>/dev/null
	steady "$1" "$2" "$O/wire.$1.$2" "$LAT_T0"
	elephant_stop
	echo "$1 $2 $(stats "$O/$1.$2.us") $LAT_WIRE $ARATE" >>"$O/rows"
}

# ascale R: the anchor's scale for the next round, from round R's steady
# wire rates (Justitia's over the anchor's), within 1..3
ascale() {
	ASCALE=$(awk -v s="$ASCALE" -v r="$1" '$2 == r && $1 == "justitia" { j = $3 }
		$2 == r && $1 == "anchor" { a = $3 }
		END { if (j > 0 && a > 0) s = s * j / a; if (s < 1) s = 1; if (s > 3) s = 3
		      printf "%.3f", s }' "$O/steady")
}

: >"$O/rows"
: >"$O/steady"
ARATE='' ASCALE=1.25
for r in $(seq "$ROUNDS"); do
	lat "alone.$r" plain
	echo "alone $r $(stats "$O/alone.$r.us") $LAT_WIRE" >>"$O/rows"
	elephant plain "bw-plain.$r"
	lat "plain.$r" plain
	elephant_stop
	echo "plain $r $(stats "$O/plain.$r.us") $LAT_WIRE" >>"$O/rows"
	if [[ -z ${TARGET_US:-} ]]; then
		read -r _ _ a99 _ <<<"$(stats "$O/alone.$r.us")"
		TARGET_US=$(awk -v p="$a99" 'BEGIN { t = int(2 * p); print (t < 100 ? 100 : t) }')
		MAXRATE=$(awk -v b="$LAT_WIRE" 'BEGIN { m = int(b * 8); print (m < 10 ? 10 : m) }')
		echo "Justitia: Target99 $TARGET_US us, MaxRate $MAXRATE Mbit/s (from round 1)"
	fi
	justitia_round justitia "$r"
	[[ -n $SHIM2 ]] && justitia_round justitia2 "$r"
	read -r g _ <"$O/moved.justitia.$r" 2>/dev/null || g=0
	((g > 1000)) || g=${MOVED:-$((MAXRATE * 500000))} # (else half of MaxRate)
	MOVED=$g
	ARATE=$(awk -v g="$g" -v s="$ASCALE" 'BEGIN { printf "%d", g * s }')
	anchor_round anchor "$r"
	if [[ $ANCHOR_DAEMONS == 1 ]]; then
		REF_ALWAYS=true daemons_up
		anchor_round anchord "$r"
		daemons_down
	fi
	ascale "$r"
	echo "round $r done: $(grep -c " $r " "$O/rows") settings; the anchor's scale next: $ASCALE" >&2
done

echo "vm-isolation ($ELEPHANT elephant): ib_send_lat -s 2 x $LAT_N per measurement, $ROUNDS rounds in one boot;" \
	"median [min..max] over the rounds"
awk '{ k = $1; n[k]++; p50[k, n[k]] = $3; p95[k, n[k]] = $4; p99[k, n[k]] = $5
       o[k, n[k]] = $6; w[k, n[k]] = $7 }
     function med(a, k, c,   i, j, t, x) { for (i = 1; i <= c; i++) x[i] = a[k, i] + 0
		for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
		lo = x[1]; hi = x[c]; return c % 2 ? x[(c + 1) / 2] : (x[c / 2] + x[c / 2 + 1]) / 2 }
     function col(a, k,   m) { m = med(a, k, n[k]); return sprintf("%9.1f [%s..%s]", m, lo, hi) }
     END { printf "%-9s %-22s %-22s %-24s %-18s %s\n", "setting", "p50 us", "p95 us", "p99 us",
		   ">1 ms %", "veth1 MB/s"
	   nk = split("alone plain justitia justitia2 anchor anchord", ks, " ")
	   for (i = 1; i <= nk; i++) { k = ks[i]; if (!n[k]) continue
		printf "%-9s %-22s %-22s %-24s %-18s %.2f\n", k, col(p50, k), col(p95, k), col(p99, k),
		       col(o, k), med(w, k, n[k])
		m99[k] = med(p99, k, n[k]); mo[k] = med(o, k, n[k]); m50[k] = med(p50, k, n[k]) }
	   r99 = (m99["anchor"] > 0) ? m99["justitia"] / m99["anchor"] : 0
	   r50 = (m50["anchor"] > 0) ? m50["justitia"] / m50["anchor"] : 0
	   ro = (mo["anchor"] > 0) ? sprintf("%.2f", mo["justitia"] / mo["anchor"]) : sprintf("%.2f%% vs 0", mo["justitia"])
	   printf "Justitia / anchor: median p99 %.2f, median share over 1 ms %s, median p50 %.2f\n", r99, ro, r50
	   rp = (m99["justitia"] > 0) ? m99["plain"] / m99["justitia"] : 0
	   printf "plain / Justitia: median p99 %.2f\n", rp
	   if (n["justitia2"]) printf "justitia2 / anchor: median p99 %.2f; justitia2 / justitia: median p99 %.2f\n",
		(m99["anchor"] > 0) ? m99["justitia2"] / m99["anchor"] : 0,
		(m99["justitia"] > 0) ? m99["justitia2"] / m99["justitia"] : 0
	   if (n["anchord"]) printf "Justitia / anchord (the anchor with the daemons probing): median p99 %.2f\n",
		(m99["anchord"] > 0) ? m99["justitia"] / m99["anchord"] : 0 }' \
	"$O/rows"
echo "steady wire MB/s, round by round: $(awk '{ w[$1] = w[$1] " " $3 } END { for (k in w) printf "%s%s; ", k, w[k] }' "$O/steady")"
echo "anchor rate (what Justitia's elephant moved, times the scale; round by round): $(awk '$1 == "anchor" { printf "%s ", $8 }' "$O/rows")bit/s;" \
	"Justitia's elephant: moved / granted $(awk '$1 == "justitia" && $9 > 0 { printf "%.2f ", $8 / $9 }' "$O/rows"); rows in $O/rows"
