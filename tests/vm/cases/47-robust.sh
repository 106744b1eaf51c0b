#!/bin/bash
# Robustness of the shim on real rxe with splitting really happening: one
# daemon manages rxe0 and rxe1 (tests/progs/mtpost posts from rxe1 to rxe0
# in one process) with 64 KiB chunks.  mtpost verifies every byte, every
# receive length and the order of every QP's completions.
#   mt.*       four threads, each with its own QP pair, post at once
#   shared.*   two threads on one QP pair, under the application's mutex
#   fork.*     fork() while the threads post: the child runs its own split
#              transfers under its own pid, the parent goes on; each has
#              exactly its own flows and its own report
#   forkkill.* the parent is killed -9 while its child runs: the parent's
#              flows go at once (the child does not keep its connection)
#   appkill.*  the application is killed -9 with chunks in flight: the
#              daemon lives on and frees its flows, the next run works
#   dkill.*    the daemon is killed -9 with chunks in flight: the
#              application fails open and finishes its verified transfers
#   restart.*  and when a daemon comes back, the running application
#              registers again and goes on splitting
. tests/vm/lib.sh
. tests/vm/shimlib.sh
C=$PWD/build/justctl
M=$PWD/build/tests/mtpost
S=$JV_OUT/stats
SOCK=/run/jr/justitiad.sock
SHIMENV=(env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET="$SOCK" JUSTITIA_LOG=stderr)
mkdir -p "$S"
rm -f "$JV_OUT"/*.hold* "$JV_OUT"/*.ready* "$JV_OUT"/*.stop "$S"/*

# keep a QP's packets in order, in a backlog rxe's bursts do not overflow
# (lib.sh: Linux 6.1's rxe answered reordered split chunks and dropped
# packets' retransmissions with "remote invalid request")
jv_inorder on
trap 'jv_inorder off' EXIT

jv_split_conf "$JV_OUT/jr.json" /run/jr share

ctl() { "$C" -s "$SOCK" "$@"; }

# until it answers (a killed one leaves its socket behind): lib.sh
start_daemon() { jv_daemon_start "$JV_OUT/jr.json" "$SOCK" -D flow; }

# flows PID [JQ]: PID's flows, as a jq filter over them says (default: how many)
flows() {
	ctl --json flows 2>/dev/null | jq -r "[.flows[] | select(.pid == $1)] | ${2:-length}"
}
chunks() { flows "$1" 'map(.chunks) | add // 0'; }

# wait_file FILE [SECONDS]: until FILE exists; prints its content (a pid)
wait_file() {
	local end=$((SECONDS + ${2:-60}))
	while ((SECONDS < end)); do
		[[ -s $1 ]] && { cat "$1"; return 0; }
		sleep 0.1
	done
	echo "none"
	return 1
}

gone() { ! kill -0 "$1" 2>/dev/null; }
nflows_is() { [[ $(flows "$1") == "$2" ]]; }
chunks_over() { (($(chunks "$1") > $2)); }
# more_chunks PID N: "yes" if PID's flows have more than N chunks, else how many
more_chunks() { chunks_over "$1" "$2" && echo yes || echo "no: $(chunks "$1")"; }

# start NAME CMD...: CMD in the background under timeout, output in
# $JV_OUT/NAME.out; TPID is timeout's pid
start() {
	local name=$1
	shift
	(_jv_timeout "$@") >"$JV_OUT/$name.out" 2>&1 &
	TPID=$!
}

# finish NAME TPID [WANT_RC]: wait for it and check its exit code
finish() {
	local rc=0
	wait "$2" 2>/dev/null || rc=$?
	_jv_result "$1" $((rc == ${3:-0})) "want rc ${3:-0}, got $rc"
	if ((rc != ${3:-0} || JV_VERBOSE)); then _jv_show "$JV_OUT/$1.out" "$1"; fi
	if ((rc != ${3:-0})); then
		# was it rxe's retransmission path? its counters and kernel log
		echo "  | rxe counters: $(jv_rxe_counters 'err|dup|seq|retry|rnr' | tr ' ' '\n' |
			grep -v '=0$' | tr '\n' ' ')"
		dmesg | tail -5 | sed 's/^/  | dmesg: /'
	fi
}

# opcodes FILE: "OP=wrs/bytes,..." of a JUSTITIA_STATS report or an
# mtpost --expect file
opcodes() {
	jqv "$1" 'if .opcodes then .opcodes | to_entries
		  else [.qps[].send.opcodes | to_entries[]] | group_by(.key)
		       | map({key: .[0].key, value: {wrs: (map(.value.wrs) | add),
						    bytes: (map(.value.bytes) | add)}}) end
		  | sort_by(.key) | map("\(.key)=\(.value.wrs)/\(.value.bytes)") | join(",")'
}

# counts NAME REPORT EXPECT: the shim counted one WR per message posted,
# split or not, every receive, and no completion error
counts() {
	expect_eq "$1.counts" "$(opcodes "$3")" "$(opcodes "$2")"
	expect_eq "$1.recv" "$(jqv "$3" '"\(.recv.wrs)/\(.recv.bytes)"')" \
		"$(jqv "$2" '"\(.totals.recv.wrs)/\(.totals.recv.bytes)"')"
	expect_eq "$1.cqe.errors" 0 "$(jqv "$2" '.totals.cqe.error')"
}

start_daemon || exit 1

# ---- mt: four threads, four QP pairs (eight flows), random WRITE/READ/SEND
start mt "${SHIMENV[@]}" JUSTITIA_STATS="$S/mt.json" "$M" -t 4 -n 40 \
	--expect "$S/mt.expect.json" --hold "$JV_OUT/mt.hold"
T=$TPID
pid=$(wait_file "$JV_OUT/mt.hold" 120)
ctl --json flows >"$JV_OUT/mt.flows.json"
expect_eq mt.flows "8 split" "$(flows "$pid") $(flows "$pid" 'map(.split) | unique | join(",")')"
expect_eq mt.chunks yes "$(more_chunks "$pid" 160)"
rm -f "$JV_OUT/mt.hold"
finish mt "$T"
counts mt "$S/mt.json" "$S/mt.expect.json"

# ---- shared: two threads on ONE QP pair, serialised by the app's mutex
start shared "${SHIMENV[@]}" JUSTITIA_STATS="$S/shared.json" "$M" --shared-qp -t 2 -n 50 \
	--expect "$S/shared.expect.json" --hold "$JV_OUT/shared.hold"
T=$TPID
pid=$(wait_file "$JV_OUT/shared.hold" 120)
expect_eq shared.flows 2 "$(flows "$pid")"
expect_eq shared.chunks yes "$(more_chunks "$pid" 50)"
rm -f "$JV_OUT/shared.hold"
finish shared "$T"
counts shared "$S/shared.json" "$S/shared.expect.json"

# ---- fork: the child splits on its own QPs, the parent goes on with its own
start fork "${SHIMENV[@]}" JUSTITIA_STATS="$S/fork.%p.json" "$M" --fork -t 2 -n 30 \
	--ready "$JV_OUT/fork.ready" --expect "$S/fork.expect.json" --hold "$JV_OUT/fork.hold"
T=$TPID
parent=$(wait_file "$JV_OUT/fork.ready" 120)
child=$(wait_file "$JV_OUT/fork.hold.child" 120)
ctl --json flows >"$JV_OUT/fork.flows.json"
# exactly their own QPs: the child did not register the parent's again
expect_eq fork.flows "parent 4, child 4" "parent $(flows "$parent"), child $(flows "$child")"
expect_eq fork.child.chunks yes "$(more_chunks "$child" 0)"
rm -f "$JV_OUT/fork.hold.child"
wait_file "$JV_OUT/fork.hold" 120 >/dev/null
jv_until 5 nflows_is "$child" 0
expect_eq fork.child.reclaimed "0 4" "$(flows "$child") $(flows "$parent")"
rm -f "$JV_OUT/fork.hold"
finish fork "$T"
expect_eq fork.child.exit yes "$(grep -q 'the child exited 0' "$JV_OUT/fork.out" && echo yes)"
counts fork.parent "$S/fork.$parent.json" "$S/fork.expect.json"
counts fork.child "$S/fork.$child.json" "$S/fork.expect.json.child"

# ---- forkkill: the parent dies while its child still runs
start forkkill "${SHIMENV[@]}" "$M" --fork -t 1 -n 20 --ready "$JV_OUT/fk.ready" \
	--hold "$JV_OUT/fk.hold"
T=$TPID
parent=$(wait_file "$JV_OUT/fk.ready" 120)
child=$(wait_file "$JV_OUT/fk.hold.child" 120)
expect_eq forkkill.flows "2 2" "$(flows "$parent") $(flows "$child")"
kill -9 "$parent"
finish forkkill "$T" 137
jv_until 5 nflows_is "$parent" 0
expect_eq forkkill.parent.reclaimed "0 2" "$(flows "$parent") $(flows "$child")"
rm -f "$JV_OUT/fk.hold.child"
jv_until 60 gone "$child"
jv_until 5 nflows_is "$child" 0
expect_eq forkkill.child.done "yes 0" \
	"$(grep -q "mtpost (child, pid $child).*all verified" "$JV_OUT/forkkill.out" && echo yes) $(flows "$child")"

# ---- appkill: kill -9 the application with chunks in flight
start appkill "${SHIMENV[@]}" "$M" -t 4 -D 60 --ready "$JV_OUT/ak.ready"
T=$TPID
pid=$(wait_file "$JV_OUT/ak.ready" 120)
jv_until 10 chunks_over "$pid" 20
expect_eq appkill.splitting "8 yes" "$(flows "$pid") $(more_chunks "$pid" 20)"
kill -9 "$pid"
finish appkill "$T" 137
expect_eq appkill.daemon.alive "yes 0" "$(gone "$JD" || echo yes) $(ctl status >/dev/null; echo $?)"
jv_until 5 nflows_is "$pid" 0
expect_eq appkill.flows.freed "0 0" "$(flows "$pid") $(ctl --json status | jq .counts.flows)"
jv_until 5 eval "! rdma res show qp | grep -q 'pid $pid '"
expect_eq appkill.qps.gone 0 "$(rdma res show qp | grep -c "pid $pid ")"
run_one appkill.next "${SHIMENV[@]}" "$M" -t 4 -n 20

# ---- dkill: kill -9 the daemon with chunks in flight; the app fails open
# and keeps posting (2 s more) until told to stop
start dkill "${SHIMENV[@]}" "$M" -t 4 -D 60 --ready "$JV_OUT/dk.ready" --stop "$JV_OUT/dk.stop"
T=$TPID
pid=$(wait_file "$JV_OUT/dk.ready" 120)
jv_until 10 chunks_over "$pid" 20
expect_eq dkill.splitting yes "$(more_chunks "$pid" 20)"
kill -9 "$JD"
wait "$JD" 2>/dev/null
jv_until 10 grep -q 'justitiad went away' "$JV_OUT/dkill.out"
expect_eq dkill.failed.open yes "$(grep -q 'justitiad went away' "$JV_OUT/dkill.out" && echo yes)"
sleep 2
touch "$JV_OUT/dk.stop"
finish dkill "$T"

# ---- restart: a daemon killed and started again under a running app
start_daemon || exit 1
start restart "${SHIMENV[@]}" "$M" -t 4 -D 60 --ready "$JV_OUT/rs.ready" --stop "$JV_OUT/rs.stop"
T=$TPID
pid=$(wait_file "$JV_OUT/rs.ready" 120)
kill -9 "$JD"
wait "$JD" 2>/dev/null
start_daemon || exit 1
# the shim reconnects (backoff: 1 s, doubling while refused) and registers
# its QPs anew, and they split again
jv_until 20 nflows_is "$pid" 8
jv_until 15 chunks_over "$pid" 20
expect_eq restart.splitting "8 yes" "$(flows "$pid") $(more_chunks "$pid" 20)"
# and the new daemon knows their state again, not just their numbers
expect_eq restart.state "RTS split 8" \
	"$(flows "$pid" 'map(select(.peer_qpn != null)) | "\(map(.state) | unique | join(",")) \(map(.split) | unique | join(",")) \(length)"')"
touch "$JV_OUT/rs.stop"
finish restart "$T"
expect_eq restart.reconnected yes "$(grep -c 'registered with justitiad' "$JV_OUT/restart.out" |
	awk '{print ($1 >= 2) ? "yes" : "no"}')"

kill -TERM "$JD"
wait "$JD"
expect_eq daemon.exit 0 $?
jv_summary
