#!/bin/bash
# Incast, the receiver's side (issue 13 item 3; docs/peer-protocol.md
# section 5.5, daemon/rread.h): hosts 0 and 1 (rxe0, rxe1) each stream
# 1 MiB WRITEs to host 2 (R, rxe2) while host 0 also runs a latency flow
# (64 B SENDs, ping-pong) to R.  Once plain (no daemons, no shim), then
# with jd0, jd1, jd2 peered over an authenticated, encrypted channel (jd2
# peers with both senders) and the clients preloaded:
#  - the senders' daemons register their flows to R with jd2 (kind recv):
#    jd2 counts 2 incoming bandwidth flows and 1 incoming latency flow
#    (status, justctl flows: "incoming flows served here") and grants each
#    bandwidth flow a share of its SafeUtil (it protects the latency flow);
#  - jd0 and jd1 show their flows' receiver-side grants (justctl flows:
#    "receiver: ... grants");
#  - every flow moves data (keeps a share); the daemons exit cleanly;
#  - reported, not asserted: the latency flow's p50/p99 and each sender's
#    rate, plain and with Justitia, and the channel's message rate.
# Soft-RoCE's "NIC" is the guest's CPUs: what this shows is the mechanism
# (registration, views, grants, enforcement), not a NIC's isolation.
. tests/vm/lib.sh
. tests/vm/shimlib.sh
B=$PWD/build/justbench
SHIM=$PWD/build/libjustitia.so
MAXRATE=${INCAST_MAXRATE:-60000000}
SECS=${INCAST_SECS:-20}
PORT=18760
mkdir -p "$JV_OUT"
jv_jd_secret # the daemons: tests/vm/lib.sh

# flow NAME HOST SECONDS SPEC [shim]: a justbench server on R (rxe2) and a
# client on HOST running SPEC for SECONDS, preloaded with jdHOST's socket if
# asked; in the background (CPIDS, SPIDS)
CPIDS=() SPIDS=()
flow() {
	local name=$1 h=$2 t=$3 spec=$4 pre=${5:-}
	PORT=$((PORT + 1))
	"$B" server -p $PORT -d "$RXE_DEV2" -g "$RXE_GID" >"$JV_OUT/$name.server.out" 2>&1 &
	SPIDS+=($!)
	wait_port $PORT || { _jv_result "$name.server" 0 "did not listen"; return 1; }
	local dev=RXE_DEV$h
	if [[ -n $pre ]]; then
		env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET=/run/jd$h/justitiad.sock \
			"$B" client "$RXE_IP2" -p $PORT -d "${!dev}" -g "$RXE_GID" -t "${t}s" \
			-o "$JV_OUT/$name.json" "$spec" >"$JV_OUT/$name.out" 2>&1 &
	else
		"$B" client "$RXE_IP2" -p $PORT -d "${!dev}" -g "$RXE_GID" -t "${t}s" \
			-o "$JV_OUT/$name.json" "$spec" >"$JV_OUT/$name.out" 2>&1 &
	fi
	CPIDS+=($!)
}

# incast RUN [shim]: the three flows at once (the bandwidth flows first and
# 4 s longer: the latency flow runs next to both all along)
incast() {
	CPIDS=() SPIDS=()
	flow "$1.bw0" 0 $((SECS + 4)) bw:write:1M ${2:-}
	flow "$1.bw1" 1 $((SECS + 4)) bw:write:1M ${2:-}
	flow "$1.lat" 0 "$SECS" lat:send:64 ${2:-}
}
incast_done() { # RUN: wait, check, report
	local rc=0 p f
	for p in "${CPIDS[@]}"; do wait "$p" || rc=$?; done
	for p in "${SPIDS[@]}"; do wait "$p" || true; done
	expect_eq "$1.rc" 0 "$rc"
	for f in lat bw0 bw1; do
		expect_eq "$1.$f.moved" yes \
			"$(jq -r 'if (.flows[0].ok and .flows[0].bytes > 0) then "yes" else "no" end' "$JV_OUT/$1.$f.json" 2>&1)"
		((rc)) && { echo "---- $1.$f"; tail -20 "$JV_OUT/$1.$f.out"; }
	done
	jq -r --arg n "$1" '"\($n): latency flow p50 \(.flows[0].latency_ns.p50 / 1000 | floor) us, p99 \(.flows[0].latency_ns.p99 / 1000 | floor) us"' \
		"$JV_OUT/$1.lat.json" | tee -a "$JV_OUT/incast.txt"
	jq -rs --arg n "$1" '"\($n): sender 0 \(.[0].flows[0].gbps * 1000 * 10 | floor / 10) Mbit/s, sender 1 \(.[1].flows[0].gbps * 1000 * 10 | floor / 10) Mbit/s"' \
		"$JV_OUT/$1.bw0.json" "$JV_OUT/$1.bw1.json" | tee -a "$JV_OUT/incast.txt"
}

# ---- plain: no daemons, no shim
incast incast.plain
incast_done incast.plain

