#!/bin/bash
# The kernel-side QP watcher (docs/qpwatch.md) on real rxe:
#  - a plain perftest (no shim) shows up in `flows --all` as unmanaged, with
#    the pid and QPN that perftest itself prints and `rdma resource show qp`
#    lists; the daemon warns once per process; after exit the QPs are gone;
#  - the same perftest under libjustitia.so is managed: no unmanaged entry,
#    no warning;
#  - QPs that existed before the daemon started come from RDMA netlink, and a
#    daemon configured for one device ignores the other's QPs;
#  - "qpwatch": false keeps it off; a reload turns it on;
#  - capabilities: the systemd unit's bounding set, a non-root daemon with
#    CAP_BPF+CAP_PERFMON(+CAP_SYS_ADMIN), the kprobe fallback when
#    kernel.perf_event_paranoid allows it, and a clean "off" without them.
. tests/vm/lib.sh
. tests/vm/shimlib.sh
D=${JUSTITIAD:-$PWD/build/justitiad}
C=${JUSTCTL:-$PWD/build/justctl}
WRPOST=${WRPOST:-$PWD/build/tests/wrpost}
LISTEN=7600 # each daemon gets its own reference.listen_port
trap 'kill $(jobs -p) 2>/dev/null' EXIT # nothing of ours outlives a failed check

conf() { # NAME DIR [EXTRA_JSON_MEMBERS]
	LISTEN=$((LISTEN + 1))
	cat >"$JV_OUT/$1.json" <<EOF
{
  "runtime_dir": "$2",
  "log_level": "info",
  "reference": { "listen_port": $LISTEN }${3:+,
  $3}
}
EOF
}

# start_daemon NAME DIR [WRAPPER...]: run the daemon (under WRAPPER, e.g.
# setpriv) with -D bpf; PID_<NAME> is its pid
start_daemon() {
	local n=$1 dir=$2
	shift 2
	"$@" "$D" -c "$JV_OUT/$n.json" -D bpf >"$JV_OUT/$n.log" 2>&1 &
	eval "PID_$n=$!"
	for _ in $(seq 200); do
		[ -S "$dir/justitiad.sock" ] && "$C" -s "$dir/justitiad.sock" version >/dev/null 2>&1 &&
			return 0
		sleep 0.05
	done
	echo "daemon $n did not come up:"
	cat "$JV_OUT/$n.log"
	return 1
}

stop_daemon() { # NAME
	local p
	p=$(eval echo "\$PID_$1")
	kill -TERM "$p" 2>/dev/null
	wait "$p" 2>/dev/null
}

ctl() { # DIR ARGS...
	local d=$1
	shift
	"$C" -s "$d/justitiad.sock" "$@"
}

st() { # DIR JQ: a value from status
	ctl "$1" --json status | jq -r "$2"
}

fl() { # DIR JQ: a value from flows --all
	ctl "$1" --json flows --all | jq -r "$2"
}

# wait_for SECONDS 'SHELL CONDITION': until it holds (evaluated each time)
wait_for() {
	for _ in $(seq $(($1 * 10))); do
		eval "$2" && return 0
		sleep 0.1
	done
	return 1
}

# snapshot DIR NAME: flows --all, status and `rdma resource show qp` at once,
# into $JV_OUT/NAME.{flows,status,rdma}.json
snapshot() {
	ctl "$1" --json flows --all >"$JV_OUT/$2.flows.json"
	ctl "$1" --json status >"$JV_OUT/$2.status.json"
	rdma -j res show qp >"$JV_OUT/$2.rdma.json"
}

# lqpns NAME PID DEV: the QPNs the snapshot's rdma output gives PID on DEV
lqpns() {
	jq -r ".[] | select(.pid == $2 and .ifname == \"$3\") | .lqpn" "$JV_OUT/$1.rdma.json"
}

# unmanaged NAME PID: "DEV QPN TYPE COMM SEEN_BY" of PID's unmanaged QPs
unmanaged() {
	jq -r ".flows[] | select(.managed == false and .pid == $2) |
		\"\(.device) \(.qpn) \(.qp_type) \(.comm) \(.seen_by)\"" "$JV_OUT/$1.flows.json"
}

# perftest's own "local address: ... QPN 0x0011" as a decimal number
pt_qpn() {
	printf '%d' "$(sed -n 's/.*local address:.* QPN \(0x[0-9a-fA-F]*\).*/\1/p' "$1" | head -1)"
}

# ---------------------------------------------------------------- as root
R=/run/jq
conf jq "$R"
start_daemon jq "$R" || exit 1
expect_eq root.on "on fentry null" "$(st "$R" '"\(.qpwatch.state) \(.qpwatch.mode) \(.qpwatch.reason)"')"
expect_eq root.log.on 1 "$(grep -c 'QP watcher on (fentry' "$JV_OUT/jq.log")"

