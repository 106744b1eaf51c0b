#!/bin/bash
# A long path (issue 14's RDMA over WAN delay): netem delays every link by
# 10 ms one way (jv_delay), so a round trip takes 20 ms and more.  Verbs keep
# working (ib_send_lat's median is at least the 10 ms), and the controller
# with target99_over_base keeps SafeUtil high while nothing competes: its
# target is the measured base plus target99_us (20 ms here: the guest's
# scheduler ticks add up to 8 ms to a p99 on this testbed, and a host busy
# with other work took a vCPU away for 14 ms more).  The same path with an
# absolute Target99 of 9 ms, below the round trip, halves SafeUtil down to
# its floor (the contrast that makes the test able to fail).  justctl
# calibrate over 8 QPs measures the link over the long path, well above one
# QP's window (calibrate --qps 1), and both again without the delay.
. tests/vm/lib.sh
. tests/vm/shimlib.sh
D=$PWD/build/justitiad
C=$PWD/build/justctl
R=$PWD/build/tests/flowreg
# (10, not 5: one QP's window over 5 ms each way, 52 Mbit/s, is about all
# a slow guest's rxe carries, so 8 QPs could not show more than one)
DELAY_MS=10
head -c 32 /dev/urandom | base64 >"$JV_OUT/secret"
chmod 600 "$JV_OUT/secret"

conf() { # NAME DEVICE PEER OVER_BASE MAX_RATE TARGET99_US
	cat >"$JV_OUT/$1.json" <<EOT
{ "runtime_dir": "/run/$1", "state_dir": "$JV_OUT/$1-state", "qpwatch": false,
  "devices": [ { "name": "$2", "gid_index": $RXE_GID, "max_rate": "$5" } ],
  "reference": { "peers": [ { "address": "$3" } ], "secret_file": "$JV_OUT/secret",
                 "always_on": true, "window": 400 },
  "controller": { "target99_us": $6, "target99_over_base": $4 } }
EOT
}
st() { "$C" -s "/run/$1/justitiad.sock" --json status | jq -r "$2"; }
wait_for() { # NAME JQ SECONDS
	local i
	for i in $(seq $(($3 * 5))); do
		[ "$(st "$1" "$2" 2>/dev/null)" = true ] && return 0
		sleep 0.2
	done
	return 1
}

jv_delay $DELAY_MS || { _jv_result netem.on 0 "tc netem failed"; jv_summary; exit 1; }
expect_eq netem.on yes "$(tc qdisc show dev veth0 | grep -q "netem.*delay ${DELAY_MS}" && echo yes)"

# verbs over the long path
run_pair sendlat.delay 18621 ib_send_lat -d "$RXE_DEV0" -x "$RXE_GID" -p 18621 -n 50 -- \
	ib_send_lat -d "$RXE_DEV1" -x "$RXE_GID" -p 18621 -n 50 "$RXE_IP0"
p50=$(awk '$1 == 2 { print $5 }' "$JV_OUT/sendlat.delay.client.out")
echo "ib_send_lat over ${DELAY_MS} ms each way: t_typical ${p50:-?} us (one way, half the round trip)"
expect_eq sendlat.delay.median yes \
	"$(awk -v v="${p50:-0}" -v d=$DELAY_MS 'BEGIN { print (v >= d * 1000 ? "yes" : "no: " v " us") }')"

# jd0 absolute Target99, jd1 over the base; each with a latency flow
conf jd0 "$RXE_DEV0" "$RXE_IP1" false 400Mbit 9000
conf jd1 "$RXE_DEV1" "$RXE_IP0" true auto 20000
"$D" -c "$JV_OUT/jd0.json" >"$JV_OUT/jd0.log" 2>&1 &
JD0=$!
"$D" -c "$JV_OUT/jd1.json" >"$JV_OUT/jd1.log" 2>&1 &
JD1=$!
for n in jd0 jd1; do
	for _ in $(seq 100); do [ -S /run/$n/justitiad.sock ] && break; sleep 0.05; done
done
"$R" /run/jd0/justitiad.sock 1 -c latency -d "$RXE_DEV0" -t 60 >"$JV_OUT/lat0.out" 2>&1 &
L0=$!
"$R" /run/jd1/justitiad.sock 1 -c latency -d "$RXE_DEV1" -t 60 >"$JV_OUT/lat1.out" 2>&1 &
L1=$!
for n in jd0 jd1; do
	wait_for $n '.controller.reference.state == "up" and .controller.reference.samples > 300' 40 ||
		echo "$n: reference flow not up: $(st $n .controller.reference)"
done
sleep 3
for n in jd0 jd1; do
	st $n .controller >"$JV_OUT/$n.controller.json"
	echo "$n: $(jq -c '{target99_ns, base_ns, current99_ns, safe_util_bps, max_rate_bps, decreases, over: .target99_over_base}' "$JV_OUT/$n.controller.json")"
done
expect_eq delay.base.measured yes \
	"$(jq -r --argjson d $((2 * DELAY_MS * 1000000)) 'if .base_ns >= $d then "yes" else "no: \(.base_ns)" end' "$JV_OUT/jd1.controller.json")"
expect_eq delay.over_base.target yes \
	"$(jq -r 'if .target99_ns == .base_ns + 20000000 then "yes" else "no: \(.target99_ns) vs \(.base_ns)" end' "$JV_OUT/jd1.controller.json")"
