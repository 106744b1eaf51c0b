# tests/vm/lib.sh -- helpers for integration test scripts that run INSIDE the
# justitia-vm guest (usually with --rxe).  Source it from bash:
#
#   . "$(dirname "$0")/../vm/lib.sh"
#   run_pair write_bw 18515 ib_write_bw -d "$RXE_DEV0" -x "$RXE_GID" -n 200 \
#                        -- ib_write_bw -d "$RXE_DEV1" -x "$RXE_GID" -n 200 "$RXE_IP0"
#   run_pair rping cm:7174 rping -s -a "$RXE_IP0" -V -C 5 \
#                      -- rping -c -a "$RXE_IP0" -V -C 5 -v
#   jv_summary          # "N passed, M failed"; returns 1 if anything failed
#
# Results go to $JV_OUT (default /tmp/jv, a tmpfs in the guest -- point it at
# a shared directory to keep them):  NAME.out/NAME.rc for run_one,
# NAME.server.{out,rc} and NAME.client.{out,rc} for run_pair.
# A failing test prints its outputs; JV_VERBOSE=1 prints them always.
#
# Settings (environment):
#   JV_OUT       results directory                   (default /tmp/jv)
#   JV_TIMEOUT   seconds each command may run        (default 120)
#   JV_WAIT      seconds to wait for a listener      (default 20)
#   JV_VERBOSE   1 = show outputs of passing tests   (default 0)
#   JV_RESULTS   if set, every result is also appended to this file as
#                "PASS|FAIL|SKIP [JV_CASE/]NAME DETAIL" (see run-cases)

: "${JV_OUT:=/tmp/jv}"
: "${JV_TIMEOUT:=120}"
: "${JV_WAIT:=20}"
: "${JV_VERBOSE:=0}"
JV_PASSED=0
JV_FAILED=0
JV_FAILURES=()
mkdir -p "$JV_OUT"

jv_now() { date +%s.%N | cut -c1-14; }
jv_secs() { awk -v a="$1" -v b="$(jv_now)" 'BEGIN { printf "%.1f", b - a }'; }

# _jv_result NAME OK DETAIL: count and print one result line (OK: 1 = PASS,
# 0 = FAIL); test scripts may call it for checks of their own
_jv_result() {
	# the make check driver collects results from $JV_RESULTS (run-cases)
	if [[ -n ${JV_RESULTS:-} ]]; then
		printf '%s %s %s\n' "$( (($2)) && echo PASS || echo FAIL)" \
			"${JV_CASE:+$JV_CASE/}$1" "$3" >>"$JV_RESULTS"
	fi
	if (($2)); then
		JV_PASSED=$((JV_PASSED + 1))
		echo "PASS $1 ($3)"
	else
		JV_FAILED=$((JV_FAILED + 1))
		JV_FAILURES+=("$1")
		echo "FAIL $1 ($3)"
	fi
}

# jv_skip NAME REASON: record a test that was not run (not a failure)
jv_skip() {
	if [[ -n ${JV_RESULTS:-} ]]; then
		printf 'SKIP %s %s\n' "${JV_CASE:+$JV_CASE/}$1" "$2" >>"$JV_RESULTS"
	fi
	echo "SKIP $1 ($2)"
}

# _jv_show FILE TITLE: print a captured output, indented
_jv_show() {
	echo "  --- $2 ($1):"
	sed 's/^/  | /' "$1" 2>/dev/null
}

# _jv_timeout CMD...: exec timeout(1), so call it in a subshell: ( _jv_timeout ... )
# CMD may be a shell function: it is exported with export -f (functions it
# calls must be exported too).  As timeout replaces the subshell, $! of a
# backgrounded ( _jv_timeout ... ) & is timeout's pid and can be killed.
_jv_timeout() {
	if declare -F "$1" >/dev/null; then
		export -f "${1?}"
		exec timeout -k 5 "$JV_TIMEOUT" bash -c '"$@"' "$1" "$@"
	fi
	exec timeout -k 5 "$JV_TIMEOUT" "$@"
}

