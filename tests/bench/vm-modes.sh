#!/bin/bash
# vm-modes.sh: justbench's named modes plain and under libjustitia.so, in one
# boot of the Soft-RoCE guest (make bench runs it through justitia-vm --rxe).
# Numbers only, never pass/fail.  Local mode, rxe1 -> rxe0, ROUNDS times
# (default 3) in turn, so that a slow moment of the emulated host hurts both
# settings alike:
#
#   poll-cost  justbench --mode poll-cost (lat:write:8, busy): ns per
#              ibv_poll_cq call on the empty CQ, in flight, and the call
#              that returns the completion; the clock's floor
#   bidir      justbench --mode bidir: latency WRITEs of 8 B both ways at
#              once, then 64 KiB WRITEs both ways at once (4 in flight each)
#   reuse      justbench --mode reuse --rotate 1,16 (2 x SECS): 64-byte latency
#              WRITEs, then 64 KiB WRITEs (4 in flight), at 0/50/90/100%
#              reuse of one buffer (a pool of 64), then 1 and 16 in rotation
#   overhead   justbench --mode overhead (3 x SECS each flow): CPU ns of each
#              post and of its polls (8-byte WRITEs), then 256 KiB WRITEs
#              with 0..10 ms of computation before each post, and the knee
#   overlap    justbench --mode overlap (3 x SECS) with a link delay of 0, 1
#              and 5 ms each way (jv_delay): 1 KiB WRITEs, post, compute C,
#              wait; the share of the communication time C hid
#   progress   justbench --mode progress (4 x SECS each flow) with a link
#              delay of 0 and 5 ms each way: 1 KiB fetched by READ, then by a
#              SEND request answered by a server thread that computes in
#              slices of D = 0, 1, 2, 4, 8, 16 ms; latency p50/mean/p99 per D
#
# Per setting: the median over the rounds of each number.  SECS per run
# (default 2); BENCH_OUT keeps the JSON reports (progress-DELAY.SETTING.ROUND
# .json: .flows[F].sweep.points[i] with response_delay_ns and latency_ns).
# MODES (default "poll-cost bidir reuse overhead overlap progress") runs and
# prints only the modes it names.
set -u
cd "$(dirname "$0")/../.."
B=$PWD/build/justbench
SHIM=$PWD/build/libjustitia.so
O=$(realpath -m "${BENCH_OUT:-/tmp/vm-modes}") # absolute: the daemons want absolute paths
ROUNDS=${ROUNDS:-3}
MODES=" ${MODES:-poll-cost bidir reuse overhead overlap progress} "
want() { [[ $MODES == *" $1 "* ]]; }
SECS=${SECS:-2}
mkdir -p "$O"
: "${RXE_DEV0:?run me through: tests/vm/justitia-vm --rxe}"
JV_OUT=$O/jv
. tests/vm/lib.sh # jv_delay

declare -A EXTRA=([reuse]="--rotate 1,16 -t $((2 * SECS))" [overhead]="-t $((3 * SECS))"
	[overlap]="--compute 10us,100us,1ms,2ms,5ms -t $((3 * SECS))"
	[progress]="--response-delay 0,1ms,2ms,4ms,8ms,16ms -t $((4 * SECS))")
run() { # NAME MODE WRAP...
	local name=$1 mode=$2
	shift 2
	# shellcheck disable=SC2086 # EXTRA's options are words
	"$@" "$B" local "$RXE_DEV1" "$RXE_DEV0" -g "$RXE_GID" --mode "$mode" -t "$SECS" \
		${EXTRA[$mode]:-} -o "$O/$name.json" >"$O/$name.out" 2>&1 ||
		echo "$name failed: $(tail -1 "$O/$name.out")"
}

