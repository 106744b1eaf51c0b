#!/bin/bash
# Our own program posts a verified mix of WRITE, READ, SEND, WRITE_WITH_IMM
# and multi-SGE batches rxe1 -> rxe0, through ibv_wr_* and through classic
# ibv_post_send, plain and under the shim.  wrpost writes what it posted
# (--expect); the shim's report must say exactly the same.
. tests/vm/lib.sh
. tests/vm/shimlib.sh
S=$JV_OUT/stats
mkdir -p "$S"
W=build/tests/wrpost

for api in ex classic; do
	run_one "wrpost.$api.plain" $W -a "$RXE_DEV1" -b "$RXE_DEV0" -g "$RXE_GID" -n 300 --api $api
	run_one "wrpost.$api.shim" with_shim "$S/$api.json" \
		$W -a "$RXE_DEV1" -b "$RXE_DEV0" -g "$RXE_GID" -n 300 --api $api --expect "$S/$api.expect.json"
	want=$(jqv "$S/$api.expect.json" '.a.opcodes | to_entries | sort_by(.key) | map("\(.key)=\(.value.wrs)/\(.value.bytes)") | join(",")')
	qpn=$(jqv "$S/$api.expect.json" '.a.qpn')
	got=$(jqv "$S/$api.json" ".qps[] | select(.device == \"$RXE_DEV1\" and .qpn == $qpn) | .send.opcodes | to_entries | sort_by(.key) | map(\"\(.key)=\(.value.wrs)/\(.value.bytes)\") | join(\",\")")
	expect_eq "wrpost.$api.requester.opcodes" "$want" "$got"
	want=$(jqv "$S/$api.expect.json" '.a | [.opcodes[].wrs] | add')
	field=$([[ $api == ex ]] && echo wr_api_wrs || echo classic_wrs)
	expect_eq "wrpost.$api.requester.$field" "$want" "$(jqv "$S/$api.json" ".totals.send.$field")"
	want=$(jqv "$S/$api.expect.json" '.b.recv | "\(.wrs)/\(.bytes)"')
	got=$(jqv "$S/$api.json" ".qps[] | select(.device == \"$RXE_DEV0\") | .recv | \"\(.wrs)/\(.bytes)\"")
	expect_eq "wrpost.$api.responder.recv" "$want" "$got"
done
jv_summary
