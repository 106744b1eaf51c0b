#!/bin/bash
# Remote READ control (docs/peer-protocol.md section 5.4, daemon/rread.h):
# host 0 (A, rxe0) is the responder, host 1 (B, rxe1) the requester; jd0 on
# A and jd1 on B are each other's peers over an authenticated, encrypted
# channel.  jd0 shares MaxRate (40 Mbit/s, below what the READ gets alone on the
# testbed, pace_mode share).  A justbench
# client on B, preloaded, READs 1 MiB messages from a server on A:
#  - jd0 counts the remote READ flow (status, justctl flows: "remote READ
#    flows served here") and sends jd1 its share; jd1 shows the flow's
#    remote grant and the shim paces the READs to it (the READ rate is
#    printed next to the same READ without the shim);
#  - once the client exits, jd0 no longer counts it (closed: no stale
#    reservation);
#  - a throughput READ flow (64 B READs in batches of 16: a key-value GET
#    pattern) registers as class throughput: jd0 serves it with an ops/s
#    share, jd1 publishes that grant as the flow's ops rate (op/s in
#    justctl flows);
#  - with a latency flow and a bandwidth flow of A's own (pace mode
#    protect), the remote READ counts in A's B' and gets the same share of
#    SafeUtil as A's bandwidth flow;
#  - kill -9 jd1 while a READ runs: jd0 drops its flow with the channel;
#  - with no daemon on A, jd1 shows the flow unconstrained, warned
#    ("responder not managed").
# A READ flow that justbench fails for Soft-RoCE's READ stall (posts that
# neither complete nor fail, seen without Justitia too) is reported, its
# exit code not judged; its bytes and every other check are.
. tests/vm/lib.sh
. tests/vm/shimlib.sh
B=$PWD/build/justbench
SHIM=$PWD/build/libjustitia.so
MAXRATE=40000000
PORT=18700
mkdir -p "$JV_OUT"
# each QP's packets in order across the veths and the bridge (lib.sh,
# jv_inorder): Soft-RoCE's retransmissions are where it is fragile, and
# this case measures no latency
jv_inorder on
trap 'jv_inorder off' EXIT
jv_jd_secret # the daemons: tests/vm/lib.sh

# read NAME SECONDS [shim [FLOW]]: justbench READs 1 MiB messages (or FLOW)
# from A's server (rxe0) on B (rxe1) for SECONDS, preloaded with jd1's
# socket if asked; in the background (RPID, SPID)
read_flow() {
	PORT=$((PORT + 1))
	"$B" server -p $PORT -d "$RXE_DEV0" -g "$RXE_GID" >"$JV_OUT/$1.server.out" 2>&1 &
	SPID=$!
	wait_port $PORT || { _jv_result "$1.server" 0 "did not listen"; return 1; }
	if [[ -n ${3:-} ]]; then
		env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET=/run/jd1/justitiad.sock \
			"$B" client "$RXE_IP0" -p $PORT -d "$RXE_DEV1" -g "$RXE_GID" -t "$2s" \
			-o "$JV_OUT/$1.json" "${4:-bw:read:1M}" >"$JV_OUT/$1.out" 2>&1 &
	else
		"$B" client "$RXE_IP0" -p $PORT -d "$RXE_DEV1" -g "$RXE_GID" -t "$2s" \
			-o "$JV_OUT/$1.json" bw:read:1M >"$JV_OUT/$1.out" 2>&1 &
	fi
	RPID=$!
}
read_done() { # NAME: wait, check, print the rate (Mbit/s) in MBPS
	local rc=0
	wait "$RPID" || rc=$?
	wait "$SPID" || true
	STALLED=
	if ((rc)) && grep -q 'posts still in flight' "$JV_OUT/$1.out"; then
		STALLED=yes
		# Soft-RoCE's READ stall: READs that neither complete nor fail
		# (retry_cnt 7, timeout 67 ms), seen with no daemon and no shim
		# too (docs/results.md, "Issue 13: remote READ scenarios on three
		# emulated hosts"): the testbed's, not judged; the bytes moved
		# before it still are, and every other check of the case
		_jv_result "$1.rc" 1 "rc $rc: Soft-RoCE's READ stall, not judged: $(grep -o '[0-9]* posts still in flight.*' "$JV_OUT/$1.out" | head -1); rxe: $(jv_rxe_counters 'retry|seq_err|duplicate_request|out_of_seq|rnr|timeout' | tr '\n' ' ')"
	else
		expect_eq "$1.rc" 0 "$rc"
	fi
	if ((rc)); then
		echo "---- $1: client"; tail -30 "$JV_OUT/$1.out"
		echo "---- $1: server"; tail -10 "$JV_OUT/$1.server.out"
		echo "---- jd1's log"; tail -20 "$JV_OUT/jd1.log" 2>/dev/null
	fi
	MBPS=$(jq -r '.flows[0].gbps * 1000 | floor' "$JV_OUT/$1.json" 2>/dev/null)
	expect_eq "$1.moved" yes "$( ((${MBPS:-0} > 0)) && echo yes)"
}