for r in $(seq "$ROUNDS"); do
	for m in poll-cost bidir reuse overhead; do
		want "$m" || continue
		run "$m.plain.$r" "$m" env
		run "$m.shim.$r" "$m" env LD_PRELOAD="$SHIM"
	done
	for d in 0 1 5; do
		want overlap || continue
		jv_delay $d
		run "overlap-$d.plain.$r" overlap env
		run "overlap-$d.shim.$r" overlap env LD_PRELOAD="$SHIM"
	done
	for d in 0 5; do
		want progress || continue
		jv_delay $d
		run "progress-$d.plain.$r" progress env
		run "progress-$d.shim.$r" progress env LD_PRELOAD="$SHIM"
	done
	jv_delay 0
done

# median SETTING JQ: the median over the rounds of JQ applied to each report
median() {
	local f
	for f in "$O/$1".*.json; do jq -r "$2" "$f"; done | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'
}

if want poll-cost; then
echo "== justbench --mode poll-cost: ns per ibv_poll_cq call (p50 / p99), median of $ROUNDS runs"
printf '%-6s %12s %12s %12s %10s %10s %9s\n' "" "empty CQ" "in flight" "completion" "clock p50" \
	"msgs" "lat p50us"
for s in plain shim; do
	P='.flows[0].poll_cost'
	printf '%-6s %12s %12s %12s %10s %10s %9s\n' "$s" \
		"$(median "poll-cost.$s" "$P.empty_ns.p50")/$(median "poll-cost.$s" "$P.empty_ns.p99")" \
		"$(median "poll-cost.$s" "$P.inflight_empty_ns.p50")/$(median "poll-cost.$s" \
			"$P.inflight_empty_ns.p99") ($(median "poll-cost.$s" "$P.inflight_empty_ns.samples"))" \
		"$(median "poll-cost.$s" "$P.hit_ns.p50")/$(median "poll-cost.$s" "$P.hit_ns.p99")" \
		"$(median "poll-cost.$s" "$P.clock_ns.p50")" \
		"$(median "poll-cost.$s" '.flows[0].msgs')" \
		"$(median "poll-cost.$s" '.flows[0].latency_ns.p50 / 100 | floor / 10')"
done
fi
if want bidir; then
echo "== justbench --mode bidir, median of $ROUNDS runs: latency p50/p99 us, bandwidth Mbit/s"
printf '%-6s %16s %16s %10s %10s %10s\n' "" "lat rxe1->rxe0" "lat rxe0->rxe1" "bw ->" "bw <-" \
	"bw both"
for s in plain shim; do
	L='.flows[0]' W='.flows[1]'
	printf '%-6s %16s %16s %10s %10s %10s\n' "$s" \
		"$(median "bidir.$s" "$L.latency_ns.p50 / 100 | floor / 10")/$(median "bidir.$s" \
			"$L.latency_ns.p99 / 100 | floor / 10")" \
		"$(median "bidir.$s" "$L.reverse.latency_ns.p50 / 100 | floor / 10")/$(median "bidir.$s" \
			"$L.reverse.latency_ns.p99 / 100 | floor / 10")" \
		"$(median "bidir.$s" "$W.gbps * 1000 | floor")" \
		"$(median "bidir.$s" "$W.reverse.gbps * 1000 | floor")" \
		"$(median "bidir.$s" "$W.aggregate.gbps * 1000 | floor")"
done

fi
if want reuse; then
echo "== justbench --mode reuse, median of $ROUNDS runs: latency flow (64 B) p50/p99 us, bandwidth flow (64 KiB) Mbit/s"
printf '%-6s %-8s' "" "flow"
for k in 'reuse 0%' 'reuse 50%' 'reuse 90%' 'reuse 100%' '1 in turn' '16 in turn'; do printf ' %12s' "$k"; done
echo
for s in plain shim; do
	printf '%-6s %-8s' "$s" "lat"
	for i in 0 1 2 3 4 5; do
		printf ' %12s' "$(median "reuse.$s" ".flows[0].sweep.points[$i].latency_ns.p50 / 100 | floor / 10")/$(median \
			"reuse.$s" ".flows[0].sweep.points[$i].latency_ns.p99 / 100 | floor / 10")"
	done
	echo
	printf '%-6s %-8s' "$s" "bw"
	for i in 0 1 2 3 4 5; do
		printf ' %12s' "$(median "reuse.$s" ".flows[1].sweep.points[$i].gbps * 1000 | floor")"
	done
	echo
