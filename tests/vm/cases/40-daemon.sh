#!/bin/bash
# justitiad control plane on real rxe: two daemons (one per emulated host:
# jd0 manages rxe0, jd1 manages rxe1), perftest preloaded with the shim on
# both sides.  Flows appear with the right classes and counters while the
# apps run and vanish when they exit; kill -9 frees a process's slots; a
# daemon restart under a running app does not hurt the app; justctl's
# permissions, SIGHUP reload, SIGTERM cleanup; a hostile client.
. tests/vm/lib.sh
. tests/vm/shimlib.sh
D=${JV_DAEMON:-$PWD/build/justitiad} # (JV_DAEMON: another build, to compare)
C=$PWD/build/justctl
S=$JV_OUT/stats
mkdir -p "$S"

conf() { # NAME DEVICE CLASS [COMM]: a rule giving COMM (ib_send_lat) CLASS
	cat >"$JV_OUT/$1.json" <<EOF
{
  "runtime_dir": "/run/$1",
  "socket_group": "nogroup",
  "log_level": "info",
  "limits": { "max_clients": 16, "max_flows_per_client": 8, "max_request_bytes": 4096,
              "idle_timeout_ms": 1000 },
  "devices": [ { "name": "$2", "gid_index": $RXE_GID, "max_rate": "1Gbit" } ],
  "apps": [ { "comm": "${4:-ib_send_lat}", "class": "$3" } ],
  "tenants": [ { "uid": 65534, "classes": [ "bandwidth" ], "max_weight": 5 } ]
}
EOF
}

start_daemon() { # NAME
	"$D" -c "$JV_OUT/$1.json" -D flow >>"$JV_OUT/$1.log" 2>&1 &
	eval "PID_$1=$!"
	for _ in $(seq 100); do
		[ -S "/run/$1/justitiad.sock" ] && return 0
		sleep 0.05
	done
	echo "daemon $1 did not come up:"
	cat "$JV_OUT/$1.log"
	return 1
}

ctl() { # NAME ARGS...
	local n=$1
	shift
	"$C" -s "/run/$n/justitiad.sock" "$@"
}

# flowq NAME JQ: a jq expression over the daemon's flows
flowq() {
	ctl "$1" --json flows | jq -r "$2"
}

# shimmed perftest, always started in the background: shim_pt DAEMON CMD... &
# (exec: $! is then the perftest's own pid, which kill -9 needs)
shim_pt() {
	local n=$1
	shift
	exec env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET="/run/$n/justitiad.sock" JUSTITIA_LOG=stderr "$@"
}

conf jd0 "$RXE_DEV0" latency some_other_app
conf jd1 "$RXE_DEV1" latency
start_daemon jd0 && start_daemon jd1
expect_eq daemons.up "2" "$( (ctl jd0 version >/dev/null && ctl jd1 version >/dev/null) && echo 2)"
expect_eq socket.mode "660 srw-rw----" "$(stat -c '%a %A' /run/jd1/justitiad.sock)"
expect_eq socket.dir.mode "750" "$(stat -c '%a' /run/jd1)"

# ---- a second instance on the same socket refuses to start
"$D" -c "$JV_OUT/jd1.json" >"$JV_OUT/dup.log" 2>&1
expect_eq second.instance.refused "1 yes" \
	"$? $(grep -q 'another justitiad answers' "$JV_OUT/dup.log" && echo yes)"

# ---- bandwidth flows while ib_write_bw runs, none after
shim_pt jd0 timeout 60 ib_write_bw -d "$RXE_DEV0" -x "$RXE_GID" -p 18600 -D 10 \
	>"$JV_OUT/wbw.srv" 2>&1 &
SRV=$!
wait_port 18600
shim_pt jd1 timeout 60 ib_write_bw -d "$RXE_DEV1" -x "$RXE_GID" -p 18600 -D 10 "$RXE_IP0" \
	>"$JV_OUT/wbw.cli" 2>&1 &
CLI=$!
sleep 4
ctl jd1 --json flows >"$JV_OUT/flows-wbw.json"
# (while the flow runs: on a slow guest the checks below outlast its 10 s)
ctl jd0 --json flows >"$JV_OUT/flows-wbw-srv.json"
ctl jd1 --json status >"$JV_OUT/status-wbw.json"
ctl jd1 flows >"$JV_OUT/flows-wbw.txt"
f='.flows[] | select(.comm == "ib_write_bw")'
expect_eq wbw.client.flow "bandwidth $RXE_DEV1 RTS yes yes" \
	"$(jq -r "$f | \"\(.class) \(.device) \(.state) \(if .qpn > 0 then \"yes\" else \"no\" end) \(if .bytes > 0 and .ops > 0 then \"yes\" else \"no\" end)\"" "$JV_OUT/flows-wbw.json")"
