#!/bin/bash
# The N-host testbed (justitia-vm --hosts 3, tests/vm/README.md): three
# emulated hosts whose links meet in a bridge.  Every pair talks over real
# verbs, and the bytes cross the links they should: an incast (rxe0 and
# rxe1 both WRITE to rxe2 at once) leaves through veth0 and veth1 and
# arrives through veth2 only, never over lo; rdma_cm (rping) resolves
# routes between hosts 1 and 2, and host 2 reaches host 0.
. tests/vm/lib.sh
. tests/vm/shimlib.sh
N=400 SZ=65536 BYTES=$((400 * 65536))

expect_eq hosts.count 3 "${RXE_HOSTS:-unset}"
for i in 0 1 2; do
	dev=RXE_DEV$i ip=RXE_IP$i
	expect_eq "host$i.env" "rxe$i 10.233.0.$((i + 1))" "${!dev:-} ${!ip:-}"
	expect_eq "host$i.active" yes \
		"$(grep -q ACTIVE "/sys/class/infiniband/rxe$i/ports/1/state" && echo yes)"
done

ctr() { cat "/sys/class/net/$1/statistics/$2"; } # DEV COUNTER
declare -A before
for n in veth0 veth1 veth2 lo; do
	for c in tx_bytes rx_bytes; do before[$n.$c]=$(ctr $n $c); done
done
delta() { echo $(($(ctr "$1" "$2") - before[$1.$2])); }

# incast: two senders, one receiver, at once
ib_write_bw -d rxe2 -x "$RXE_GID" -p 18611 -s $SZ -n $N >"$JV_OUT/incast.s0.out" 2>&1 &
S0=$!
ib_write_bw -d rxe2 -x "$RXE_GID" -p 18612 -s $SZ -n $N >"$JV_OUT/incast.s1.out" 2>&1 &
S1=$!
wait_port 18611 && wait_port 18612
ib_write_bw -d rxe0 -x "$RXE_GID" -p 18611 -s $SZ -n $N "$RXE_IP2" >"$JV_OUT/incast.c0.out" 2>&1 &
C0=$!
ib_write_bw -d rxe1 -x "$RXE_GID" -p 18612 -s $SZ -n $N "$RXE_IP2" >"$JV_OUT/incast.c1.out" 2>&1 &
C1=$!
rc=0
for p in $C0 $C1 $S0 $S1; do wait $p || rc=$?; done
expect_eq incast.rc 0 "$rc"
for f in c0 c1; do
	expect_eq "incast.$f.moved" yes "$(awk -v sz=$SZ '$1 == sz && $2 > 0 { ok = 1 } END { print ok ? "yes" : "no" }' "$JV_OUT/incast.$f.out")"
done
echo "links: veth0 tx $(delta veth0 tx_bytes), veth1 tx $(delta veth1 tx_bytes), veth2 rx $(delta veth2 rx_bytes), lo tx $(delta lo tx_bytes) bytes"
expect_eq incast.left.veth0 yes "$( (($(delta veth0 tx_bytes) >= BYTES)) && echo yes)"
expect_eq incast.left.veth1 yes "$( (($(delta veth1 tx_bytes) >= BYTES)) && echo yes)"
expect_eq incast.arrived.veth2 yes "$( (($(delta veth2 rx_bytes) >= 2 * BYTES)) && echo yes)"
expect_eq incast.not.on.lo yes "$( (($(delta lo tx_bytes) < BYTES / 10)) && echo yes)"

# rdma_cm between hosts 1 and 2, data verified
run_pair rping.1to2 cm:7180 rping -s -a "$RXE_IP2" -p 7180 -V -C 20 -S 4096 -- \
	rping -c -a "$RXE_IP2" -I "$RXE_IP1" -p 7180 -V -C 20 -S 4096
# host 2 to host 0, small messages
run_pair sendlat.2to0 18613 ib_send_lat -d rxe0 -x "$RXE_GID" -p 18613 -n 200 -- \
	ib_send_lat -d rxe2 -x "$RXE_GID" -p 18613 -n 200 "$RXE_IP0"
jv_summary