# wait_port PORT [TIMEOUT [PID]]
#   Wait until something listens on TCP PORT (any address), as seen by
#   `ss -Hltn`.  PORT may also be "cm:N": wait for an rdma_cm listener on port
#   N (`rdma res show cm_id`, for rping/perftest -R/...), or "none": do not
#   wait at all.  If PID is given, give up as soon as that process is gone.
#   Returns 0 when the listener is up, 1 otherwise.
wait_port() {
	local port=$1 limit=${2:-$JV_WAIT} pid=${3:-} deadline
	deadline=$(($(date +%s) + limit))
	while :; do
		case $port in
		none) return 0 ;;
		cm:*) rdma res show cm_id 2>/dev/null | grep -E "state LISTEN" |
			grep -qE "src-addr [^ ]*:${port#cm:}( |$)" && return 0 ;;
		*) [[ -n $(ss -Hltn "sport = :$port" 2>/dev/null) ]] && return 0 ;;
		esac
		if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
			echo "wait_port: process $pid exited before listening on $port" >&2
			return 1
		fi
		if (($(date +%s) >= deadline)); then
			echo "wait_port: nothing listens on $port after ${limit}s" >&2
			return 1
		fi
		sleep 0.1
	done
}

# run_one NAME CMD...
#   Run CMD (a command or a shell function) under `timeout $JV_TIMEOUT`,
#   output to $JV_OUT/NAME.out, exit code to $JV_OUT/NAME.rc.  PASS when it
#   exits 0.  Returns CMD's exit code.
run_one() {
	local name=$1 t0 rc=0
	shift
	t0=$(jv_now)
	(_jv_timeout "$@") >"$JV_OUT/$name.out" 2>&1 || rc=$?
	echo "$rc" >"$JV_OUT/$name.rc"
	_jv_result "$name" $((rc == 0)) "rc $rc, $(jv_secs "$t0")s"
	if ((rc != 0 || JV_VERBOSE)); then _jv_show "$JV_OUT/$name.out" "$*"; fi
	return "$rc"
}

