#!/bin/bash
# Self-test of the Soft-RoCE guest; run it through the harness:
#   tests/vm/justitia-vm --rxe tests/vm/selftest.sh
# Checks the guest environment, then real verbs traffic rxe1 -> rxe0 over the
# veth pair: perftest over the TCP side channel, and rping over rdma_cm.
# Ends with "N passed, M failed"; the exit code is 0 only if all passed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${JUSTITIA_VM:-} != 1 || -z ${RXE_GID:-} ]]; then
	echo "selftest: run me as: tests/vm/justitia-vm --rxe $0" >&2
	exit 2
fi

check_mounts() {
	local fs
	for fs in /dev/shm:tmpfs /sys/fs/bpf:bpf /sys/kernel/tracing:tracefs \
		/sys/kernel/debug:debugfs /sys/fs/cgroup:cgroup2 /run:tmpfs; do
		[[ $(findmnt -no FSTYPE "${fs%%:*}") == "${fs#*:}" ]] || {
			echo "${fs%%:*} is not ${fs#*:}"
			return 1
		}
	done
	mkdir -p /run/justitia && touch /run/justitia/probe
}
run_one mounts check_mounts
run_one ports bash -c 'ibv_devinfo -d rxe0 | grep -q PORT_ACTIVE && ibv_devinfo -d rxe1 | grep -q PORT_ACTIVE'

run_pair ib_write_bw 18515 \
	ib_write_bw -d "$RXE_DEV0" -x "$RXE_GID" -n 200 \
	-- ib_write_bw -d "$RXE_DEV1" -x "$RXE_GID" -n 200 "$RXE_IP0"
run_pair ib_send_lat 18515 \
	ib_send_lat -d "$RXE_DEV0" -x "$RXE_GID" -n 500 \
	-- ib_send_lat -d "$RXE_DEV1" -x "$RXE_GID" -n 500 "$RXE_IP0"
run_pair rping cm:7174 \
	rping -s -a "$RXE_IP0" -V -C 5 \
	-- rping -c -a "$RXE_IP0" -V -C 5 -v

jv_summary
