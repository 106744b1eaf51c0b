#!/bin/bash
# perftest between rxe1 (client) and rxe0 (server), once plain and once with
# both sides under libjustitia.so; the shim's counts must equal what perftest
# was told to post.  (On rxe, perftest always uses classic ibv_post_send.)
. tests/vm/lib.sh
. tests/vm/shimlib.sh
S=$JV_OUT/stats
mkdir -p "$S"
PORT=18515

# pt NAME BINARY ARGS...: a plain and a preloaded server/client pair
pt() {
	local name=$1 bin=$2
	shift 2
	PORT=$((PORT + 1))
	run_pair "$name.plain" $PORT \
		"$bin" -d "$RXE_DEV0" -x "$RXE_GID" -p $PORT "$@" -- \
		"$bin" -d "$RXE_DEV1" -x "$RXE_GID" -p $PORT "$@" "$RXE_IP0"
	PORT=$((PORT + 1))
	run_pair "$name.shim" $PORT \
		with_shim "$S/$name.server.json" "$bin" -d "$RXE_DEV0" -x "$RXE_GID" -p $PORT "$@" -- \
		with_shim "$S/$name.client.json" "$bin" -d "$RXE_DEV1" -x "$RXE_GID" -p $PORT "$@" "$RXE_IP0"
}

N=2000 SZ=65536
pt write_bw ib_write_bw -s $SZ -n $N
expect_send write_bw.client "$S/write_bw.client.json" RDMA_WRITE $N $((N * SZ))
expect_no_send write_bw.server "$S/write_bw.server.json"

pt read_bw ib_read_bw -s $SZ -n 1000
expect_send read_bw.client "$S/read_bw.client.json" RDMA_READ 1000 $((1000 * SZ))
expect_no_send read_bw.server "$S/read_bw.server.json"

pt send_bw ib_send_bw -s $SZ -n $N
expect_send send_bw.client "$S/send_bw.client.json" SEND $N $((N * SZ))
expect_recv send_bw.server "$S/send_bw.server.json" $N $((N * SZ))

pt write_lat ib_write_lat -s 2 -n 1000
for side in client server; do
	expect_send "write_lat.$side" "$S/write_lat.$side.json" RDMA_WRITE 1000 2000
done

pt send_lat ib_send_lat -s 2 -n 1000
for side in client server; do
	expect_send "send_lat.$side" "$S/send_lat.$side.json" SEND 1000 2000
	expect_recv "send_lat.$side" "$S/send_lat.$side.json" 1000 2000
done
jv_summary
