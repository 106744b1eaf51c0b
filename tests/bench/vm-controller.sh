#!/bin/bash
# vm-controller.sh: the real justitiad's CPU in the Soft-RoCE guest with the
# reference flow on (RefPeriod 500 us) and 1, 64 or 1024 registered flows
# (one latency flow, the rest active bandwidth flows).  Runs inside
# tests/vm/justitia-vm --rxe (make bench does that); prints numbers only.
#
# Two daemons are each other's reference peers; jd1's CPU is measured from
# /proc over MEASURE_S seconds, user and system time apart: under Soft-RoCE
# the NIC is the kernel, so system time includes the emulated NIC's work
# for the probes (post, transmit, receive, ACK, completion), which a real
# RNIC does in hardware.  TCG emulation also makes every instruction far
# slower than on the host: compare with build/bench/bench_controller.
set -u
cd "$(dirname "$0")/../.."
D=$PWD/build/justitiad
C=$PWD/build/justctl
R=$PWD/build/tests/flowreg
O=$(realpath -m "${BENCH_OUT:-/tmp/vm-controller}") # absolute: the daemons want absolute paths
MEASURE_S=${MEASURE_S:-5}
HZ=$(getconf CLK_TCK)
mkdir -p "$O"

head -c 32 /dev/urandom | base64 >"$O/secret"
chmod 600 "$O/secret"
conf() { # NAME DEVICE LISTEN PEER
	cat >"$O/$1.json" <<EOT
{ "runtime_dir": "/run/$1", "state_dir": "$O/$1-state", "log_level": "warn",
  "qpwatch": false,
  "devices": [ { "name": "$2", "gid_index": $RXE_GID, "max_rate": "400Mbit" } ],
  "reference": { "listen_address": "$3", "peers": [ { "address": "$4" } ],
                 "secret_file": "$O/secret", "always_on": true } }
EOT
}
conf jd0 "$RXE_DEV0" "$RXE_IP0" "$RXE_IP1"
conf jd1 "$RXE_DEV1" "$RXE_IP1" "$RXE_IP0"
# an older configuration schema may lack "qpwatch": drop it then
"$D" -n -c "$O/jd0.json" >/dev/null 2>&1 || sed -i 's/"qpwatch": false,//' "$O"/jd[01].json
"$D" -c "$O/jd0.json" >"$O/jd0.log" 2>&1 &
P0=$!
"$D" -c "$O/jd1.json" >"$O/jd1.log" 2>&1 &
P1=$!
for _ in $(seq 100); do
	[ "$("$C" -s /run/jd1/justitiad.sock --json status 2>/dev/null |
		jq -r '.controller.reference.state')" = up ] && break
	sleep 0.1
done

ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }

printf 'justitiad CPU in the guest (TCG, 2 vCPUs), reference flow on, RefPeriod 500 us:\n'
for n in 0 1 64 1024; do
	pids=()
	if [ "$n" -ge 1 ]; then
		"$R" /run/jd1/justitiad.sock 1 -c latency -d "$RXE_DEV1" >/dev/null 2>&1 &
		pids+=($!)
	fi
	if [ "$n" -gt 1 ]; then
		"$R" /run/jd1/justitiad.sock $((n - 1)) -c bandwidth -d "$RXE_DEV1" -a \
			>/dev/null 2>&1 &
		pids+=($!)
	fi
	for _ in $(seq 100); do
		[ "$("$C" -s /run/jd1/justitiad.sock --json status | jq -r .counts.flows)" = "$n" ] &&
			break
		sleep 0.1
	done
	sleep 1
	s0=$("$C" -s /run/jd1/justitiad.sock --json status | jq -r '"\(.controller.steps) \(.controller.reference.samples)"')
	read -r u0 k0 <<<"$(ticks $P1)"
	sleep "$MEASURE_S"
	read -r u1 k1 <<<"$(ticks $P1)"
	s1=$("$C" -s /run/jd1/justitiad.sock --json status | jq -r '"\(.controller.steps) \(.controller.reference.samples)"')
	read -r st0 sa0 <<<"$s0"
	read -r st1 sa1 <<<"$s1"
	awk -v n="$n" -v u=$((u1 - u0)) -v k=$((k1 - k0)) -v hz="$HZ" -v s="$MEASURE_S" \
		-v steps=$((st1 - st0)) -v samples=$((sa1 - sa0)) 'BEGIN {
		printf "  %4d flows: %5.1f%% of a core (user %4.1f%%, system %4.1f%%), %4.0f steps/s, %4.0f samples/s\n",
			n, 100 * (u + k) / hz / s, 100 * u / hz / s, 100 * k / hz / s, steps / s, samples / s }'
	if [ ${#pids[@]} -gt 0 ]; then
		kill "${pids[@]}" 2>/dev/null
		wait "${pids[@]}" 2>/dev/null
	fi
done
kill -TERM $P0 $P1
wait $P0 $P1