# SafeUtil over the controller's trace (one entry per 25 ms, the last 5 s),
# not one snapshot: a host that takes the guest's vCPUs away for tens of ms
# delays a reference sample past the target, and over this path (a sample
# per 20 ms round trip, reference.max_age_ms 1 s) that sample is the p99 of
# the window for 1 s: SafeUtil halves to the floor and climbs back in
# 100 ms once it ages out (CI failed the snapshot so once: 1 Mbit/s of
# 10 Gbit/s).  Entries with a measured Current99 count; at least a quarter
# must be at or above half of MaxRate over the base (three such stalls in
# 5 s still pass; idle runs: 160 and 200 of 200), and fewer with the
# absolute target below the round trip (the same measure, the contrast: 0).
high_share() { # NAME: "high measured max_current99_ms"
	jq -r '.max_rate_bps as $m | [.trace[] | select(.current99_ns != null)] |
		"\([.[] | select(.safe_util_bps * 2 >= $m)] | length) \(length) \(([.[].current99_ns] | max // 0) / 1000000 | floor)"' \
		"$JV_OUT/$1.controller.json"
}
declare -A HI ALL C99
for n in jd0 jd1; do
	read -r hi all c99 <<<"$(high_share $n)"
	HI[$n]=${hi:-0} ALL[$n]=${all:-0} C99[$n]=${c99:-0}
	echo "$n: SafeUtil >= MaxRate/2 in ${HI[$n]} of ${ALL[$n]} trace entries (25 ms each), highest Current99 ${C99[$n]} ms"
done
expect_eq delay.over_base.safe_util.high yes \
	"$( ((ALL[jd1] >= 20 && HI[jd1] * 4 >= ALL[jd1])) && echo yes ||
		echo "no: ${HI[jd1]} of ${ALL[jd1]} entries high, Current99 up to ${C99[jd1]} ms")"
expect_eq delay.absolute.mostly.low yes \
	"$( ((ALL[jd0] >= 20 && HI[jd0] * 4 < ALL[jd0])) && echo yes ||
		echo "no: ${HI[jd0]} of ${ALL[jd0]} entries high")"
expect_eq delay.absolute.collapses yes \
	"$(jq -r 'if .safe_util_bps * 2 < .max_rate_bps and .target99_ns == 9000000 then "yes" else "no: \(.safe_util_bps) target \(.target99_ns)" end' "$JV_OUT/jd0.controller.json")"

# calibration over the long path: a 1 s burst of 1 MiB WRITEs to the peer
# over reference.calibration_qps (8) QPs at once measures the link; one QP
# measures its window (Soft-RoCE keeps about 64 packets of a QP in flight:
# 64 KiB per round trip: 27 Mbit/s at 20 ms).  Both, with the delay and
# without it, in this boot: docs/results.md, "Issue 14, continued: a long
# path".
cal() { # LABEL [ARGS]: calibrate jd1; sets CAL_BPS and CAL_QPS
	local l=$1 rc
	shift
	"$C" -s /run/jd1/justitiad.sock calibrate "$@" >"$JV_OUT/calibrate.$l.txt" 2>&1
	rc=$?
	expect_eq calibrate.$l.ok 0 $rc
	cat "$JV_OUT/calibrate.$l.txt"
	read -r CAL_BPS CAL_QPS <<<"$(st jd1 '.controller.calibration | "\(.max_rate_bps) \(.qps)"')"
}
cal delay.default
d_n=$CAL_BPS d_nq=$CAL_QPS
cal delay.one --qps 1
d_1=$CAL_BPS d_1q=$CAL_QPS
expect_eq delay.calibrate.qps "8 1" "$d_nq $d_1q"
expect_eq delay.calibrate.qps.printed yes \
	"$(grep -q 'over 8 QPs)' "$JV_OUT/calibrate.delay.default.txt" && echo yes)"
expect_eq delay.calibrate.rate yes \
	"$(st jd1 'if .controller.max_rate_source == "calibrated" and .controller.max_rate_bps > 1000000 then "yes" else "no: \(.controller.max_rate_source) \(.controller.max_rate_bps)" end')"
# the link, not one QP's window: well above what one QP carries
expect_eq delay.calibrate.multi.above.one yes \
	"$(awk -v n="${d_n:-0}" -v o="${d_1:-0}" 'BEGIN { print (n > 1000000 && n > 1.5 * o ? "yes" : "no: " n " vs " o) }')"
jv_delay 0
sleep 1
cal nodelay.one --qps 1
z_1=$CAL_BPS z_1q=$CAL_QPS
cal nodelay.default
z_n=$CAL_BPS z_nq=$CAL_QPS
expect_eq nodelay.calibrate.qps "1 8" "$z_1q $z_nq"
expect_eq nodelay.calibrate.rate yes \
	"$(awk -v n="${z_n:-0}" -v o="${z_1:-0}" 'BEGIN { print (n > 1000000 && o > 1000000 ? "yes" : "no: " n ", " o) }')"
printf 'calibration (Mbit/s)    1 QP    8 QPs\n' | tee "$JV_OUT/calibrate.table"
awk -v a="${z_1:-0}" -v b="${z_n:-0}" -v c="${d_1:-0}" -v d="${d_n:-0}" -v ms=$DELAY_MS 'BEGIN {
	printf "no delay            %8.1f %8.1f\n", a / 1e6, b / 1e6
	printf "%d ms each way       %8.1f %8.1f\n", ms, c / 1e6, d / 1e6 }' | tee -a "$JV_OUT/calibrate.table"

kill $L0 $L1 2>/dev/null
wait $L0 $L1 2>/dev/null
kill -TERM $JD0 $JD1
rc0=0 rc1=0
wait $JD0 || rc0=$?
wait $JD1 || rc1=$?
expect_eq delay.daemons.exit.clean "0 0" "$rc0 $rc1"
expect_eq netem.off yes "$(tc qdisc show dev veth0 | grep -q netem || echo yes)"
jv_summary
