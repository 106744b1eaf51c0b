#!/bin/bash
# A daemon started after the application (tests/progs/mtpost, rxe1 -> rxe0
# in one process, under the shim):
#   late.*     the application runs unmanaged, then the daemon comes up: the
#              shim connects on its own (no QP created or modified any more)
#              and registers every QP; the daemon then sees its posts
#   memlock.*  the same with RLIMIT_MEMLOCK just above what the application
#              pins itself and without CAP_IPC_LOCK: registering anew creates
#              split QPs whose memory region the kernel refuses; tearing the
#              half-made split QP down must not deadlock the shim (its
#              ibv_destroy_qp goes to the provider, not to the interposer
#              that takes the registry lock re-registration holds), and the
#              application finishes
. tests/vm/lib.sh
. tests/vm/shimlib.sh
C=$PWD/build/justctl
M=$PWD/build/tests/mtpost
SOCK=/run/jl/justitiad.sock
SHIMENV=(env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET="$SOCK" JUSTITIA_LOG=stderr)
rm -f "$JV_OUT"/*.ready "$JV_OUT"/*.stop

jv_split_conf "$JV_OUT/jl.json" /run/jl

ctl() { "$C" -s "$SOCK" "$@"; }

# until it answers (a killed one leaves its socket behind): lib.sh
start_daemon() { jv_daemon_start "$JV_OUT/jl.json" "$SOCK" -D flow; }
stop_daemon() {
	kill -TERM "$JD"
	wait "$JD"
}

flows() {
	ctl --json flows 2>/dev/null | jq -r "[.flows[] | select(.pid == $1)] | ${2:-length}"
}
wait_file() {
	local end=$((SECONDS + ${2:-60}))
	while ((SECONDS < end)); do
		[[ -s $1 ]] && { cat "$1"; return 0; }
		sleep 0.1
	done
	echo "none"
	return 1
}
nflows_is() { [[ $(flows "$1") == "$2" ]]; }
ops_over() { (($(flows "$1" 'map(.ops) | add // 0') > $2)); }
start() {
	local name=$1
	shift
	(_jv_timeout "$@") >"$JV_OUT/$name.out" 2>&1 &
	TPID=$!
}
finish() {
	local rc=0
	wait "$2" 2>/dev/null || rc=$?
	_jv_result "$1" $((rc == ${3:-0})) "want rc ${3:-0}, got $rc"
	if ((rc != ${3:-0} || JV_VERBOSE)); then _jv_show "$JV_OUT/$1.out" "$1"; fi
}

# ---- late: no daemon when the application starts
[[ -e $SOCK ]] && rm -f "$SOCK"
start late "${SHIMENV[@]}" "$M" -t 2 -D 60 --ready "$JV_OUT/late.ready" --stop "$JV_OUT/late.stop"
T=$TPID
pid=$(wait_file "$JV_OUT/late.ready" 120)
# what the application pins itself (for memlock below)
PIN_KB=$(awk '/^VmPin:/ {print $2}' "/proc/$pid/status")
start_daemon || exit 1
# no restart, no new QP: the shim connects by itself and registers all four
jv_until 20 nflows_is "$pid" 4
expect_eq late.flows 4 "$(flows "$pid")"
jv_until 20 ops_over "$pid" 0
expect_eq late.counted yes "$(ops_over "$pid" 0 && echo yes)"
touch "$JV_OUT/late.stop"
finish late "$T"
expect_eq late.registered yes "$(grep -q 'registered with justitiad' "$JV_OUT/late.out" && echo yes)"
stop_daemon

# ---- memlock: re-registration whose split QPs cannot get their memory
# (root ignores RLIMIT_MEMLOCK: drop CAP_IPC_LOCK)
LIMIT_KB=$((PIN_KB + 1))
start memlock "${SHIMENV[@]}" setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock \
	prlimit --memlock="$((LIMIT_KB * 1024))" "$M" -t 2 -D 60 \
	--ready "$JV_OUT/memlock.ready" --stop "$JV_OUT/memlock.stop"
T=$TPID
pid=$(wait_file "$JV_OUT/memlock.ready" 120)
start_daemon || exit 1
jv_until 20 nflows_is "$pid" 4
expect_eq memlock.flows 4 "$(flows "$pid")"
jv_until 20 grep -q 'cannot create its split QP' "$JV_OUT/memlock.out"
expect_eq memlock.split.refused yes \
	"$(grep -q 'cannot create its split QP' "$JV_OUT/memlock.out" && echo yes)"
touch "$JV_OUT/memlock.stop"
# a deadlocked shim never lets the application tear its QPs down
finish memlock "$T"
stop_daemon
jv_summary
