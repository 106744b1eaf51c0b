#!/bin/bash
# Pace modes (docs/justitiad.json.5.md): with the daemon's default
# pace_mode "auto" and no latency flow, a lone bandwidth flow pays nothing:
# a preloaded 1 MiB ib_write_bw posts every WR straight to the provider (0
# split, 0 chunks at the daemon) although chunk_default would split it, at
# most the direct window in flight (what perftest queues beyond it waits in
# the shim's backlog).  Then our integrity program (seeded WRITE,
# READ, SEND, WRITE_WITH_IMM up to 1 MiB, every byte verified, completion
# order checked) runs preloaded, once per post API, while a latency flow
# comes and goes: the mode goes off -> protect -> off, the program's
# messages are split only while the latency flow is there, and nothing is
# lost or reordered across both switches.  Last, with pace mode share
# forced, a lone paced 64 KiB ib_write_bw keeps at most the window in
# flight too.  Directions and structure only.
. tests/vm/lib.sh
. tests/vm/shimlib.sh
D=$PWD/build/justitiad
C=$PWD/build/justctl
R=$PWD/build/tests/flowreg
P=$PWD/build/tests/integrity
S=$JV_OUT/stats
SOCK=/run/jm/justitiad.sock
SEED=20261124
mkdir -p "$S"
jv_split_conf "$JV_OUT/jm.json" /run/jm
"$D" -c "$JV_OUT/jm.json" -D flow,ctrl >"$JV_OUT/jm.log" 2>&1 &
JD=$!
for _ in $(seq 100); do [ -S $SOCK ] && break; sleep 0.05; done
export JUSTITIA_SOCKET=$SOCK
st() { "$C" -s $SOCK --json status | jq -r "$1"; }
# wait_mode MODE SECONDS: until the controller is in MODE; prints it
wait_mode() {
	local m end=$((SECONDS + $2))
	while :; do
		m=$(st .controller.pace_mode)
		[[ $m == "$1" ]] || ((SECONDS >= end)) && break
		sleep 0.1
	done
	echo "$m"
}
# chunks PROG: the split chunks the daemon counts for PROG's flows now
chunks() {
	"$C" -s $SOCK --json flows 2>/dev/null |
		jq "[.flows[] | select(.comm == \"$1\") | .chunks] | add // 0" 2>/dev/null
}

expect_eq mode.idle off "$(st .controller.pace_mode)"

# wbw TAG PORT SIZE: a preloaded ib_write_bw pair of SIZE-byte messages
# for 4 s, rxe1 -> rxe0, in the background (SRV, CLI: their pids; output
# and JUSTITIA_STATS in TAG.srv/.cli and $S/TAG.srv/.cli.json)
wbw() {
	LD_PRELOAD="$SHIM" JUSTITIA_STATS="$S/$1.srv.json" timeout 60 ib_write_bw -d "$RXE_DEV0" \
		-x "$RXE_GID" -p "$2" -s "$3" -D 4 >"$JV_OUT/$1.srv" 2>&1 &
	SRV=$!
	wait_port "$2"
	LD_PRELOAD="$SHIM" JUSTITIA_STATS="$S/$1.cli.json" timeout 60 ib_write_bw -d "$RXE_DEV1" \
		-x "$RXE_GID" -p "$2" -s "$3" -D 4 "$RXE_IP0" >"$JV_OUT/$1.cli" 2>&1 &
	CLI=$!
}

# ---- a lone 1 MiB ib_write_bw: nothing split, windowed
wbw wbw 18760 1048576
maxc=0
mode_seen=""
while kill -0 $CLI 2>/dev/null; do
	c=$(chunks ib_write_bw)
	[[ $c =~ ^[0-9]+$ ]] && ((c > maxc)) && maxc=$c
	m=$(st .controller.pace_mode)
	[[ " $mode_seen " == *" $m "* ]] || mode_seen="$mode_seen $m"
	sleep 0.5
done
wait $CLI
expect_eq lone.write_bw.client 0 $?
wait $SRV
expect_eq lone.write_bw.server 0 $?
expect_eq lone.mode off "${mode_seen# }"
expect_eq lone.daemon.chunks 0 "$maxc"
q='[.qps[] | select(.send.wrs > 0)]'
expect_eq lone.posted yes "$(jqv "$S/wbw.cli.json" "$q | if length > 0 and (map(.send.opcodes.RDMA_WRITE.wrs) | add) > 0 then \"yes\" else \"no\" end")"
# no WR waited for a token; the direct window (JUSTITIA_WINDOW, 4 MiB) held
# what perftest queued beyond it: 128 MiB would otherwise sit in rxe's
# send queue
expect_eq lone.held 0 "$(jqv "$S/wbw.cli.json" "$q | map(.held) | add")"
expect_eq lone.windowed yes "$(jqv "$S/wbw.cli.json" "$q | if (map(.window_held) | add) > 0 then \"yes\" else \"no\" end")"
expect_eq lone.split 0 "$(jqv "$S/wbw.cli.json" "$q | map(.split.one_sided + .split.send + .split.write_imm) | add")"
echo "INFO lone 1 MiB ib_write_bw through the shim, pace mode off:" \
	"$(awk '$1 == 1048576 { print $4 " MB/s" }' "$JV_OUT/wbw.cli")"

# field OUT KEY: KEY=VALUE from integrity's summary line
field() {
	sed -n "s/^integrity: api=.* $2=\([^ ]*\).*/\1/p" "$1"
}