# expect_unless_stalled NAME WANT GOT WHY: expect_eq, but after Soft-RoCE's
# READ stall (read_done set STALLED) a wrong GOT is not judged (WHY says
# what the stall did to it)
expect_unless_stalled() {
	if [ -n "$STALLED" ] && [ "$3" != "$2" ]; then
		_jv_result "$1" 1 "Soft-RoCE's READ stall, not judged: $4 (got $3)"
	else
		expect_eq "$1" "$2" "$3"
	fi
}

# waited KIND HOST COND SECONDS SEEN READ: SEEN when jv_jd_wait saw COND
# true (the verdict: a second read could miss a flow active only part of
# the time), else what READ reads after the wait
waited() {
	if jv_jd_wait "$1" "$2" "$3" "$4"; then
		echo "$5"
	else
		"jv_jd_$1" "$2" "$6"
	fi
}

# ---- the same READ without Justitia: what the link gives it
read_flow read.plain 4 && read_done read.plain
PLAIN=$MBPS

for h in 0 1; do
	jv_jd_conf $h "${MAXRATE}bit" $((1 - h)) log_level=info device.chunk_default=65536 \
		"controller.pace_mode=$([ $h = 0 ] && echo share || echo auto)"
done
jv_jd_start 0 || exit 1
jv_jd_start 1 || exit 1
# jd1's channel to jd0 up and authenticated before the READs start (on a
# slow guest its first connect may time out and back off for seconds, and
# the READ would end before jd0 knew of it)
up='.controller.reference.channel.authenticated'
jv_jd_wait st 1 "$up" 30
expect_eq daemons.channel.up true "$(jv_jd_st 1 "$up")"

# ---- registered with the responder, counted there, its grant enforced
g0=$(jv_jd_st 0 '.remote_read.messages.sent.grants')
t0=$(jv_now)
# (20 s: on a slow guest registering with jd0 and the checks below take 18)
read_flow read.shim 20 shim
jv_jd_wait st 0 '.remote_read.served.flows == 1' 20
expect_eq jd0.counts.remote.flow 1 "$(jv_jd_st 0 .remote_read.served.flows)"
jv_jd_wait fl 1 '[.flows[] | select(.remote != null) | .remote.state == "registered" and .remote.grant_bps != null] == [true]' 10
expect_eq jd0.remote.entry "read bandwidth true" \
	"$(jv_jd_fl 0 '.remote[0] | "\(.kind) \(.class) \(.share_bps > 0 and .share_bps <= '$MAXRATE' + 1)"')"
expect_eq jd0.remote.peer.is.jd1 yes \
	"$(jv_jd_fl 0 '.remote[0].peer' | grep -q "^$RXE_IP1:" && echo yes)"
expect_eq jd1.remote.registered "registered $RXE_IP0:7471" \
	"$(jv_jd_fl 1 '.flows[] | select(.remote != null) | "\(.remote.state) \(.remote.peer)"')"
# the flow's published rate is the responder's grant (jd1 alone would not pace it)
expect_eq jd1.rate.is.grant true \
	"$(jv_jd_fl 1 '[.flows[] | select(.remote != null) | .paced_rate_bps == .remote.grant_bps] == [true]')"
jv_jd_ctl 0 flows >"$JV_OUT/jd0-flows.txt"
jv_jd_ctl 1 flows >"$JV_OUT/jd1-flows.txt"
jv_jd_ctl 0 status >"$JV_OUT/jd0-status.txt"
expect_eq justctl.jd0.shows.remote yes \
	"$(grep -q "remote READ flows served here" "$JV_OUT/jd0-flows.txt" && echo yes)"
expect_eq justctl.jd1.shows.grant yes \
	"$(grep -q "remote READ: $RXE_IP0:7471 grants" "$JV_OUT/jd1-flows.txt" && echo yes)"
expect_eq justctl.jd0.status yes \
	"$(grep -q "^remote READ: *serving 1 flows" "$JV_OUT/jd0-status.txt" && echo yes)"
