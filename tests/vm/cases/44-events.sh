#!/bin/bash
# Completions the shim makes up reach event-driven applications: a split
# RDMA WRITE whose later chunks fail (tests/progs/cqevent, rxe1 -> rxe0 in
# one process, one daemon, 64 KiB chunks, pacing and splitting even a lone
# flow: pace_mode share) completes with the error a whole
# WRITE gets natively, and with a completion event on the application's
# channel -- the application sleeps in poll() on it, it does not spin.
#   native.*   without the shim: the reference status
#   poll.*     under the shim, ibv_poll_cq after the event
#   ex.*       under the shim, an ibv_create_cq_ex CQ polled with
#              ibv_start_poll / ibv_next_poll after the event
. tests/vm/lib.sh
. tests/vm/shimlib.sh
D=$PWD/build/justitiad
C=$PWD/build/justctl
P=$PWD/build/tests/cqevent
SOCK=/run/je/justitiad.sock
SHIMENV=(env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET="$SOCK" JUSTITIA_LOG=stderr)
ARGS=(-a "$RXE_DEV1" -b "$RXE_DEV0" -g "$RXE_GID")

jv_split_conf "$JV_OUT/je.json" /run/je share
"$D" -c "$JV_OUT/je.json" >>"$JV_OUT/je.log" 2>&1 &
JD=$!
for _ in $(seq 200); do "$C" -s "$SOCK" status >/dev/null 2>&1 && break; sleep 0.1; done

status_of() { sed -n 's/^event wr_id=[^ ]* status=//p' "$1"; }

(_jv_timeout "$P" "${ARGS[@]}") >"$JV_OUT/native.out" 2>&1
expect_eq native.rc 0 $?
NATIVE=$(status_of "$JV_OUT/native.out")
expect_eq native.failed yes "$([[ -n $NATIVE && $NATIVE != success ]] && echo yes)"

for mode in poll ex; do
	extra=()
	[[ $mode == ex ]] && extra=(--ex)
	(_jv_timeout "${SHIMENV[@]}" "$P" "${ARGS[@]}" "${extra[@]}") >"$JV_OUT/$mode.out" 2>&1
	rc=$?
	expect_eq "$mode.event" 0 "$rc"
	# the shim split it, and made the completion up
	expect_eq "$mode.split.failed" yes \
		"$(grep -q 'a split chunk failed' "$JV_OUT/$mode.out" && echo yes)"
	expect_eq "$mode.status" "$NATIVE" "$(status_of "$JV_OUT/$mode.out")"
	if ((rc || JV_VERBOSE)); then _jv_show "$JV_OUT/$mode.out" "$mode"; fi
done

kill -TERM "$JD"
wait "$JD"
jv_summary
