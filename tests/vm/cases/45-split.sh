#!/bin/bash
# Splitting on real rxe, one daemon (both ends on rxe0, so the peer's split
# QP is found in the same daemon's registry): large RDMA WRITEs and READs are
# cut into chunks on split QPs, every byte still arrives (wrpost verifies
# data and receive lengths), the shim's counts still say one WR per message,
# and perftest's bandwidth tests pass with splitting forced small.
. tests/vm/lib.sh
. tests/vm/shimlib.sh
# a QP's packets in order, as on a real RNIC (lib.sh)
jv_inorder on
trap 'jv_inorder off' EXIT
D=$PWD/build/justitiad
C=$PWD/build/justctl
S=$JV_OUT/stats
mkdir -p "$S"
cat >"$JV_OUT/js.json" <<EOF2
{
  "runtime_dir": "/run/js",
  "devices": [ { "name": "$RXE_DEV0", "gid_index": $RXE_GID, "chunk_default": 32768,
                 "chunk_latency": 4096 } ],
  "controller": { "pace_mode": "share" }
}
EOF2
"$D" -c "$JV_OUT/js.json" -D flow >"$JV_OUT/js.log" 2>&1 &
JD=$!
for _ in $(seq 100); do [ -S /run/js/justitiad.sock ] && break; sleep 0.05; done
export JUSTITIA_SOCKET=/run/js/justitiad.sock

# wrpost both ends on one device: the daemon finds the peer's split QP itself.
# Through classic ibv_post_send, then through ibv_wr_* (whose batches the
# shim buffers and posts on the same paced path): every WR counted once under
# its API, every byte verified by wrpost, and chunks posted (the shim logs a
# flow's split chunks when its QP is destroyed).
split_wrpost() { # NAME API
	local name=$1 api=$2 want qpn qp field other chunks
	local ops='.opcodes | to_entries | sort_by(.key) | map("\(.key)=\(.value.wrs)/\(.value.bytes)") | join(",")'
	run_one "$name" env LD_PRELOAD="$SHIM" JUSTITIA_STATS="$S/$name.json" JUSTITIA_LOG=stderr \
		build/tests/wrpost -a "$RXE_DEV0" -b "$RXE_DEV0" -g "$RXE_GID" -n 200 -s 400000 \
		--api "$api" --expect "$S/$name.expect.json"
	qpn=$(jqv "$S/$name.expect.json" '.a.qpn')
	qp=".qps[] | select(.qpn == $qpn and .destroyed) | .send"
	expect_eq "$name.counts" "$(jqv "$S/$name.expect.json" ".a | $ops")" \
		"$(jqv "$S/$name.json" "$qp | $ops")"
	field=$([[ $api == ex ]] && echo wr_api_wrs || echo classic_wrs)
	other=$([[ $api == ex ]] && echo classic_wrs || echo wr_api_wrs)
	want=$(jqv "$S/$name.expect.json" '.a | [.opcodes[].wrs] | add')
	expect_eq "$name.$field" "$want" "$(jqv "$S/$name.json" "$qp.$field")"
	expect_eq "$name.$other" 0 "$(jqv "$S/$name.json" "$qp.$other")"
	expect_eq "$name.connected" yes \
		"$(grep -q 'pacing whole messages' "$JV_OUT/$name.out" && echo no || echo yes)"
	chunks=$(sed -n "s/.*: QP $qpn: flow [0-9]* done: .*, \([0-9]*\) split chunks$/\1/p" \
		"$JV_OUT/$name.out")
	expect_eq "$name.chunks" yes "$( ((${chunks:-0} > 0)) && echo yes || echo "no: ${chunks:-no log}")"
	# every kind was split, SEND and WRITE_WITH_IMM with the receiving
	# shim's help, and none had to go whole
	expect_eq "$name.kinds" "one_sided yes send yes write_imm yes whole 0" \
		"$(jqv "$S/$name.json" ".qps[] | select(.qpn == $qpn and .destroyed) | .split | \"one_sided \\(.one_sided > 0 | if . then \"yes\" else \"no\" end) send \\(.send > 0 | if . then \"yes\" else \"no\" end) write_imm \\(.write_imm > 0 | if . then \"yes\" else \"no\" end) whole \\(.whole)\"")"
}
split_wrpost split.wrpost classic
split_wrpost split.wrpost.ex ex

