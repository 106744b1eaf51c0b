# tests/vm/shimlib.sh -- helpers for guest-side cases that run programs under
# libjustitia.so and check its JUSTITIA_STATS report.  Source after lib.sh.
#
#   with_shim STATS CMD...                 run CMD with the shim preloaded,
#                                          report to STATS
#   expect_eq NAME WANT GOT                PASS if equal
#   expect_send NAME STATS OPCODE WRS BYTES  all send WRs of the report are
#                                          OPCODE, WRS of them, BYTES in all
#   expect_recv NAME STATS WRS BYTES       receive WRs posted
#   expect_no_send NAME STATS              the process posted no send WR

SHIM=${SHIM:-$PWD/build/libjustitia.so}
export SHIM

with_shim() {
	local stats=$1
	shift
	env LD_PRELOAD="$SHIM" JUSTITIA_STATS="$stats" "$@"
}
export -f with_shim

expect_eq() {
	_jv_result "$1" $([[ "$2" == "$3" ]] && echo 1 || echo 0) "want $2, got $3"
}

# jqv STATS EXPR: one value from a report ("missing" if there is no report)
jqv() {
	if [[ -s $1 ]]; then jq -r "$2" "$1" 2>&1; else echo "missing"; fi
}

expect_send() {
	local name=$1 f=$2 op=$3 wrs=$4 bytes=$5
	expect_eq "$name.$op.wrs" "$wrs" "$(jqv "$f" "[.qps[].send.opcodes.$op.wrs // 0] | add")"
	expect_eq "$name.$op.bytes" "$bytes" "$(jqv "$f" "[.qps[].send.opcodes.$op.bytes // 0] | add")"
	expect_eq "$name.send.total" "$wrs" "$(jqv "$f" '.totals.send.wrs')"
	expect_eq "$name.cqe.errors" 0 "$(jqv "$f" '.totals.cqe.error')"
}

expect_recv() {
	expect_eq "$1.recv.wrs" "$3" "$(jqv "$2" '.totals.recv.wrs')"
	expect_eq "$1.recv.bytes" "$4" "$(jqv "$2" '.totals.recv.bytes')"
}

expect_no_send() {
	expect_eq "$1.send.total" 0 "$(jqv "$2" '.totals.send.wrs')"
}