# ---- a plain perftest is unmanaged, with perftest's and rdma's QPN
ib_write_bw -d "$RXE_DEV0" -x "$RXE_GID" -p 18700 -D 8 >"$JV_OUT/plain.srv" 2>&1 &
SRV=$!
wait_port 18700 20 "$SRV"
ib_write_bw -d "$RXE_DEV1" -x "$RXE_GID" -p 18700 -D 8 "$RXE_IP0" >"$JV_OUT/plain.cli" 2>&1 &
CLI=$!
wait_for 15 '[ "$(fl "$R" "[.flows[] | select(.managed == false)] | length")" = 2 ]'
snapshot "$R" plain
ctl "$R" flows --all >"$JV_OUT/plain.flows.txt"
ctl "$R" flows >"$JV_OUT/plain.flows-default.txt"
CLIQPN=$(lqpns plain $CLI "$RXE_DEV1")
SRVQPN=$(lqpns plain $SRV "$RXE_DEV0")
expect_eq plain.client.unmanaged "$RXE_DEV1 $CLIQPN RC ib_write_bw bpf" "$(unmanaged plain $CLI)"
expect_eq plain.server.unmanaged "$RXE_DEV0 $SRVQPN RC ib_write_bw bpf" "$(unmanaged plain $SRV)"
expect_eq plain.status "2 2 0 on" \
	"$(jq -r '"\(.counts.unmanaged) \(.qpwatch.qps) \(.counts.flows) \(.qpwatch.state)"' "$JV_OUT/plain.status.json")"
expect_eq plain.text.unmanaged 2 "$(grep -c ' ib_write_bw .* unmanaged$' "$JV_OUT/plain.flows.txt")"
expect_eq plain.text.default "no flows" "$(cat "$JV_OUT/plain.flows-default.txt")"
wait $CLI
expect_eq plain.client.rc 0 $?
wait $SRV
expect_eq plain.server.rc 0 $?
expect_eq plain.client.qpn.perftest "$(pt_qpn "$JV_OUT/plain.cli")" "$CLIQPN"
expect_eq plain.server.qpn.perftest "$(pt_qpn "$JV_OUT/plain.srv")" "$SRVQPN"
expect_eq plain.warned.once "1 1" \
	"$(grep -c "pid $CLI (ib_write_bw) uses RDMA without the Justitia shim: RC QP $CLIQPN on $RXE_DEV1 " "$JV_OUT/jq.log") $(grep -c "pid $SRV (ib_write_bw) uses RDMA without" "$JV_OUT/jq.log")"
wait_for 5 '[ "$(st "$R" .qpwatch.qps)" = 0 ]'
expect_eq plain.gone "0 0" "$(st "$R" '"\(.qpwatch.qps) \(.counts.unmanaged)"')"
expect_eq plain.destroy.seen 1 \
	"$(grep -c "QP $CLIQPN on $RXE_DEV1 destroyed (by pid $CLI)" "$JV_OUT/jq.log")"