# ---- Justitia: jd2 (R) peers with both senders
for h in 0 1 2; do
	jv_jd_conf $h "${MAXRATE}bit" "$([ $h = 2 ] && echo 0 1 || echo 2)" log_level=info \
		device.chunk_default=65536
done
jv_jd_start 2 || exit 1
jv_jd_start 0 || exit 1
jv_jd_start 1 || exit 1
sleep 3 # the channels come up (a late one registers the flows when it does)
g0=$(jv_jd_st 2 '.remote_read.messages.sent.grants')
o0=$(( $(jv_jd_st 0 '.remote_read.messages.sent.open') + $(jv_jd_st 1 '.remote_read.messages.sent.open') ))
t0=$(jv_now)
incast incast.shim shim
in='.remote_read.served.incoming'
share='[.remote[] | select(.kind == "recv" and .class == "bandwidth") | .share_bps > 0] | (length >= 2 and all)'
got='[.flows[] | select(.remote != null and .remote.kind == "recv" and .class == "bandwidth") | .remote.grant_bps != null and .paced_rate_bps != null and .paced_rate_bps <= .remote.grant_bps] | (length >= 1 and all)'
jv_jd_wait st 2 "$in.bandwidth >= 2 and $in.latency >= 1" 30
jv_jd_wait fl 2 "$share" 10
jv_jd_wait fl 0 "$got" 10
jv_jd_wait fl 1 "$got" 10
# one snapshot of everything, checked afterwards (the flows run meanwhile)
for n in jd2 jd0 jd1; do
	jv_jd_ctl ${n#jd} --json flows >"$JV_OUT/$n-flows.json"
	jv_jd_ctl ${n#jd} flows >"$JV_OUT/$n-flows.txt"
done
jv_jd_ctl 2 --json status >"$JV_OUT/jd2-status.json"
jv_jd_ctl 2 status >"$JV_OUT/jd2-status.txt"
S2=$JV_OUT/jd2-status.json
expect_eq jd2.incoming.seen true "$(jq -r "$in.bandwidth >= 2 and $in.latency >= 1" "$S2")"
# the incoming latency flow is L' on R: its reference flow runs, SafeUtil adapts
expect_eq jd2.protects.incoming.latency true "$(jq -r '.controller.flows.latency >= 1' "$S2")"
expect_eq jd2.grants.shares true "$(jq -r "$share" "$JV_OUT/jd2-flows.json")"
for h in 0 1; do
	expect_eq "jd$h.receiver.grant" true "$(jq -r "$got" "$JV_OUT/jd$h-flows.json")"
done
expect_eq justctl.jd2.shows.incoming yes \
	"$(grep -q "incoming flows served here" "$JV_OUT/jd2-flows.txt" && echo yes)"
expect_eq justctl.jd2.status yes \
	"$(grep -q "^incoming: .* latency, .* bandwidth flows of other hosts arrive here" "$JV_OUT/jd2-status.txt" && echo yes)"
for h in 0 1; do
	expect_eq "justctl.jd$h.shows.grant" yes \
		"$(grep -q "receiver: $RXE_IP2:7471 grants" "$JV_OUT/jd$h-flows.txt" && echo yes)"
done
cat "$JV_OUT/jd2-flows.txt" "$JV_OUT/jd0-flows.txt" "$JV_OUT/jd1-flows.txt"
grep -E "^(incoming|remote READ):" "$JV_OUT/jd2-status.txt"
echo "jd2: SafeUtil $(jq -r .controller.safe_util_bps "$S2") bit/s, L $(jq -r .controller.flows.latency "$S2"), B $(jq -r .controller.flows.bandwidth "$S2"), shares $(jq -r '[.remote[] | select(.class == "bandwidth") | .share_bps] | map(tostring) | join(", ")' "$JV_OUT/jd2-flows.json") bit/s" |
	tee -a "$JV_OUT/incast.txt"
incast_done incast.shim
g1=$(jv_jd_st 2 '.remote_read.messages.sent.grants')
o1=$(( $(jv_jd_st 0 '.remote_read.messages.sent.open') + $(jv_jd_st 1 '.remote_read.messages.sent.open') ))
secs=$(jv_secs "$t0")
echo "channel: $((g1 - g0)) remote_grants from jd2 and $((o1 - o0)) remote_open from jd0+jd1 in ${secs}s (MaxRate $((MAXRATE / 1000000)) Mbit/s)" |
	tee -a "$JV_OUT/incast.txt"
# ... and no stale views once the senders' applications are gone
jv_jd_wait st 2 '.remote_read.served.flows == 0' 10
expect_eq jd2.closed.after.exit 0 "$(jv_jd_st 2 .remote_read.served.flows)"
jv_jd_stop 0 1 2
read -ra rc <<<"$JV_JDRC"
for h in 0 1 2; do expect_eq "jd$h.exit" 0 "${rc[h]}"; done
cat "$JV_OUT/incast.txt"
jv_summary