# ---- integrity across off -> protect -> off, both post APIs
JV_TIMEOUT=400
for api in classic ex; do
	t=pacemode.$api
	args=(-a "$RXE_DEV1" -b "$RXE_DEV0" -g "$RXE_GID" -S "$SEED" --api "$api" --max-size 1M
	      --bytes 1G --depth 8)
	env LD_PRELOAD="$SHIM" JUSTITIA_STATS="$S/$t.json" JUSTITIA_LOG=stderr \
		timeout $JV_TIMEOUT "$P" "${args[@]}" --order "$S/$t.order" >"$JV_OUT/$t.out" 2>&1 &
	IP=$!
	# off: the program runs alone, unsplit
	sleep 3
	expect_eq "$t.before.mode" off "$(wait_mode off 5)"
	c0=$(chunks integrity)
	expect_eq "$t.before.chunks" 0 "$c0"
	# a latency flow arrives: protect, and the program's messages split
	"$R" $SOCK 1 -c latency -d "$RXE_DEV1" -t 6 >"$JV_OUT/$t.lat.out" 2>&1 &
	LAT=$!
	expect_eq "$t.during.mode" protect "$(wait_mode protect 10)"
	c1=0
	for _ in $(seq 40); do
		c1=$(chunks integrity)
		[[ $c1 =~ ^[0-9]+$ ]] && ((c1 > 0)) && break
		sleep 0.25
	done
	expect_eq "$t.during.split" yes "$( ((c1 > 0)) && echo yes || echo "no: $c1")"
	# it leaves: off again, and no more chunks once the backlog drained
	wait $LAT
	expect_eq "$t.after.mode" off "$(wait_mode off 10)"
	sleep 2
	c2=$(chunks integrity)
	sleep 2
	c3=$(chunks integrity)
	if kill -0 $IP 2>/dev/null; then
		expect_eq "$t.after.no_more_chunks" "$c2" "$c3"
	else
		expect_eq "$t.after.still_running" yes "no: integrity ended before the check"
	fi
	wait $IP
	expect_eq "$t.rc" 0 $?
	o=$JV_OUT/$t.out
	expect_eq "$t.corrupted" 0 "$(field "$o" corrupted)"
	expect_eq "$t.errors" 0 "$(field "$o" errors)"
	expect_eq "$t.counts" "$(field "$o" msgs)/$(field "$o" recvs)" \
		"$(jqv "$S/$t.json" '"\(.totals.send.wrs)/\(.totals.recv.wrs)"')"
	echo "INFO $t: $(field "$o" msgs) messages, $(field "$o" bytes) bytes in" \
		"$(field "$o" elapsed) s; chunks: $c0 before, >= $c1 during, $c2 -> $c3 after"
done
grep -E "pace mode" "$JV_OUT/jm.log" | sed 's/^/INFO daemon: /'
kill -TERM $JD
wait $JD
expect_eq daemon.exit 0 $?

# ---- pace mode share (forced), a lone 64 KiB ib_write_bw: paced (its
# grant, MaxRate 10 Gbit/s, is far above what rxe carries, so no WR waits
# for a token), and its whole WRs go through the window as a direct QP's
# do: what perftest queues beyond JUSTITIA_WINDOW (4 MiB, 64 of its 128
# messages) waits in the shim, not in rxe's send queue
SOCK=/run/jms/justitiad.sock
dev_conf() { echo "{ \"name\": \"$1\", \"gid_index\": $RXE_GID, \"max_rate\": \"10000Mbit\" }"; }
cat >"$JV_OUT/jms.json" <<EOT
{ "runtime_dir": "/run/jms",
  "devices": [ $(dev_conf "$RXE_DEV0"), $(dev_conf "$RXE_DEV1") ],
  "controller": { "pace_mode": "share" } }
EOT
"$D" -c "$JV_OUT/jms.json" -D flow,ctrl >"$JV_OUT/jms.log" 2>&1 &
JD=$!
for _ in $(seq 100); do [ -S $SOCK ] && break; sleep 0.05; done
export JUSTITIA_SOCKET=$SOCK
wbw share 18761 65536
paced=no
while kill -0 $CLI 2>/dev/null; do
	r=$("$C" -s $SOCK --json flows 2>/dev/null |
		jq '[.flows[] | select(.comm == "ib_write_bw") | .paced_rate_bps // 0] | max // 0' 2>/dev/null)
	[[ $r =~ ^[0-9]+$ ]] && ((r > 0)) && paced=yes
	sleep 0.5
done
wait $CLI
expect_eq share.write_bw.client 0 $?
wait $SRV
expect_eq share.write_bw.server 0 $?
expect_eq share.mode share "$(st .controller.pace_mode)"
expect_eq share.paced yes "$paced"
q='[.qps[] | select(.send.wrs > 0)]'
expect_eq share.windowed yes "$(jqv "$S/share.cli.json" "$q | if (map(.window_held) | add) > 0 then \"yes\" else \"no\" end")"
expect_eq share.split 0 "$(jqv "$S/share.cli.json" "$q | map(.split.one_sided + .split.send + .split.write_imm) | add")"
echo "INFO lone 64 KiB ib_write_bw through the shim, pace mode share:" \
	"$(awk '$1 == 65536 { print $4 " MB/s" }' "$JV_OUT/share.cli")"
kill -TERM $JD
wait $JD
expect_eq daemon.share.exit 0 $?
jv_summary
