#!/bin/bash
# rping (librdmacm) with data verification (-V), plain and under the shim.
# Per ping, rping's client SENDs its source and sink buffer descriptions
# (struct rping_rdma_info, 16 bytes each); the server RDMA_READs the source,
# RDMA_WRITEs the sink and SENDs two 16-byte replies.
. tests/vm/lib.sh
. tests/vm/shimlib.sh
S=$JV_OUT/stats
mkdir -p "$S"
C=10 SZ=100

run_pair rping.plain cm:7174 rping -s -a "$RXE_IP0" -p 7174 -V -C $C -S $SZ -- \
	rping -c -a "$RXE_IP0" -p 7174 -V -C $C -S $SZ
run_pair rping.shim cm:7175 with_shim "$S/server.json" rping -s -a "$RXE_IP0" -p 7175 -V -C $C -S $SZ -- \
	with_shim "$S/client.json" rping -c -a "$RXE_IP0" -p 7175 -V -C $C -S $SZ

expect_eq rping.client.SEND.wrs $((2 * C)) "$(jqv "$S/client.json" '.totals.send.opcodes.SEND.wrs')"
expect_eq rping.client.SEND.bytes $((2 * C * 16)) "$(jqv "$S/client.json" '.totals.send.opcodes.SEND.bytes')"
expect_eq rping.client.send.total $((2 * C)) "$(jqv "$S/client.json" '.totals.send.wrs')"
expect_eq rping.server.RDMA_READ.bytes $((C * SZ)) "$(jqv "$S/server.json" '.totals.send.opcodes.RDMA_READ.bytes')"
expect_eq rping.server.RDMA_WRITE.bytes $((C * SZ)) "$(jqv "$S/server.json" '.totals.send.opcodes.RDMA_WRITE.bytes')"
expect_eq rping.server.SEND.wrs $((2 * C)) "$(jqv "$S/server.json" '.totals.send.opcodes.SEND.wrs')"
expect_eq rping.server.send.total $((4 * C)) "$(jqv "$S/server.json" '.totals.send.wrs')"
jv_summary
