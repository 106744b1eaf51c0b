#!/bin/bash
# The isolation demo (make demo) end to end in its reduced mode: every
# scenario runs and produces its numbers.  The numbers themselves are not
# judged here (TCG is noisy; docs/results.md has the full runs), only that
# they exist and are sane.
. tests/vm/lib.sh
O=$JV_OUT/demo
mkdir -p "$O"
# the quick demo takes 2-4 minutes under TCG, more when the host is busy
JV_TIMEOUT=900 run_one demo.quick tools/demo --guest --quick "$O"
R=$O/results.json
expect() { _jv_result "$1" "$( [ "$2" = "$3" ] && echo 1 || echo 0)" "want $2, got $3"; }
expect demo.rows 8 "$(jq 'length' "$R" 2>/dev/null)"
expect demo.latency.sane yes "$(jq -r '[.[] | select(.p50_us != null) | (.p50_us > 0 and .p50_us <= .p99_us and .p99_us <= .p999_us)] | if length == 4 and all then "yes" else "no" end' "$R" 2>/dev/null)"
expect demo.bandwidth.sane yes "$(jq -r '[.[] | select(.scenario == "5") | (.big_MBps > 0 and .small_MBps > 0)] | if length == 2 and all then "yes" else "no" end' "$R" 2>/dev/null)"
# 4: the daemons' max_ops came from a lone 64 B flow measured first, and the
# throughput flow moved data in both modes
expect demo.tput.calibrated yes "$(jq -r '[.[] | select(.scenario == "4") | (.max_ops > 0 and .tput_MBps > 0)] | if length == 2 and all then "yes" else "no" end' "$R" 2>/dev/null)"
# the anchor (3b): the application's own pacing moved bytes at a rate of its own
expect demo.anchor.moved yes "$(jq -r '[.[] | select(.scenario == "3b") | (.neighbour_MBps > 0 and .rate_bps > 0)] | if length == 1 and all then "yes" else "no" end' "$R" 2>/dev/null)"
# the daemons' CPU, per scenario with Justitia (3, 4, 5), both daemons
expect demo.daemon.cpu 6 "$(awk 'NF == 4 && $3 >= 0 && $4 > 0' "$O/daemon_cpu.txt" 2>/dev/null | wc -l)"
jv_summary
