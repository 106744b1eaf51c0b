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
#
# Per setting: the median over the rounds of each number.  SECS per run
# (default 2); BENCH_OUT keeps the JSON reports.
set -u
cd "$(dirname "$0")/../.."
B=$PWD/build/justbench
SHIM=$PWD/build/libjustitia.so
O=${BENCH_OUT:-/tmp/vm-modes}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-2}
mkdir -p "$O"
: "${RXE_DEV0:?run me through: tests/vm/justitia-vm --rxe}"

run() { # NAME MODE WRAP...
	local name=$1 mode=$2
	shift 2
	"$@" "$B" local "$RXE_DEV1" "$RXE_DEV0" -g "$RXE_GID" --mode "$mode" -t "$SECS" \
		-o "$O/$name.json" >"$O/$name.out" 2>&1 || echo "$name failed: $(tail -1 "$O/$name.out")"
}

for r in $(seq "$ROUNDS"); do
	for m in poll-cost bidir; do
		run "$m.plain.$r" "$m" env
		run "$m.shim.$r" "$m" env LD_PRELOAD="$SHIM"
	done
done

# median SETTING JQ: the median over the rounds of JQ applied to each report
median() {
	local f
	for f in "$O/$1".*.json; do jq -r "$2" "$f"; done | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'
}

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
