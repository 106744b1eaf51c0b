#!/bin/bash
# JUSTITIA_CLASS=auto on perftest's patterns: each client QP starts as
# bandwidth (the paper's default) and the shim reclassifies it from what it
# posts.  The class a QP ends with is the last "posts like a X flow" line
# of its shim's log: "reclassified" when it changed, "class kept" when the
# first window agreed with the class it had.  No such line means the QP
# was never judged, which fails.  The bandwidth cases post more than two
# windows of 64 calls, so they are judged.
. tests/vm/lib.sh
. tests/vm/shimlib.sh
D=$PWD/build/justitiad
cat >"$JV_OUT/jc.json" <<EOF2
{ "runtime_dir": "/run/jc",
  "devices": [ { "name": "$RXE_DEV0", "gid_index": $RXE_GID } ] }
EOF2
"$D" -c "$JV_OUT/jc.json" >"$JV_OUT/jc.log" 2>&1 &
JD=$!
for _ in $(seq 100); do [ -S /run/jc/justitiad.sock ] && break; sleep 0.05; done

# NAME EXPECTED PERFTEST ARGS...: both ends under the shim with auto
classify() {
	local name=$1 want=$2 got port=$((18800 + ${#JV_N}))
	shift 2
	JV_N+=x
	run_pair "classify.$name" "$port" \
		env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET=/run/jc/justitiad.sock JUSTITIA_CLASS=auto \
		JUSTITIA_LOG=stderr "$@" -d "$RXE_DEV0" -x "$RXE_GID" -p "$port" -- \
		env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET=/run/jc/justitiad.sock JUSTITIA_CLASS=auto \
		JUSTITIA_LOG=stderr "$@" -d "$RXE_DEV0" -x "$RXE_GID" -p "$port" "$RXE_IP0"
	got=$(sed -n 's/.*posts like a \([a-z]*\) flow.*/\1/p' "$JV_OUT/classify.$name.client.out" | tail -1)
	expect_eq "classify.$name.class" "$want" "${got:-none}"
}
JV_N=
classify send_lat latency ib_send_lat -s 2 -n 1500
classify write_lat latency ib_write_lat -s 64 -n 1500
classify read_lat latency ib_read_lat -s 64 -n 1500
classify write_bw.64 throughput ib_write_bw -s 64 -n 20000
classify send_bw.256 throughput ib_send_bw -s 256 -n 20000
classify write_bw.postlist throughput ib_write_bw -s 512 -n 20000 -l 8
classify write_bw.1m bandwidth ib_write_bw -s 1048576 -n 200
classify read_bw.256k bandwidth ib_read_bw -s 262144 -n 300
kill -TERM $JD
wait $JD
jv_summary