# ---- the same perftest under the shim is managed (the shim's split QPs too)
# only ever run in the background (shim CMD... &): exec makes $! CMD's pid
shim() { exec env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET="$R/justitiad.sock" "$@"; }
shim ib_write_bw -d "$RXE_DEV0" -x "$RXE_GID" -p 18701 -D 8 >"$JV_OUT/shim.srv" 2>&1 &
SRV=$!
wait_port 18701 20 "$SRV"
shim ib_write_bw -d "$RXE_DEV1" -x "$RXE_GID" -p 18701 -D 8 "$RXE_IP0" >"$JV_OUT/shim.cli" 2>&1 &
CLI=$!
wait_for 15 '[ "$(fl "$R" "[.flows[] | select(.pid == $CLI and .managed)] | length")" -ge 1 ]'
sleep 1.5 # past the grace period
snapshot "$R" shim
QPS=$(jq '[.[] | select(.pid == '$CLI' or .pid == '$SRV')] | length' "$JV_OUT/shim.rdma.json")
expect_eq shim.client.flow "1 yes" \
	"$(jq -r "[.flows[] | select(.pid == $CLI and .managed == true and .device == \"$RXE_DEV1\")] |
		\"\(length) \(if .[0].qpn | IN($(lqpns shim $CLI "$RXE_DEV1" | paste -sd,)) then \"yes\" else .[0].qpn end)\"" \
		"$JV_OUT/shim.flows.json")"
expect_eq shim.no.unmanaged 0 "$(jq '[.flows[] | select(.managed == false)] | length' "$JV_OUT/shim.flows.json")"
expect_eq shim.status "0 $QPS" \
	"$(jq -r '"\(.counts.unmanaged) \(.qpwatch.qps)"' "$JV_OUT/shim.status.json")"
wait $CLI
expect_eq shim.client.rc 0 $?
wait $SRV
expect_eq shim.server.rc 0 $?
expect_eq shim.no.warning 0 "$(grep -c "pid \($CLI\|$SRV\) (ib_write_bw) uses RDMA without" "$JV_OUT/jq.log")"
wait_for 5 '[ "$(st "$R" .qpwatch.qps)" = 0 ]'
expect_eq shim.gone "0 0" "$(st "$R" '"\(.qpwatch.qps) \(.counts.unmanaged)"')"

# ---- QPs older than the daemon: listed by RDMA netlink at start (by a daemon
# configured for rxe1 only, which leaves the server's QP on rxe0 alone)
ib_write_bw -d "$RXE_DEV0" -x "$RXE_GID" -p 18702 -D 8 >"$JV_OUT/pre.srv" 2>&1 &
SRV=$!
wait_port 18702 20 "$SRV"
ib_write_bw -d "$RXE_DEV1" -x "$RXE_GID" -p 18702 -D 8 "$RXE_IP0" >"$JV_OUT/pre.cli" 2>&1 &
CLI=$!
wait_for 15 '[ -n "$(rdma -j res show qp | jq ".[] | select(.pid == $CLI)")" ]'
R2=/run/jq2
conf jq2 "$R2" "\"devices\": [ { \"name\": \"$RXE_DEV1\" } ]" # rxe1's QPs only
start_daemon jq2 "$R2"
sleep 1.2 # past the grace period
snapshot "$R2" pre
expect_eq pre.client.unmanaged "$RXE_DEV1 $(lqpns pre $CLI "$RXE_DEV1") RC ib_write_bw netlink" \
	"$(unmanaged pre $CLI)"
expect_eq pre.other.device.ignored "1 " \
	"$(lqpns pre $SRV "$RXE_DEV0" | wc -l) $(unmanaged pre $SRV)"
expect_eq pre.log "yes" "$(grep -q 'QP watcher on (fentry .*, [1-9][0-9]* existing user QPs)' "$JV_OUT/jq2.log" && echo yes)"
wait $CLI $SRV
wait_for 5 '[ "$(st "$R2" .qpwatch.qps)" = 0 ]'
expect_eq pre.gone 0 "$(st "$R2" .qpwatch.qps)"
stop_daemon jq2
stop_daemon jq

# ---- "qpwatch": false, then a reload with true
R3=/run/jq3
conf jq3 "$R3" '"qpwatch": false'
start_daemon jq3 "$R3"
expect_eq config.off "off null disabled in the configuration (\"qpwatch\": false)" \
	"$(st "$R3" '"\(.qpwatch.state) \(.counts.unmanaged) \(.qpwatch.reason)"')"
expect_eq config.off.flows 0 "$(fl "$R3" '.flows | length')"
sed -i 's/"qpwatch": false/"qpwatch": true/' "$JV_OUT/jq3.json"
kill -HUP "$PID_jq3"
wait_for 10 '[ "$(st "$R3" .qpwatch.state)" = on ]'
expect_eq config.reload.on "on fentry" "$(st "$R3" '"\(.qpwatch.state) \(.qpwatch.mode)"')"
stop_daemon jq3

# ---------------------------------------------------------------- capabilities
# cap_list "CAP_A CAP_B": "+a,+b" for setpriv
cap_list() {
	local out= c
	for c in $1; do
		c=${c#CAP_}
		out+=",+${c,,}"
	done
	echo "${out#,}"
}

# the base unit alone: no watcher privileges, the watcher is off and says why
BASE_CAPS=$(sed -n 's/^CapabilityBoundingSet=//p' systemd/justitiad.service)
R5=/run/jq5
conf jq5 "$R5"
BASE=(setpriv --bounding-set=-all,"$(cap_list "$BASE_CAPS")" --inh-caps=-all --)
start_daemon jq5 "$R5" "${BASE[@]}"
expect_eq caps.base.off "off true" "$(st "$R5" '"\(.qpwatch.state) \(.qpwatch.reason != null)"')"
expect_eq caps.base.serves 0 "$("$C" -s "$R5/justitiad.sock" status >/dev/null; echo $?)"
stop_daemon jq5

# the unit's CapabilityBoundingSet with its QP watcher drop-in (the lines
# are merged), applied to a root daemon
UNIT_CAPS=$(sed -n 's/^CapabilityBoundingSet=//p' systemd/justitiad.service \
	systemd/justitiad.service.d/qpwatch.conf | xargs)
R4=/run/jq4
conf jq4 "$R4"
UNIT=(setpriv --bounding-set=-all,"$(cap_list "$UNIT_CAPS")" --inh-caps=-all --)
start_daemon jq4 "$R4" "${UNIT[@]}"
expect_eq caps.unit.on "on fentry" "$(st "$R4" '"\(.qpwatch.state) \(.qpwatch.mode)"')"
# the emulation is right: the bounding set is the unit's, and the daemon has it all
expect_eq caps.unit.bounding "$(cap_list "$UNIT_CAPS" | tr -d '+' | tr ',' '\n' | sort | xargs)" \
	"$("${UNIT[@]}" setpriv -d | sed -n 's/^Capability bounding set: //p' | tr ',' '\n' | sort | xargs)"
expect_eq caps.unit.effective yes "$(awk '/^CapEff/ { e = $2 } /^CapBnd/ { b = $2 }
	END { print (e == b && e != "000001ffffffffff") ? "yes" : e " " b }' "/proc/$PID_jq4/status")"
stop_daemon jq4

# a non-root daemon (nobody) with exactly the capabilities CAPS ("+bpf,+perfmon")
userdaemon() { # NAME CAPS
	local dir=/tmp/jvq-$1 caps=$2
	rm -rf "$dir"
	mkdir -p "$dir"
	chown nobody:nogroup "$dir"
	conf "$1" "$dir/run" "\"state_dir\": \"$dir/state\""
	chmod 644 "$JV_OUT/$1.json"
	start_daemon "$1" "$dir/run" setpriv --reuid=nobody --regid=nogroup --clear-groups \
		--inh-caps=-all"${caps:+,$caps}" --ambient-caps=-all"${caps:+,$caps}" \
		--bounding-set=-all"${caps:+,$caps}" --
}
PARANOID=$(cat /proc/sys/kernel/perf_event_paranoid)

userdaemon u_admin +bpf,+perfmon,+sys_admin
expect_eq caps.bpf.perfmon.sys_admin "on fentry" \
	"$(st /tmp/jvq-u_admin/run '"\(.qpwatch.state) \(.qpwatch.mode)"')"
expect_eq caps.nonroot.runs nobody "$(ps -o user= -p "$PID_u_admin")"
stop_daemon u_admin

userdaemon u_bpf +bpf,+perfmon
expect_eq caps.bpf.perfmon.paranoid$PARANOID "off yes" \
	"$(st /tmp/jvq-u_bpf/run '"\(.qpwatch.state) \(if (.qpwatch.reason | test("^no permission")) then "yes" else .qpwatch.reason end)"')"
expect_eq caps.off.still.serves "0 0" "$(st /tmp/jvq-u_bpf/run .counts.flows) $(ctl /tmp/jvq-u_bpf/run flows --all >/dev/null; echo $?)"
expect_eq caps.off.logged.once 1 "$(grep -c 'QP watcher off: no permission' "$JV_OUT/u_bpf.log")"
stop_daemon u_bpf

# the kprobe fallback: enough without CAP_SYS_ADMIN when perf events are
# allowed to CAP_PERFMON (perf_event_paranoid <= 2; Debian's default is 3)
sysctl -qw kernel.perf_event_paranoid=2
userdaemon u_kprobe +bpf,+perfmon
expect_eq caps.kprobe.paranoid2 "on kprobe" \
	"$(st /tmp/jvq-u_kprobe/run '"\(.qpwatch.state) \(.qpwatch.mode)"')"
run_one kprobe.wrpost "$WRPOST" -a "$RXE_DEV1" -b "$RXE_DEV0" -g "$RXE_GID" -n 20
WRPID=$(grep -o 'pid [0-9]* (wrpost) created' "$JV_OUT/u_kprobe.log" | head -1 | cut -d' ' -f2)
expect_eq kprobe.create.destroy "2 2" \
	"$(grep -c "pid $WRPID (wrpost) created RC QP" "$JV_OUT/u_kprobe.log") $(grep -c "destroyed (by pid $WRPID)" "$JV_OUT/u_kprobe.log")"
stop_daemon u_kprobe
sysctl -qw kernel.perf_event_paranoid="$PARANOID"

userdaemon u_none ""
expect_eq caps.none "off yes" \
	"$(st /tmp/jvq-u_none/run '"\(.qpwatch.state) \(if (.qpwatch.reason | test("^no permission")) then "yes" else .qpwatch.reason end)"')"
stop_daemon u_none

jv_summary