# run_pair NAME PORT SERVER_CMD... -- CLIENT_CMD...
#   Start SERVER_CMD in the background (under timeout), wait for its listener
#   (PORT as for wait_port), run CLIENT_CMD (under timeout), then wait for the
#   server to finish.  PASS when both exit 0.  Outputs and exit codes go to
#   $JV_OUT/NAME.{server,client}.{out,rc}; a client that never ran gets rc 125.
#   Returns 0 on PASS, 1 otherwise.
run_pair() {
	local name=$1 port=$2 t0 spid src=0 crc=0
	local -a server=()
	shift 2
	while (($#)) && [[ $1 != -- ]]; do
		server+=("$1")
		shift
	done
	if (($# < 2 || ${#server[@]} == 0)); then
		echo "run_pair: usage: run_pair NAME PORT SERVER_CMD... -- CLIENT_CMD..." >&2
		return 2
	fi
	shift # the --
	local out=$JV_OUT/$name try
	t0=$(jv_now)
	# perftest measures the CPU's cycle rate before it reports; on a busy
	# emulated host that measurement can fail ("Can't produce a report",
	# exit 1) whatever the test does: run such a pair again, twice at most
	for try in 1 2 3; do
		src=0 crc=0
		(_jv_timeout "${server[@]}") >"$out.server.out" 2>&1 &
		spid=$!
		if wait_port "$port" "$JV_WAIT" "$spid" 2>"$out.client.out"; then
			(_jv_timeout "$@") >"$out.client.out" 2>&1 || crc=$?
		else
			crc=125
			kill "$spid" 2>/dev/null
		fi
		wait "$spid" || src=$?
		((src == 0 && crc == 0)) && break
		grep -qs "Can't produce a report" "$out.server.out" "$out.client.out" || break
		echo "INFO $name: perftest could not measure the CPU clock (try $try), again"
	done
	echo "$src" >"$out.server.rc"
	echo "$crc" >"$out.client.rc"
	_jv_result "$name" $((src == 0 && crc == 0)) "server rc $src, client rc $crc, $(jv_secs "$t0")s"
	if ((src != 0 || crc != 0 || JV_VERBOSE)); then
		_jv_show "$out.server.out" "server: ${server[*]}"
		_jv_show "$out.client.out" "client: $*"
	fi
	((src == 0 && crc == 0))
}

# jv_summary: print "N passed, M failed" (and the failed names); returns 1 if
# any run_one/run_pair failed, so it can be a script's last command.
# jv_rxe_counters REGEX: "dev.counter=value ..." of both rxe devices'
# counters whose names match REGEX (`rdma statistic`; a diagnostic of what
# crossed the wire and how often rxe retransmitted)
jv_rxe_counters() {
	rdma statistic show 2>/dev/null | awk -v re="$1" '{ for (i = 3; i < NF; i += 2)
		if ($i ~ re) printf "%s.%s=%s ", substr($2, 1, 4), $i, $(i + 1) }'
}

# jv_inorder on|off: a QP's packets stay in order on the veths, as on a
# real RNIC (a case that turns it on turns it off in its EXIT trap).  A
# veth queues what it delivers to the backlog of the sending CPU, so one
# QP's packets sent from two CPUs in turn (an application thread, the
# shim's progress thread, rxe's tasklet) overtake each other: 5-11 times per
# `mtpost -t 4 -n 60` run, each an out-of-sequence NAK and a go-back-N
# retransmission, which is where Linux 6.1's rxe is fragile ("remote
# invalid request" on split chunks in 47-robust).  RPS on every CPU picks
# the backlog by the flow's hash instead (0 out-of-sequence requests in 3
# runs).  Not for cases that measure latency: RPS's inter-processor
# interrupts cost 10-35 us of p50 under TCG.
# On, it also gives that backlog room for 100000 packets (1000 by default;
# a 1 MiB message is 1024 packets of rxe's 1 KiB MTU): on a slow guest a
# few QPs' bursts overflowed it, rxe's send failed ("Failed sending ACK", a
# READ reply turned into an RNR NAK) and recovery went through the same
# fragile retransmissions (READs that never complete).  Not for latency
# cases either: a deep backlog is a queue the latency flow waits in behind
# every packet rxe has sent (55-isolation: p99 with Justitia 14.7-17.0 ms
# against 11.6 ms with 1000).
jv_inorder() {
	local n q mask=0 backlog=1000
	[[ $1 == on ]] && mask=$(printf '%x' $(((1 << $(nproc)) - 1))) backlog=100000
	echo "$backlog" >/proc/sys/net/core/netdev_max_backlog ||
		echo "jv_inorder: cannot set netdev_max_backlog" >&2
	# every host's veth, and with 3 hosts or more the bridge's ports
	# (jvportI) their packets cross on the way
	for q in /sys/class/net/veth*/queues/rx-0 /sys/class/net/jvport*/queues/rx-0; do
		[ -d "$q" ] || continue
		n=${q#/sys/class/net/}
		echo "$mask" >"$q/rps_cpus" || echo "jv_inorder: cannot set RPS on ${n%%/*}" >&2
	done
}

# jv_backlog N: the per-CPU backlog a veth delivers into holds N packets
# (1000 by default, jv_inorder on: 100000), without RPS.  A 1 MiB READ's
# reply is 1024 packets of rxe's 1 KiB MTU: with 1000 a READ elephant's
# replies overflow it, rxe turns a dropped reply into an RNR NAK and its
# READs may never complete ("4 posts still in flight", plain too: 3 hosts,
# 50-read-scenarios' scenario (b) and the demo's, session 24's rehearsal).
# 5000 holds justbench's window of four replies, a shorter queue for a
# latency flow to wait in than jv_inorder's 100000.  The case (or demo
# part) that sets it puts 1000 back in its EXIT trap.
jv_backlog() {
	echo "$1" >/proc/sys/net/core/netdev_max_backlog ||
		echo "jv_backlog: cannot set netdev_max_backlog" >&2
}

# jv_until SECONDS CMD...: run CMD every 0.2 s until it succeeds; returns 1
# if it still fails after SECONDS
jv_until() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < end)) || return 1
		sleep 0.2
	done
}

# jv_split_conf FILE RUNDIR [PACE_MODE]: a justitiad configuration for both
# rxe devices that splits at 64 KiB (4 KiB next to a latency flow), with the
# controller's pace_mode if given ("share": even a lone flow splits)
jv_split_conf() {
	local dev devs=()
	for dev in "$RXE_DEV0" "$RXE_DEV1"; do
		devs+=("{ \"name\": \"$dev\", \"gid_index\": $RXE_GID, \"chunk_default\": 65536, \"chunk_latency\": 4096 }")
	done
	{
		echo "{"
		echo "  \"runtime_dir\": \"$2\","
		echo "  \"devices\": [ ${devs[0]}, ${devs[1]} ]${3:+,}"
		[[ -n ${3:-} ]] && echo "  \"controller\": { \"pace_mode\": \"$3\" }"
		echo "}"
	} >"$1"
}

# jv_daemon_start CONF SOCK [ARGS...]: build/justitiad (or $JV_JUSTITIAD)
# -c CONF ARGS in the background (JD: its pid; its log appended to CONF
# without .json, plus .log) and wait up to 20 s for it to answer on SOCK.
# Returns 1, after showing the log, if it does not.
jv_daemon_start() {
	local conf=$1 sock=$2 end=$((SECONDS + 20))
	shift 2
	"${JV_JUSTITIAD:-$PWD/build/justitiad}" -c "$conf" "$@" >>"${conf%.json}.log" 2>&1 &
	JD=$!
	until "$PWD/build/justctl" -s "$sock" status >/dev/null 2>&1; do
		if ((SECONDS > end)) || ! kill -0 "$JD" 2>/dev/null; then
			_jv_show "${conf%.json}.log" justitiad
			return 1
		fi
		sleep 0.1
	done
}

# Emulated hosts and justbench's reports (--hosts N):
#   jv_dev I, jv_ip I      host I's rxe device, its address
#   jv_jb_us FILE KEY      the first flow's latency KEY (p50, p99) in a
#                          justbench JSON report, in us (floored; nothing
#                          if it has none, exit status non-zero without
#                          the report)
#   jv_jb_mbit FILE        what its first flow moved over its nominal
#                          duration, Mbit/s (not justbench's gbps, which
#                          is over the time to its last completion: a READ
#                          that stalls would look fast)
jv_dev() { local v=RXE_DEV$1; echo "${!v}"; }
jv_ip() { local v=RXE_IP$1; echo "${!v}"; }
jv_jb_us() { jq -r ".flows[0].latency_ns.$2 // empty | . / 1000 | floor" "$1" 2>/dev/null; }
jv_jb_mbit() { jq -r '.flows[0] | .bytes * 8 / .duration_us | . * 10 | floor / 10' "$1" 2>/dev/null; }

# Daemons of N emulated hosts (--hosts N), one per host: jdI on rxeI,
# listening on host I's address, its socket /run/jdI/justitiad.sock, its
# files in $JV_JD_DIR (default $JV_OUT): jdI.json, jdI.log, jdI-state/, and
# the channel's shared secret `secret`.
#   jv_jd_secret                       a fresh secret (32 random bytes, base64, 0600)
#   jv_jd_conf I MAXRATE PEERS [PATH=VALUE]...
#       jdI.json: device RXE_DEVI at GID $RXE_GID with max_rate MAXRATE (as
#       the config takes it: "60000000bit", "300Mbit"), qpwatch off, the
#       channel on host I's address with the secret, PEERS the host numbers
#       of its peers ("1 2").  Each PATH=VALUE sets one more key, PATH
#       dot-separated (a leading "device." means devices[0]), VALUE JSON if
#       it parses as JSON, else a string:
#       controller.pace_mode=auto device.chunk_default=65536 log_level=info
#   jv_jd_start I [ARGS...]            jv_daemon_start of jdI (JV_JDPID[I]: its pid)
#   jv_jd_stop I...                    SIGTERM, wait; JV_JDRC: their exit codes ("0 0")
#   jv_jd_ctl I ARGS...                justctl against jdI
#   jv_jd_st I JQ, jv_jd_fl I JQ       jq -r JQ over jdI's JSON status, flows
#   jv_jd_wait st|fl I JQ [SECONDS]    until that prints "true" (default 20 s)
declare -a JV_JDPID=()
JV_JDRC=
jv_jd_dir() { echo "${JV_JD_DIR:-$JV_OUT}"; }
jv_jd_secret() {
	local d
	d=$(jv_jd_dir)
	mkdir -p "$d"
	head -c 32 /dev/urandom | base64 >"$d/secret"
	chmod 600 "$d/secret"
}
jv_jd_conf() {
	local i=$1 rate=$2 d dev=RXE_DEV$1 ip=RXE_IP$1 p v peers=()
	shift 2
	for p in $1; do
		v=RXE_IP$p
		peers+=("{\"address\": \"${!v}\"}")
	done
	shift
	d=$(jv_jd_dir)
	mkdir -p "$d"
	jq -n --arg rt "/run/jd$i" --arg st "$d/jd$i-state" --arg dev "${!dev}" \
		--argjson gid "$RXE_GID" --arg rate "$rate" --arg ip "${!ip}" \
		--argjson peers "[$(IFS=,; echo "${peers[*]}")]" --arg secret "$d/secret" '
		reduce ($ARGS.positional[] | capture("^(?<k>[^=]+)=(?<v>.*)$")) as $kv (
			{ runtime_dir: $rt, state_dir: $st, qpwatch: false,
			  devices: [ { name: $dev, gid_index: $gid, max_rate: $rate } ],
			  reference: { listen_address: $ip, peers: $peers, secret_file: $secret } };
			setpath($kv.k | split(".") | if .[0] == "device" then [ "devices", 0 ] + .[1:] else . end;
				($kv.v | try fromjson catch $kv.v)))' --args "$@" >"$d/jd$i.json"
}
jv_jd_start() {
	local i=$1
	shift
	jv_daemon_start "$(jv_jd_dir)/jd$i.json" "/run/jd$i/justitiad.sock" "$@" || return 1
	JV_JDPID[i]=$JD
}
jv_jd_stop() {
	local i rc
	JV_JDRC=
	for i in "$@"; do kill -TERM "${JV_JDPID[i]}" 2>/dev/null; done
	for i in "$@"; do
		wait "${JV_JDPID[i]}"
		rc=$?
		JV_JDRC+="${JV_JDRC:+ }$rc"
	done
}
jv_jd_ctl() {
	local i=$1
	shift
	"$PWD/build/justctl" -s "/run/jd$i/justitiad.sock" "$@"
}
jv_jd_st() { jv_jd_ctl "$1" --json status 2>/dev/null | jq -r "$2"; }
jv_jd_fl() { jv_jd_ctl "$1" --json flows 2>/dev/null | jq -r "$2"; }
jv_jd_wait() {
	local end=$((SECONDS + ${4:-20}))
	# by the clock: under TCG one justctl and jq take a good part of a second
	while ((SECONDS < end)); do
		[ "$("jv_jd_$1" "$2" "$3" 2>/dev/null)" = true ] && return 0
		sleep 0.2
	done
	return 1
}

# jv_delay MS: from now on every link (vethI) delays what it sends by MS
# milliseconds (netem; fractional allowed); 0 takes the delay away.  The
# case's exit does not undo it: call jv_delay 0 before the end.
jv_delay() {
	local i dev
	modprobe sch_netem 2>/dev/null
	for ((i = 0; i < ${RXE_HOSTS:-2}; i++)); do
		dev=veth$i
		if [[ $1 == 0 ]]; then
			tc qdisc del dev "$dev" root 2>/dev/null
		else
			tc qdisc replace dev "$dev" root netem delay "${1}ms" limit 100000 || return 1
		fi
	done
}

jv_summary() {
	echo "$JV_PASSED passed, $JV_FAILED failed${JV_FAILURES[*]:+ (${JV_FAILURES[*]})}"
	((JV_FAILED == 0))
}
