#!/bin/bash
# Churn without leaks: 50 short-lived preloaded processes each create and
# destroy 200 RC QPs (tests/progs/qpchurn, a few alive at once), on both
# devices, every other process in the bandwidth class (each QP gets a split
# QP and loses it again) and the others in the latency class -- 10,000 QPs
# registered and unregistered.
#   churn.runs     every process churned its QPs and exited 0
#   churn.flows    `justctl flows` is empty afterwards
#   churn.rss      the daemon's RSS afterwards is within 10% of before
#   churn.fds      its open descriptors afterwards are within 10% of before
# "Before" is read after one warm-up process (first-use allocations: the
# client segments' pool, the control connection's buffers).
. tests/vm/lib.sh
. tests/vm/shimlib.sh
C=$PWD/build/justctl
Q=$PWD/build/tests/qpchurn
SOCK=/run/jc/justitiad.sock
PROCS=${CHURN_PROCS:-50}
QPS=${CHURN_QPS:-200}

cat >"$JV_OUT/jc.json" <<EOF
{
  "runtime_dir": "/run/jc",
  "devices": [
    { "name": "$RXE_DEV0", "gid_index": $RXE_GID },
    { "name": "$RXE_DEV1", "gid_index": $RXE_GID }
  ]
}
EOF

ctl() { "$C" -s "$SOCK" "$@"; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$JD/status"; }
nfds() { find "/proc/$JD/fd" -mindepth 1 -maxdepth 1 | wc -l; }
nflows() { ctl --json flows | jq '.flows | length'; }
# within10 AFTER BEFORE: AFTER <= 1.1 x BEFORE
within10() { (($1 * 10 <= $2 * 11)); }

if ! jv_daemon_start "$JV_OUT/jc.json" "$SOCK"; then
	_jv_result churn.daemon 0 "justitiad did not come up"
	jv_summary
	exit 0
fi

churn() { # NAME CLASS DEVICE QPS
	(_jv_timeout env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET="$SOCK" JUSTITIA_LOG=stderr \
		JUSTITIA_CLASS="$2" "$Q" -d "$3" -n "$4") >"$JV_OUT/$1.out" 2>&1
}

churn warmup bw "$RXE_DEV0" 20 || _jv_show "$JV_OUT/warmup.out" warmup
sleep 0.5
RSS0=$(rss_kb) FDS0=$(nfds)
t0=$(jv_now)
bad=0 badname=
for ((i = 0; i < PROCS; i++)); do
	cls=bw
	((i % 2)) && cls=lat
	dev=$RXE_DEV0
	((i % 4 >= 2)) && dev=$RXE_DEV1
	if ! churn "p$i" "$cls" "$dev" "$QPS" || ! grep -q "^churned $QPS QPs" "$JV_OUT/p$i.out"; then
		bad=$((bad + 1))
		badname=p$i
	fi
done
secs=$(jv_secs "$t0")
_jv_result churn.runs $((bad == 0)) "$PROCS processes x $QPS QPs in ${secs}s, $bad failed"
((bad)) && _jv_show "$JV_OUT/$badname.out" "$badname"
# the daemon unregisters a flow when its QP is destroyed, and a client
# when its connection closes: nothing is left once the processes are gone
no_flows() { (($(nflows) == 0)); }
jv_until 10 no_flows
expect_eq churn.flows 0 "$(nflows)"
sleep 0.5
RSS1=$(rss_kb) FDS1=$(nfds)
_jv_result churn.rss "$(within10 "$RSS1" "$RSS0" && echo 1 || echo 0)" \
	"RSS before ${RSS0} kB, after ${RSS1} kB"
_jv_result churn.fds "$(within10 "$FDS1" "$FDS0" && echo 1 || echo 0)" \
	"fds before ${FDS0}, after ${FDS1}"
echo "INFO churn: $((PROCS * QPS)) QPs in ${secs}s; daemon RSS ${RSS0} -> ${RSS1} kB, fds ${FDS0} -> ${FDS1}"
kill -TERM "$JD"
wait "$JD"
expect_eq churn.daemon.exit 0 "$?"
jv_summary