done

fi
if want overhead; then
echo "== justbench --mode overhead, median of $ROUNDS runs: CPU ns per 8-byte WRITE (p50 / mean)"
printf '%-6s %14s %14s %10s %12s\n' "" "post" "polls" "clock p50" "lat p50 us"
for s in plain shim; do
	P='.flows[0].sweep.points[0]'
	printf '%-6s %14s %14s %10s %12s\n' "$s" \
		"$(median "overhead.$s" "$P.post_cpu_ns.p50")/$(median "overhead.$s" "$P.post_cpu_ns.mean")" \
		"$(median "overhead.$s" "$P.poll_cpu_ns.p50")/$(median "overhead.$s" "$P.poll_cpu_ns.mean")" \
		"$(median "overhead.$s" '.flows[0].sweep.cpu_clock_ns.p50')" \
		"$(median "overhead.$s" "$P.latency_ns.p50 / 100 | floor / 10")"
done
echo "   256 KiB WRITEs, 4 in flight, C of computation before each post: Mbit/s (share computing %)"
printf '%-6s' ""
for c in 0 100us 1ms 2ms 5ms 10ms; do printf ' %14s' "C=$c"; done
printf ' %12s\n' "knee %"
for s in plain shim; do
	printf '%-6s' "$s"
	for i in 0 1 2 3 4 5; do
		printf ' %14s' "$(median "overhead.$s" ".flows[1].sweep.points[$i].gbps * 1000 | floor") ($(median \
			"overhead.$s" ".flows[1].sweep.points[$i].compute_share * 1000 | floor / 10"))"
	done
	printf ' %12s\n' "$(median "overhead.$s" '.flows[1].sweep.knee.compute_share // 0 | . * 1000 | floor / 10')"
done

fi
if want overlap; then
echo "== justbench --mode overlap (1 KiB WRITE), median of $ROUNDS runs: T (C = 0) us, then overlap % per C"
printf '%-6s %-6s %9s' "delay" "" "T us"
for c in 10us 100us 1ms 2ms 5ms; do printf ' %8s' "C=$c"; done
echo
for d in 0 1 5; do
	for s in plain shim; do
		printf '%-6s %-6s %9s' "${d}ms" "$s" \
			"$(median "overlap-$d.$s" '.flows[0].sweep.points[0].latency_ns.mean / 100 | floor / 10')"
		for i in 1 2 3 4 5; do
			printf ' %8s' "$(median "overlap-$d.$s" ".flows[0].sweep.points[$i].overlap * 100 | floor")"
		done
		echo
	done
done
fi

if want progress; then
echo "== justbench --mode progress (1 KiB), median of $ROUNDS runs: latency p50/mean/p99 us per response delay D"
printf '%-6s %-6s %-5s' "link" "" "flow"
for D in 0 1ms 2ms 4ms 8ms 16ms; do printf ' %20s' "D=$D"; done
echo
for d in 0 5; do
	for s in plain shim; do
		for f in 0 1; do
			printf '%-6s %-6s %-5s' "${d}ms" "$s" "$(median "progress-$d.$s" ".flows[$f].verb")"
			for i in 0 1 2 3 4 5; do
				P=".flows[$f].sweep.points[$i].latency_ns"
				printf ' %20s' "$(median "progress-$d.$s" "$P.p50 / 100 | floor / 10")/$(median \
					"progress-$d.$s" "$P.mean / 100 | floor / 10")/$(median "progress-$d.$s" \
					"$P.p99 / 100 | floor / 10")"
			done
			echo
		done
	done
done
fi