cat "$JV_OUT/jd0-flows.txt" "$JV_OUT/jd1-flows.txt"
# (while the READ runs: a whole 1 MiB READ every 200 ms or more, its flow
# is active at B's daemon, hence at jd0, only part of the time on a slow
# guest, so the poll that saw it counted is the verdict (a second read
# could fall between two READs: CI, once); judged after read_done: a READ
# that stalled at once is rightly not active)
IN_B=$(waited st 0 '.controller.flows.bandwidth == 1' 15 1 .controller.flows.bandwidth)
read_done read.shim
SHIMRATE=$MBPS
expect_unless_stalled jd0.remote.in.B 1 "$IN_B" "the READ was not active at jd0"
g1=$(jv_jd_st 0 '.remote_read.messages.sent.grants')
secs=$(jv_secs "$t0")
echo "READ 1 MiB, B <- A: plain $PLAIN Mbit/s, under A's grant (MaxRate $((MAXRATE / 1000000)) Mbit/s) $SHIMRATE Mbit/s"
echo "channel: $((g1 - g0)) remote_grants in ${secs}s from jd0"
# (after a stall the rate covers only the READs done before it, start-up
# included: the flow is unpaced until jd0's grant reaches jd1.  CI, once:
# 9 messages in about a second, 76 Mbit/s against 40)
expect_unless_stalled read.shim.within.grant yes \
	"$( ((SHIMRATE <= MAXRATE / 1000000 * 115 / 100)) && echo yes)" \
	"$SHIMRATE Mbit/s over the messages before it"
# ... and no stale reservation once the READ application is gone
jv_jd_wait st 0 '.remote_read.served.flows == 0' 5
expect_eq jd0.closed.after.exit "0 true" \
	"$(jv_jd_st 0 '"\(.remote_read.served.flows) \(.remote_read.served.closed >= 1)"')"

# ---- a throughput READ flow: counted in jd0's T', granted ops/s
t0=$(jv_now)
# (20 s: on a slow guest the registrations and the checks below take 6,
# and 12 were once not enough in CI: the flow had ended before justctl
# looked)
read_flow read.tput 20 shim tput:read:64:batch=16
jv_jd_wait st 0 '.remote_read.served.flows == 1' 20
jv_jd_wait fl 1 '[.flows[] | select(.remote != null) | .remote.grant_ops_per_s != null] == [true]' 10
# (justctl's view first, while the grant is known to be there)
jv_jd_ctl 1 flows >"$JV_OUT/jd1-tput.txt"
tput_seen=$(jv_secs "$t0")
expect_eq jd0.tput.entry "read throughput null true" \
	"$(jv_jd_fl 0 '.remote[0] | "\(.kind) \(.class) \(.share_bps) \(.share_ops_per_s > 0)"')"
jv_jd_wait st 0 '.controller.flows.throughput == 1' 5
expect_eq jd0.tput.in.T 1 "$(jv_jd_st 0 .controller.flows.throughput)"
expect_eq jd1.tput.registered "throughput registered null" \
	"$(jv_jd_fl 1 '.flows[] | select(.remote != null) | "\(.class) \(.remote.state) \(.remote.grant_bps)"')"
# its published ops rate is the responder's grant (jd1 alone would not pace it)
expect_eq jd1.tput.ops.is.grant true \
	"$(jv_jd_fl 1 '[.flows[] | select(.remote != null) | .paced_ops_per_s == .remote.grant_ops_per_s] == [true]')"
jv_jd_ctl 0 flows >"$JV_OUT/jd0-tput.txt"
cat "$JV_OUT/jd0-tput.txt" "$JV_OUT/jd1-tput.txt"
echo "(jd1's justctl flows read ${tput_seen}s after the flow started)"
expect_eq justctl.jd1.tput.grant.ops yes \
	"$(grep -q "remote READ: $RXE_IP0:7471 grants [0-9.]* [kMG]*op/s" "$JV_OUT/jd1-tput.txt" && echo yes)"
echo "throughput READ 64 B x16, B <- A: jd0 grants $(jv_jd_fl 1 '[.flows[] | select(.remote != null) | .remote.grant_ops_per_s][0]') op/s"
read_done read.tput
echo "throughput READ 64 B x16 under A's ops grant: $MBPS Mbit/s in $(jv_secs "$t0")s"
jv_jd_wait st 0 '.remote_read.served.flows == 0' 5
expect_eq jd0.tput.closed 0 "$(jv_jd_st 0 .remote_read.served.flows)"

