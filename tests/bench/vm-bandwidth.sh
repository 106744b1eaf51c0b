#!/bin/bash
# vm-bandwidth.sh: a lone bandwidth flow (ib_write_bw, 1 MB messages,
# rxe1 -> rxe0) natively and through the shim, in the Soft-RoCE guest.
# Runs inside tests/vm/justitia-vm --rxe (make bench does that); prints
# numbers only.  Two daemons as on two hosts, no latency flow registered,
# so the flow may use MaxRate; "split 64K" forces 64 KB chunks to show what
# splitting itself costs.  The three setups take turns, ROUNDS times, so a
# slow moment of the (noisy, emulated) host hurts them alike; the ratios
# compare medians.
set -u
cd "$(dirname "$0")/../.."
SHIM=$PWD/build/libjustitia.so
O=$(realpath -m "${BENCH_OUT:-/tmp/vm-bandwidth}") # absolute: the daemons want absolute paths
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-6}
mkdir -p "$O"
JV_RESULTS=/dev/null JV_OUT=$O . tests/vm/lib.sh

daemons() { # CHUNK_DEFAULT
	local n dev
	for n in 0 1; do
		dev=RXE_DEV$n
		cat >"$O/jd$n.json" <<EOT
{ "runtime_dir": "/run/bw$n", "log_level": "warn", "qpwatch": false,
  "devices": [ { "name": "${!dev}", "gid_index": $RXE_GID, "chunk_default": $1 } ] }
EOT
		jv_daemon_start "$O/jd$n.json" /run/bw$n/justitiad.sock || exit 1
		eval "JD$n=$JD"
	done
}

stop_daemons() {
	kill -TERM "$JD0" "$JD1" 2>/dev/null
	wait "$JD0" "$JD1" 2>/dev/null
}

# run MODE: prints the client's average MB/s
run() {
	local pre0=() pre1=() port=$((19000 + RANDOM % 500)) srv
	if [ "$1" != native ]; then
		pre0=(env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET=/run/bw0/justitiad.sock)
		pre1=(env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET=/run/bw1/justitiad.sock)
	fi
	timeout $((SECS + 60)) "${pre0[@]}" ib_write_bw -d "$RXE_DEV0" -x "$RXE_GID" -p $port \
		-s 1048576 -D "$SECS" >"$O/srv.out" 2>&1 &
	srv=$!
	wait_port $port 30 $srv >/dev/null 2>&1
	timeout $((SECS + 60)) "${pre1[@]}" ib_write_bw -d "$RXE_DEV1" -x "$RXE_GID" -p $port \
		-s 1048576 -D "$SECS" "$RXE_IP0" >"$O/cli.out" 2>&1
	wait $srv
	# (a run that failed counts as 0)
	awk '$1 == 1048576 { print $4; ok = 1 } END { if (!ok) print 0 }' "$O/cli.out"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

: >"$O/native" ; : >"$O/shim" ; : >"$O/split"
for r in $(seq "$ROUNDS"); do
	run native >>"$O/native"
	daemons 1048576
	run shim >>"$O/shim"
	stop_daemons
	daemons 65536
	run split >>"$O/split"
	stop_daemons
done
n=$(median <"$O/native")
s=$(median <"$O/shim")
p=$(median <"$O/split")
echo "lone ib_write_bw 1 MB, rxe1 -> rxe0, $ROUNDS rounds of ${SECS} s (MB/s per round):"
printf '  native           %s\n' "$(tr '\n' ' ' <"$O/native")"
printf '  shim             %s\n' "$(tr '\n' ' ' <"$O/shim")"
printf '  shim, split 64K  %s\n' "$(tr '\n' ' ' <"$O/split")"
awk -v n="$n" -v s="$s" -v p="$p" 'BEGIN {
	printf "  medians: native %.2f, shim %.2f (%.1f%%), split 64K %.2f (%.1f%%)\n",
		n, s, 100 * s / n, p, 100 * p / n }'