expect_eq wbw.client.peer_known yes \
	"$(jq -r "$f | if .peer_qpn != null then \"yes\" else \"no\" end" "$JV_OUT/flows-wbw.json")"
expect_eq wbw.server.flow "bandwidth $RXE_DEV0" \
	"$(jq -r "$f | \"\(.class) \(.device)\"" "$JV_OUT/flows-wbw-srv.json")"
expect_eq wbw.status.counts "1 1" "$(jq -r '"\(.counts.flows) \(.counts.bandwidth)"' "$JV_OUT/status-wbw.json")"
wait $CLI
expect_eq wbw.client.rc 0 $?
wait $SRV
expect_eq wbw.server.rc 0 $?
expect_eq wbw.flows.gone "0 0" "$(flowq jd0 '.flows | length') $(flowq jd1 '.flows | length')"

# ---- classes: JUSTITIA_CLASS where no rule matches (jd0), the daemon's
# rule over JUSTITIA_CLASS where one does (jd1: ib_send_lat -> latency)
shim_pt jd0 env JUSTITIA_CLASS=tput timeout 60 ib_send_lat -d "$RXE_DEV0" -x "$RXE_GID" -p 18601 -D 8 \
	>"$JV_OUT/slat.srv" 2>&1 &
SRV=$!
wait_port 18601
shim_pt jd1 env JUSTITIA_CLASS=bw timeout 60 ib_send_lat -d "$RXE_DEV1" -x "$RXE_GID" -p 18601 -D 8 "$RXE_IP0" \
	>"$JV_OUT/slat.cli" 2>&1 &
CLI=$!
# (-D 8: the flows outlive these queries even on a loaded TCG host)
for _ in $(seq 40); do
	[ -n "$(flowq jd1 '.flows[] | select(.comm == "ib_send_lat") | .class')" ] && break
	sleep 0.25
done
lat_count=$(ctl jd1 --json status | jq -r .counts.latency)
expect_eq class.from.config latency "$(flowq jd1 '.flows[] | select(.comm == "ib_send_lat") | .class')"
expect_eq class.from.env throughput "$(flowq jd0 '.flows[] | select(.comm == "ib_send_lat") | .class')"
expect_eq status.latency.count 1 "$lat_count"
wait $CLI
expect_eq slat.client.rc 0 $?
wait $SRV
expect_eq slat.server.rc 0 $?

# ---- kill -9 frees the process's slots at once
shim_pt jd0 timeout 60 ib_write_bw -d "$RXE_DEV0" -x "$RXE_GID" -p 18602 -D 20 \
	>"$JV_OUT/kill.srv" 2>&1 &
SRV=$!
wait_port 18602
shim_pt jd1 ib_write_bw -d "$RXE_DEV1" -x "$RXE_GID" -p 18602 -D 20 "$RXE_IP0" \
	>"$JV_OUT/kill.cli" 2>&1 &
CLI=$!
for _ in $(seq 50); do
	[ "$(flowq jd1 "[.flows[] | select(.pid == $CLI)] | length")" = 1 ] && break
	sleep 0.1
done
expect_eq kill9.registered 1 "$(flowq jd1 "[.flows[] | select(.pid == $CLI)] | length")"
kill -9 $CLI
wait $CLI 2>/dev/null
left=1
for _ in $(seq 20); do
	left=$(flowq jd1 "[.flows[] | select(.pid == $CLI)] | length")
	[ "$left" = 0 ] && break
	sleep 0.1
done
expect_eq kill9.slots.freed 0 "$left"
kill $SRV 2>/dev/null
wait $SRV 2>/dev/null

# ---- restart the daemon under a running app: the app must not notice
shim_pt jd0 timeout 60 ib_write_bw -d "$RXE_DEV0" -x "$RXE_GID" -p 18603 -D 6 \
	>"$JV_OUT/restart.srv" 2>&1 &
SRV=$!
wait_port 18603
shim_pt jd1 timeout 60 ib_write_bw -d "$RXE_DEV1" -x "$RXE_GID" -p 18603 -D 6 "$RXE_IP0" \
	>"$JV_OUT/restart.cli" 2>&1 &
CLI=$!
sleep 2
kill -TERM "$PID_jd1"
wait "$PID_jd1"
expect_eq sigterm.exit 0 $?
expect_eq sigterm.socket.removed yes "$([ -e /run/jd1/justitiad.sock ] || echo yes)"
start_daemon jd1
wait $CLI
expect_eq restart.client.rc 0 $?
wait $SRV
expect_eq restart.server.rc 0 $?
expect_eq restart.daemon.serves 0 "$(flowq jd1 '.flows | length')"

# ---- permissions: status for the socket group, set only for root
expect_eq nobody.status 0 "$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$C" \
	-s /run/jd1/justitiad.sock status >/dev/null 2>&1; echo $?)"
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$C" -s /run/jd1/justitiad.sock \
	set target 10 2>&1)