# while a large-message flow runs, the daemon shows it split, with chunks
LD_PRELOAD="$SHIM" timeout 60 ib_write_bw -d "$RXE_DEV0" -x "$RXE_GID" -p 18700 -s 1048576 -D 8 \
	>"$JV_OUT/wbw.srv" 2>&1 &
SRV=$!
wait_port 18700
LD_PRELOAD="$SHIM" timeout 60 ib_write_bw -d "$RXE_DEV0" -x "$RXE_GID" -p 18700 -s 1048576 -D 8 \
	"$RXE_IP0" >"$JV_OUT/wbw.cli" 2>&1 &
CLI=$!
# the client's flow is the one that posts: it has the chunks (TCG may take
# a few seconds to connect perftest when the host is busy)
f='[.flows[] | select(.comm == "ib_write_bw")] | max_by(.chunks)'
for _ in $(seq 40); do
	sleep 0.5
	"$C" -s /run/js/justitiad.sock --json flows >"$JV_OUT/flows.json"
	[ "$(jq -r "$f | .chunks > 15" "$JV_OUT/flows.json")" = true ] && break
done
expect_eq split.flows.state split "$(jq -r "$f | .split" "$JV_OUT/flows.json")"
expect_eq split.flows.chunks yes "$(jq -r "$f | if .chunks > 15 then \"yes\" else \"no: \(.chunks)\" end" "$JV_OUT/flows.json")"
wait $CLI
expect_eq split.write_bw.client 0 $?
wait $SRV
expect_eq split.write_bw.server 0 $?

for t in "ib_read_bw -s 1048576 -n 200" "ib_write_bw -s 262144 -n 500 --use_old_post_send" \
	"ib_write_bw -s 1048576 -n 100 -q 2"; do
	set -- $t
	name=split.$1.$2.$3
	run_pair "${name// /}" 18701 env LD_PRELOAD="$SHIM" "$@" -d "$RXE_DEV0" -x "$RXE_GID" -p 18701 -- \
		env LD_PRELOAD="$SHIM" "$@" -d "$RXE_DEV0" -x "$RXE_GID" -p 18701 "$RXE_IP0"
done
# SEND: the receiving perftest's shim exposes its buffers, the sender's
# splits; every message is still one WR, one completion, at both ends
run_pair split.send_bw 18702 env LD_PRELOAD="$SHIM" JUSTITIA_STATS="$S/sbw.srv.json" \
	ib_send_bw -s 1048576 -n 100 -d "$RXE_DEV0" -x "$RXE_GID" -p 18702 -- \
	env LD_PRELOAD="$SHIM" JUSTITIA_STATS="$S/sbw.cli.json" \
	ib_send_bw -s 1048576 -n 100 -d "$RXE_DEV0" -x "$RXE_GID" -p 18702 "$RXE_IP0"
expect_eq split.send_bw.split "yes 0" \
	"$(jqv "$S/sbw.cli.json" '[.qps[].split] | "\(map(.send) | add > 50 | if . then "yes" else "no: \(.)" end) \(map(.whole) | add)"')"
# the receiving application saw each message's full length, once
expect_eq split.send_bw.recv.len "yes" \
	"$(jqv "$S/sbw.srv.json" '.totals.cqe | if .recv >= 100 and .recv_bytes == .recv * 1048576 then "yes" else "no: \(.recv) completions, \(.recv_bytes) bytes" end')"

# rping -V (librdmacm, at most 64 KB): its server's RDMA READs and WRITEs
# split in two, data verified
run_pair split.rping cm:7176 env LD_PRELOAD="$SHIM" JUSTITIA_STATS="$S/rping.srv.json" \
	rping -s -a "$RXE_IP0" -p 7176 -V -C 20 -S 65000 -- \
	env LD_PRELOAD="$SHIM" rping -c -a "$RXE_IP0" -p 7176 -V -C 20 -S 65000
expect_eq split.rping.split yes \
	"$(jqv "$S/rping.srv.json" '[.qps[].split.one_sided] | add | if . >= 40 then "yes" else "no: \(.)" end')"

kill -TERM $JD
wait $JD
jv_summary
