#!/bin/bash
# The three-host part of the demo (tools/demo --part 3hosts, run by `make
# demo` in its own boot) end to end in its reduced mode: issue 13's
# scenarios (a), (b), (c), each alone, plain and with Justitia, produce
# their rows.  The numbers are not judged (the latency flow's p99 on this
# testbed: docs/results.md, "Issue 13: remote READ scenarios on three
# emulated hosts"); cases-3hosts/40-incast.sh and 50-read-scenarios.sh
# check what the daemons do.  Here: every row is there and sane, every
# elephant moved bytes, the daemons exited cleanly and were looked at
# while the flows ran.
. tests/vm/lib.sh
O=$JV_OUT/demo3
mkdir -p "$O"
# 9 runs of 5-8 s each, daemons started and stopped three times
JV_TIMEOUT=900 run_one demo3.quick tools/demo-3hosts --quick "$O"
R=$O/rows-3hosts.json
expect() { _jv_result "$1" "$( [ "$2" = "$3" ] && echo 1 || echo 0)" "want $2, got $3"; }
expect demo3.rows 9 "$(jq -s 'length' "$R" 2>/dev/null)"
expect demo3.rows.each "a alone,a plain,a justitia,b alone,b plain,b justitia,c alone,c plain,c justitia" \
	"$(jq -rs 'map("\(.scenario) \(.mode)") | join(",")' "$R" 2>/dev/null)"
expect demo3.latency.sane yes "$(jq -rs 'map(.p50_us != null and .p50_us > 0 and .p50_us <= .p99_us) |
	if length == 9 and all then "yes" else "no" end' "$R" 2>/dev/null)"
# every elephant moved bytes, plain and with Justitia ((c) has two)
expect demo3.elephants.moved 8 "$(jq -s '[.[] | select(.mode != "alone") | .elephant_Mbps[]? |
	select(. != null and . > 0)] | length' "$R" 2>/dev/null)"
# the daemons were looked at while the flows ran (one look per scenario)
expect demo3.daemons.looked 3 "$(jq -s '[.[] | select(.mode == "justitia") |
	select(.daemons_saw_every_flow | type == "boolean")] | length' "$R" 2>/dev/null)"
expect demo3.daemons.exit 0 "$(grep -c 'the daemons exited' "$JV_OUT/demo3.quick.out" 2>/dev/null)"
jv_summary
