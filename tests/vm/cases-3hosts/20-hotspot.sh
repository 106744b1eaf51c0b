#!/bin/bash
# justbench's hot spot (Liu et al.; docs/justbench.1, "Hot spot"): one
# server on host 2 serves two clients at once (--clients 2), from hosts 0
# and 1, each streaming 64 KiB WRITEs for 3 s; once plain and once with
# both clients preloaded, each host's justitiad pacing its client.  Both
# sessions finish, both clients moved bytes, the server served both, and
# the aggregate is the two clients' sum (printed, with each share).
. tests/vm/lib.sh
. tests/vm/shimlib.sh
B=$PWD/build/justbench
SHIM=$PWD/build/libjustitia.so
PORT=18640

hotspot() { # NAME [PRELOAD]
	local name=$1 pre=${2:-} i pids=() rc=0 spid
	PORT=$((PORT + 1))
	"$B" server -p $PORT -d rxe2 -g "$RXE_GID" --clients 2 >"$JV_OUT/$name.server.out" 2>&1 &
	spid=$!
	wait_port $PORT || { _jv_result "$name.server" 0 "did not listen"; return; }
	for i in 0 1; do
		if [[ -n $pre ]]; then
			env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET=/run/jd$i/justitiad.sock \
				"$B" client "$RXE_IP2" -p $PORT -d "rxe$i" -g "$RXE_GID" -t 3s \
				-o "$JV_OUT/$name.c$i.json" bw:write:64K >"$JV_OUT/$name.c$i.out" 2>&1 &
		else
			"$B" client "$RXE_IP2" -p $PORT -d "rxe$i" -g "$RXE_GID" -t 3s \
				-o "$JV_OUT/$name.c$i.json" bw:write:64K >"$JV_OUT/$name.c$i.out" 2>&1 &
		fi
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=$?; done
	wait "$spid" || rc=$?
	expect_eq "$name.rc" 0 "$rc"
	expect_eq "$name.server.sessions" 2 "$(grep -c 'session [12] done' "$JV_OUT/$name.server.out")"
	for i in 0 1; do
		expect_eq "$name.client$i.moved" yes \
			"$(jq -r 'if (.flows[0].ok and .flows[0].bytes > 0) then "yes" else "no" end' "$JV_OUT/$name.c$i.json" 2>&1)"
	done
	read -r g0 g1 < <(jq -rs '"\(.[0].flows[0].gbps) \(.[1].flows[0].gbps)"' \
		"$JV_OUT/$name.c0.json" "$JV_OUT/$name.c1.json")
	awk -v a="$g0" -v b="$g1" -v n="$name" 'BEGIN { printf "%s: client0 %.1f Mbit/s, client1 %.1f Mbit/s, aggregate %.1f Mbit/s (smaller/larger %.2f)\n", n, a * 1000, b * 1000, (a + b) * 1000, (a < b ? a / b : b / a) }' |
		tee -a "$JV_OUT/hotspot.txt"
}

hotspot hotspot.plain

# one daemon per client host, managing its device (no peers: no latency flow)
for i in 0 1; do
	cat >"$JV_OUT/jd$i.json" <<EOT
{ "runtime_dir": "/run/jd$i", "state_dir": "$JV_OUT/jd$i-state", "qpwatch": false,
  "devices": [ { "name": "rxe$i", "gid_index": $RXE_GID } ] }
EOT
	jv_daemon_start "$JV_OUT/jd$i.json" /run/jd$i/justitiad.sock || exit 1
	eval "JD$i=$JD"
done
hotspot hotspot.shim shim
for i in 0 1; do
	expect_eq "hotspot.shim.client$i.managed" yes \
		"$(jq -r 'if .flows[0].classified_qps >= 1 then "yes" else "no: \(.flows[0].classified_qps)" end' "$JV_OUT/hotspot.shim.c$i.json")"
done
kill -TERM "$JD0" "$JD1"
wait "$JD0" "$JD1"
expect_eq hotspot.daemons.exit 0 "$?"
jv_summary