expect_eq nobody.set.denied "1 yes" "$? $(grep -q permission_denied <<<"$out" && echo yes)"
expect_eq root.set "0 42000" "$(ctl jd1 set target 42 >/dev/null; echo $?) $(ctl jd1 --json status | jq -r .controller.target99_ns)"

# ---- tenants (justitiad.json(5)): nobody (uid 65534, read by the daemon with
# SO_PEERCRED) may have bandwidth flows only; root is not limited
TD=$JV_OUT/tenants
mkdir -p "$TD" && chmod 1777 "$TD"
setpriv --reuid=nobody --regid=nogroup --clear-groups build/tests/flowreg \
	/run/jd1/justitiad.sock 1 -c latency -d "$RXE_DEV1" -t 1 -r "$TD/nobody.json" \
	>"$TD/nobody.out" 2>&1
expect_eq tenants.nobody.class "bandwidth yes" "$(jq -r .class "$TD/nobody.json") $(jq -r .warning \
	"$TD/nobody.json" | grep -q 'class latency is not allowed for uid 65534' && echo yes)"
build/tests/flowreg /run/jd1/justitiad.sock 1 -c latency -d "$RXE_DEV1" -t 1 -r "$TD/root.json" \
	>"$TD/root.out" 2>&1
expect_eq tenants.root.class latency "$(jq -r .class "$TD/root.json")"
expect_eq tenants.logged yes "$(grep -q 'not allowed for uid 65534' "$JV_OUT/jd1.log" && echo yes)"

# ---- SIGHUP: reload, keep running; a broken file keeps the old config
sed -i 's/"log_level": "info"/"log_level": "debug"/' "$JV_OUT/jd1.json"
kill -HUP "$PID_jd1"
sleep 0.5
expect_eq sighup.reloaded yes "$(grep -q 'configuration reloaded' "$JV_OUT/jd1.log" && echo yes)"
# the value set at run time gives way to the file's, and the log says so (justctl(8), set)
expect_eq sighup.set.replaced "100000 yes" "$(ctl jd1 --json status | jq -r .controller.target99_ns) $(grep -q 'reload: controller.target99_us 42 -> 100' "$JV_OUT/jd1.log" && echo yes)"
echo '{ "log_level": 5 }' >"$JV_OUT/jd1.json"
kill -HUP "$PID_jd1"
sleep 0.5
expect_eq sighup.bad.kept "yes 0" "$(grep -q 'keeping the running configuration' "$JV_OUT/jd1.log" && echo yes) $(ctl jd1 version >/dev/null; echo $?)"

# ---- --check-config names file, line and column
printf '{\n  "limits": { "max_clients": 0 }\n}\n' >"$JV_OUT/bad.json"
out=$("$D" --check-config -c "$JV_OUT/bad.json" 2>&1)
expect_eq check.config.error "1 yes" "$? $(grep -q "bad.json:2:" <<<"$out" && echo yes)"

# ---- a hostile client
run_one ctlabuse build/tests/ctlabuse /run/jd0/justitiad.sock 16 8 4096
# ---- a flood from an unprivileged user: 1000 connections, half lines,
# 1 MiB lines, unread replies; root's justctl status is answered meanwhile
# (its time is reported, not judged), and the refusals are logged rarely
refusals_before=$(grep -c 'refusing pid' "$JV_OUT/jd0.log")
setpriv --reuid=nobody --regid=nogroup --clear-groups build/tests/ctlabuse flood \
	/run/jd0/justitiad.sock 1000 2500 >"$JV_OUT/flood.out" 2>&1 &
FLOOD=$!
sleep 0.5
status_ok=0 times=
for _ in 1 2 3 4 5; do
	t0=$(date +%s%N)
	ctl jd0 -t 60000 status >/dev/null && status_ok=$((status_ok + 1))
	times="$times $(( ($(date +%s%N) - t0) / 1000000 ))ms"
	sleep 0.2
done
wait $FLOOD
flood_rc=$?
cat "$JV_OUT/flood.out"
echo "root's justctl status during the flood:$times"
expect_eq flood.root.answered 5 "$status_ok"
expect_eq flood.rc 0 "$flood_rc"
refusals=$(( $(grep -c 'refusing pid' "$JV_OUT/jd0.log") - refusals_before ))
expect_eq flood.refusals.rate.limited yes \
	"$( [ "$refusals" -ge 1 ] && [ "$refusals" -le 10 ] && echo yes || echo "no: $refusals lines")"
expect_eq daemons.still.up "0 0" "$(ctl jd0 version >/dev/null; echo $?) $(ctl jd1 version >/dev/null; echo $?)"

kill -TERM "$PID_jd0" "$PID_jd1"
wait
jv_summary