# ---- A protects a latency flow (pace mode protect, a local latency and a
# local bandwidth flow registered by flowreg): the remote READ counts in
# A's B' next to the local bandwidth flow, and both get the same share of
# SafeUtil (equal weights); B's READ follows it
R=$PWD/build/tests/flowreg
g0=$(jv_jd_st 0 '.remote_read.messages.sent.grants')
t0=$(jv_now)
# (20 s: on a slow guest the waits below take 10 and more)
read_flow read.protect 20 shim
"$R" /run/jd0/justitiad.sock 1 -c latency -d "$RXE_DEV0" -t 20 >"$JV_OUT/flowreg-lat.out" 2>&1 &
FL=$!
"$R" /run/jd0/justitiad.sock 1 -c bandwidth -d "$RXE_DEV0" -a -t 20 >"$JV_OUT/flowreg-bw.out" 2>&1 &
FB=$!
# (as above, the poll that saw them is the verdict: the READ's flow is
# active only part of the time)
COUNTS=$(waited st 0 '.controller.flows.latency == 1 and .controller.flows.bandwidth == 2 and .controller.pace_mode == "protect"' 15 \
	"1 2 protect" '"\(.controller.flows.latency) \(.controller.flows.bandwidth) \(.controller.pace_mode)"')
same='([.flows[] | select(.comm == "flowreg" and .class == "bandwidth") | .paced_rate_bps][0]) as $l | .remote[0].share_bps as $r | ($l != null and $r != null and $l == $r)'
# (these two are judged after read_done: a READ that stalled early is not
# active, and an inactive flow is rightly neither counted nor given a share)
EQ=$(waited fl 0 "$same" 10 true "$same")
jv_jd_ctl 0 flows >"$JV_OUT/jd0-protect.txt"
cat "$JV_OUT/jd0-protect.txt"
echo "jd0: SafeUtil $(jv_jd_st 0 .controller.safe_util_bps) bit/s; jd1's grant $(jv_jd_fl 1 '[.flows[] | select(.remote != null) | .remote.grant_bps][0]') bit/s"
wait "$FL" "$FB"
read_done read.protect
expect_unless_stalled jd0.protect.counts "1 2 protect" "$COUNTS" "the READ was not active at jd0"
expect_unless_stalled jd0.protect.equal.shares true "$EQ" "the READ was not active at jd0"
g1=$(jv_jd_st 0 '.remote_read.messages.sent.grants')
echo "READ 1 MiB next to A's protected latency flow: $MBPS Mbit/s; channel: $((g1 - g0)) remote_grants in $(jv_secs "$t0")s from jd0"
jv_jd_wait st 0 '.remote_read.served.flows == 0' 5

# ---- the requester's daemon dies: the responder drops its flows
read_flow read.kill 15 shim
jv_jd_wait st 0 '.remote_read.served.flows == 1' 20
expect_eq jd0.counts.second.flow 1 "$(jv_jd_st 0 .remote_read.served.flows)"
kill -KILL "${JV_JDPID[1]}"
wait "${JV_JDPID[1]}" 2>/dev/null
jv_jd_wait st 0 '.remote_read.served.flows == 0' 15
expect_eq jd0.dropped.with.channel "0 true" \
	"$(jv_jd_st 0 '"\(.remote_read.served.flows) \(.remote_read.served.dropped >= 1)"')"
read_done read.kill # the shim failed open: the READ goes on

# ---- only the requester runs Justitia: unconstrained on A's side, warned
jv_jd_start 1 || exit 1
jv_jd_stop 0
expect_eq jd0.exit 0 "$JV_JDRC"
read_flow read.alone 6 shim
jv_jd_wait fl 1 '[.flows[] | select(.remote != null) | .remote.state == "unmanaged"] == [true]' 10
expect_eq jd1.alone.unmanaged "unmanaged null" \
	"$(jv_jd_fl 1 '.flows[] | select(.remote != null) | "\(.remote.state) \(.remote.grant_bps)"')"
jv_jd_ctl 1 flows >"$JV_OUT/jd1-alone.txt"
cat "$JV_OUT/jd1-alone.txt"
expect_eq justctl.jd1.warns yes \
	"$(grep -q "remote: responder not managed" "$JV_OUT/jd1-alone.txt" && echo yes)"
read_done read.alone
echo "READ 1 MiB with no daemon on A: $MBPS Mbit/s"
jv_jd_stop 1
expect_eq jd1.exit 0 "$JV_JDRC"
jv_summary
