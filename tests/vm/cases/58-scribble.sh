#!/bin/bash
# An application that scribbles over its own shared memory: flowreg -S
# registers 4 flows and then, every millisecond, writes random bytes over
# its client segment (the header and a page at random), while a preloaded
# tests/progs/mtpost (rxe1 -> rxe0, 2 threads, split at 64 KiB, every byte
# verified) runs next to it under the same daemon.
#   scribble.daemon    the daemon stays up and answers `justctl status`
#   scribble.fenced    the scribbler's flows are flagged counters_valid false
#   scribble.logged    the daemon says so once for that process, not per read
#   scribble.good.*    mtpost finishes with its data verified, its flows'
#                      counters are valid and they were read (bytes > 0)
. tests/vm/lib.sh
. tests/vm/shimlib.sh
C=$PWD/build/justctl
R=$PWD/build/tests/flowreg
M=$PWD/build/tests/mtpost
SOCK=/run/js/justitiad.sock

jv_split_conf "$JV_OUT/js.json" /run/js share

ctl() { "$C" -s "$SOCK" "$@"; }
jv_inorder on

if ! jv_daemon_start "$JV_OUT/js.json" "$SOCK"; then
	_jv_result scribble.daemon 0 "justitiad did not come up"
	jv_summary
	exit 0
fi

(_jv_timeout "$R" "$SOCK" 4 -d "$RXE_DEV1" -S -t 30) >"$JV_OUT/scribbler.out" 2>&1 &
SP=$!
jv_until 20 grep -q "registered 4 flows" "$JV_OUT/scribbler.out"
(_jv_timeout env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET="$SOCK" JUSTITIA_LOG=stderr \
	"$M" -t 2 -n 40 -s 1048576 --hold "$JV_OUT/good.hold") >"$JV_OUT/good.out" 2>&1 &
GP=$!
# while mtpost holds its QPs after the transfers: its flows and counters
held_or_gone() { [[ -s $JV_OUT/good.hold ]] || ! kill -0 "$GP" 2>/dev/null; }
jv_until 240 held_or_gone
t0=$(jv_now)
ctl --json flows >"$JV_OUT/flows.json" 2>"$JV_OUT/flows.err"
status_rc=$?
status_s=$(jv_secs "$t0")
good_pid=$(cat "$JV_OUT/good.hold" 2>/dev/null)
rm -f "$JV_OUT/good.hold"
rc=0
wait "$GP" || rc=$?
_jv_result scribble.good.run $((rc == 0)) "mtpost rc $rc"
((rc)) && _jv_show "$JV_OUT/good.out" mtpost
expect_eq scribble.good.verified yes "$(grep -q 'all verified' "$JV_OUT/good.out" && echo yes)"
_jv_result scribble.daemon $((status_rc == 0)) "justctl flows rc $status_rc in ${status_s}s; daemon $(kill -0 "$JD" 2>/dev/null && echo up || echo gone)"
expect_eq scribble.good.counters "valid read" "$(jq -r --arg p "${good_pid:-0}" \
	'[.flows[] | select(.pid == ($p | tonumber))] | if length == 0 then "no flows"
	 else (if all(.counters_valid) then "valid" else "invalid" end) + " " +
	      (if (map(.bytes) | add) > 0 then "read" else "unread" end) end' "$JV_OUT/flows.json")"
expect_eq scribble.fenced "4 of 4" "$(jq -r '[.flows[] | select(.comm == "flowreg")] |
	"\(map(select(.counters_valid == false)) | length) of \(length)"' "$JV_OUT/flows.json")"
kill -TERM "$SP" 2>/dev/null
wait "$SP" 2>/dev/null
expect_eq scribble.logged 1 "$(grep -c 'wrote impossible counters' "$JV_OUT/js.log")"
kill -TERM "$JD"
wait "$JD"
expect_eq scribble.daemon.exit 0 "$?"
jv_inorder off
jv_summary
