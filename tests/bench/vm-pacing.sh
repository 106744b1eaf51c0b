#!/bin/bash
# vm-pacing.sh: what pacing costs and what it shares, plain vs Justitia, in
# one boot of the Soft-RoCE guest (make bench runs it through justitia-vm
# --rxe).  Numbers only, never pass/fail.  Two daemons as on two hosts
# (default pace_mode "auto", chunk_default 1 MiB, chunk_latency 5 KiB),
# every perftest process preloaded in the Justitia runs.  Each setting
# alternates plain / Justitia ROUNDS times so a slow moment of the emulated
# host hurts both alike; medians and their ratio are printed.
#
#   lone      1 MiB ib_write_bw, ib_read_bw, ib_send_bw; qperf rc_bw and
#             rc_rdma_write_bw (64 KiB): no latency flow (pace mode off)
#   latency   1 MiB ib_write_bw while a latency flow is registered (mode
#             protect, MaxRate = the lone plain ib_write_bw's rate): achieved
#             rate / the mean rate the daemon granted
# The daemons are each other's peers (reference flow every 5 ms, split-QP
# lookups), as on two hosts.
#   two       1 MiB + 64 KiB ib_write_bw at once (mode share): each and sum
#   tput      64 B ib_write_bw (throughput) next to a 1 MiB elephant: ops/s;
#             with Justitia the 64 B flow is JUSTITIA_CLASS=tput and the
#             daemons' max_ops is what a lone 64 B flow did plain (TokenOps
#             then values an operation at what the NIC really does), as
#             max_rate is for bytes
#   cpu       the lone 1 MiB ib_write_bw client's CPU (user + system, the
#             shim's progress thread included) per MB moved
# Flows that compete start together: both servers listen first, then both
# clients start (otherwise the first runs alone for a second or two and the
# "aggregate" is partly a lone flow's).  PARTS selects parts (default all:
# "lone latency two tput cpu"); ROUNDS (default 5) and SECS (default 5).
set -u
cd "$(dirname "$0")/../.."
D=$PWD/build/justitiad
C=$PWD/build/justctl
R=$PWD/build/tests/flowreg
SHIM=$PWD/build/libjustitia.so
O=${BENCH_OUT:-/tmp/vm-pacing}
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-5}
PARTS=${PARTS:-lone latency two tput cpu}
part() { [[ " $PARTS " == *" $1 "* ]]; }
mkdir -p "$O"
JV_RESULTS=/dev/null JV_OUT=$O . tests/vm/lib.sh

# each other's peer (authenticated reference flow, split-QP lookups), as
# two hosts would be; RefPeriod 5 ms as in 55-isolation
head -c 32 /dev/urandom | base64 >"$O/secret"
chmod 600 "$O/secret"
# daemons_up [DEVICE_EXTRA]: both daemons, DEVICE_EXTRA added to their
# device object (e.g. '"max_ops": 30000')
daemons_up() {
	local n dev me peer
	for n in 0 1; do
		dev=RXE_DEV$n
		me=RXE_IP$n peer=RXE_IP$((1 - n))
		cat >"$O/jd$n.json" <<EOT
{ "runtime_dir": "/run/jp$n", "log_level": "${BENCH_LOG:-warn}", "debug": [ ${BENCH_DEBUG:-} ],
  "qpwatch": false,
  "devices": [ { "name": "${!dev}", "gid_index": $RXE_GID ${1:+, $1} } ],
  "reference": { "listen_address": "${!me}", "period_us": 5000,
                 "peers": [ { "address": "${!peer}", "device": "${!dev}" } ],
                 "secret_file": "$O/secret" } }
EOT
		"$D" -c "$O/jd$n.json" >>"$O/jd$n.log" 2>&1 &
		eval "JD$n=$!"
	done
	for n in 0 1; do
		for _ in $(seq 100); do [ -S /run/jp$n/justitiad.sock ] && break; sleep 0.05; done
	done
}
daemons_down() {
	kill -TERM "$JD0" "$JD1" 2>/dev/null
	wait "$JD0" "$JD1" 2>/dev/null
}
daemons_up

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }

# pre SIDE MODE: the command prefix of one side (0 server, 1 client);
# $XENV (VAR=VALUE...) is added under Justitia
pre() {
	[ "$2" = plain ] && return
	echo "env LD_PRELOAD=$SHIM JUSTITIA_SOCKET=/run/jp$1/justitiad.sock ${XENV:-}"
}

# srv TOOL SIZE MODE TAG [EXTRA...]: a perftest server on rxe0 in the
# background, listening when this returns.  Sets PF_SRV PF_PORT.
srv() {
	local tool=$1 size=$2 mode=$3 tag=$4
	shift 4
	PF_PORT=$((19000 + RANDOM % 900))
	timeout $((SECS + 60)) $(pre 0 "$mode") $tool -d "$RXE_DEV0" -x "$RXE_GID" -p $PF_PORT \
		-s "$size" -D "$SECS" "$@" >"$O/$tag.srv" 2>&1 &
	PF_SRV=$!
	wait_port $PF_PORT 30 $PF_SRV >/dev/null 2>&1
}
# cli TOOL SIZE MODE TAG PORT [EXTRA...]: its client on rxe1 in the
# background; output in $O/TAG.cli, its CPU seconds (user + system, all its
# threads) in $O/TAG.cpu.  Sets PF_CLI.
cli() {
	local tool=$1 size=$2 mode=$3 tag=$4 port=$5
	shift 5
	(
		timeout $((SECS + 60)) $(pre 1 "$mode") $tool -d "$RXE_DEV1" -x "$RXE_GID" \
			-p $port -s "$size" -D "$SECS" "$@" "$RXE_IP0" >"$O/$tag.cli" 2>&1
		# (times itself, not in a pipeline: a pipeline's subshell has
		# no children)
		times >"$O/$tag.times"
		awk 'NR == 2 { u = $1; s = $2; gsub(/[ms]/, " ", u); gsub(/[ms]/, " ", s)
			split(u, a, " "); split(s, b, " "); print a[1] * 60 + a[2] + b[1] * 60 + b[2] }' \
			"$O/$tag.times" >"$O/$tag.cpu"
	) &
	PF_CLI=$!
}
# perf TOOL SIZE MODE TAG [EXTRA...]: one perftest pair, rxe1 -> rxe0.
perf() {
	local tool=$1 size=$2 mode=$3 tag=$4
	shift 4
	srv "$tool" "$size" "$mode" "$tag" "$@"
	cli "$tool" "$size" "$mode" "$tag" $PF_PORT "$@"
}
# col TAG SIZE N: column N of perftest's result line (4: MB/s, 5: Mpps)
col() { awk -v s="$2" -v c="$3" '$1 == s { print $c; ok = 1 } END { if (!ok) print 0 }' "$O/$1.cli"; }

one() { # TOOL SIZE MODE: MB/s of a lone flow
	perf "$1" "$2" "$3" lone
	wait $PF_CLI
	wait $PF_SRV
	col lone "$2" 4
}

qperf_one() { # TEST MODE: MB/s
	local srv out
	$(pre 0 "$2") qperf >/dev/null 2>&1 &
	srv=$!
	sleep 1
	out=$(timeout $((SECS + 30)) $(pre 1 "$2") qperf -cm1 -t "$SECS" -m 64K "$RXE_IP0" "$1" 2>&1)
	kill $srv 2>/dev/null
	wait $srv 2>/dev/null
	echo "$out" | awk '/bw *=/ { v = $3; u = $4; if (u ~ /^GB/) v *= 1000; if (u ~ /^KB/) v /= 1000; print v; ok = 1 } END { if (!ok) print 0 }'
}

echo "== vm-pacing: $ROUNDS rounds of $SECS s, plain then Justitia (mode auto)"
printf '%-34s %10s %10s %7s\n' setting plain justitia ratio
row() { printf '%-34s %10s %10s %7s\n' "$1" "$2" "$3" "$(ratio "$3" "$2")"; }

# lone flows (pace mode off); the lone plain ib_write_bw also sets MaxRate
# for the latency part
for t in "ib_write_bw 1048576" "ib_read_bw 1048576" "ib_send_bw 1048576"; do
	set -- $t
	part lone || { [ "$1" = ib_write_bw ] && part latency; } || continue
	: >"$O/p"; : >"$O/j"
	for _ in $(seq "$ROUNDS"); do
		one "$1" "$2" plain >>"$O/p"
		one "$1" "$2" justitia >>"$O/j"
	done
	row "lone $1 1M (MB/s)" "$(median <"$O/p")" "$(median <"$O/j")"
	[ "$1" = ib_write_bw ] && WRITE_PLAIN=$(median <"$O/p")
done
for t in rc_bw rc_rdma_write_bw; do
	part lone || continue
	: >"$O/p"; : >"$O/j"
	for _ in $(seq "$ROUNDS"); do
		qperf_one $t plain >>"$O/p"
		qperf_one $t justitia >>"$O/j"
	done
	row "lone qperf $t 64K (MB/s)" "$(median <"$O/p")" "$(median <"$O/j")"
done

# ---- a latency flow registered: the elephant against its grant.
# MaxRate: what a lone 1 MiB ib_write_bw carried plain above (rxe's nominal
# 10 Gbit/s would grant the elephant far more than the link carries, and
# the row would measure nothing)
if part latency; then
mr=$(awk -v b="${WRITE_PLAIN:-0}" 'BEGIN { printf "%d", b * 8 }')
if ((mr > 0)); then
	for n in 0 1; do "$C" -s /run/jp$n/justitiad.sock set max-rate "${mr}Mbit" >/dev/null; done
fi
: >"$O/a"; : >"$O/g"
for _ in $(seq "$ROUNDS"); do
	"$R" /run/jp1/justitiad.sock 1 -c latency -d "$RXE_DEV1" -t $((SECS + 8)) >/dev/null 2>&1 &
	LAT=$!
	sleep 1
	perf ib_write_bw 1048576 justitia lat
	# the grant follows SafeUtil: its mean over the run, twice a second
	gs=0 gn=0
	for _ in $(seq $((SECS * 2))); do
		v=$("$C" -s /run/jp1/justitiad.sock --json flows 2>/dev/null |
			jq '[.flows[] | select(.comm == "ib_write_bw") | .paced_rate_bps // 0] | max // 0')
		[[ $v =~ ^[0-9]+$ ]] && ((v > 0)) && gs=$((gs + v)) gn=$((gn + 1))
		sleep 0.5
	done
	g=$((gn ? gs / gn : 0))
	wait $PF_CLI
	wait $PF_SRV
	kill $LAT 2>/dev/null
	wait $LAT 2>/dev/null
	col lat 1048576 4 >>"$O/a"
	awk -v g="$g" 'BEGIN { printf "%.2f\n", g / 8e6 }' >>"$O/g"
done
a=$(median <"$O/a")
g=$(median <"$O/g")
printf '%-34s %10s %10s %7s\n' "latency flow: achieved / granted" "$a" "$g" "$(ratio "$a" "$g")"
LAT_CPU=$(awk -v c="$(cat "$O/lat.cpu")" -v b="$a" -v s="$SECS" \
	'BEGIN { if (b > 0) printf "%.2f", c * 1000 / (b * s); else print 0 }')
echo "(MaxRate ${mr} Mbit/s, the lone ib_write_bw's plain rate; below, with no
latency flow, it only seeds share mode's C when the flows moved nothing yet)"
fi

# pair BIG_SIZE SMALL_SIZE MODE TAG_BIG TAG_SMALL [SMALL_XENV]: two
# ib_write_bw at once, started together (both servers listen, then both
# clients start); SMALL_XENV: the second flow's $XENV.  (BENCH_LOG=debug
# BENCH_DEBUG='"ctrl"' log the controller's windows in $O/jd*.log.)
pair() {
	local s1 s2 p1 p2 c1
	srv ib_write_bw "$1" "$3" "$4"; s1=$PF_SRV p1=$PF_PORT
	XENV=${6:-} srv ib_write_bw "$2" "$3" "$5"; s2=$PF_SRV p2=$PF_PORT
	cli ib_write_bw "$1" "$3" "$4" $p1; c1=$PF_CLI
	XENV=${6:-} cli ib_write_bw "$2" "$3" "$5" $p2
	wait $c1 $PF_CLI
	wait $s1 $s2
}

# ---- two bandwidth flows, 1 MiB and 64 KiB: shares and aggregate
if part two; then
: >"$O/pb"; : >"$O/ps"; : >"$O/jb"; : >"$O/js"; : >"$O/pa"; : >"$O/ja"; : >"$O/pf"; : >"$O/jf"
for _ in $(seq "$ROUNDS"); do
	for m in plain justitia; do
		pair 1048576 65536 $m big small
		b=$(col big 1048576 4) s=$(col small 65536 4)
		k=${m:0:1}
		echo "$b" >>"$O/${k}b"; echo "$s" >>"$O/${k}s"
		awk -v a="$b" -v b="$s" 'BEGIN { print a + b }' >>"$O/${k}a"
		# fairness of the round: the smaller share over the larger
		awk -v a="$b" -v b="$s" 'BEGIN { if (a > 0 && b > 0) print (a < b ? a / b : b / a); else print 0 }' >>"$O/${k}f"
	done
done
row "two flows: 1 MiB (MB/s)" "$(median <"$O/pb")" "$(median <"$O/jb")"
row "two flows: 64 KiB (MB/s)" "$(median <"$O/ps")" "$(median <"$O/js")"
row "two flows: aggregate (MB/s)" "$(median <"$O/pa")" "$(median <"$O/ja")"
printf '%-34s %10s %10s\n' "two flows: smaller / larger share" "$(median <"$O/pf")" "$(median <"$O/jf")"
fi

# ---- a 64 B throughput flow next to a 1 MiB elephant
if part tput; then
# what a lone 64 B flow does, plain: the daemons' max_ops
: >"$O/p"
for _ in $(seq 3); do
	one ib_write_bw 64 plain >/dev/null
	col lone 64 5 >>"$O/p"
done
mops=$(awk -v m="$(median <"$O/p")" 'BEGIN { printf "%d", m * 1e6 }')
daemons_down
daemons_up "\"max_ops\": $mops${mr:+, \"max_rate\": \"${mr}Mbit\"}"
: >"$O/p"; : >"$O/j"; : >"$O/pe"; : >"$O/je"
for _ in $(seq "$ROUNDS"); do
	for m in plain justitia; do
		pair 1048576 64 $m ele tp JUSTITIA_CLASS=tput
		col tp 64 5 >>"$O/${m:0:1}"
		col ele 1048576 4 >>"$O/${m:0:1}e"
	done
done
row "64 B next to elephant (Mpps)" "$(median <"$O/p")" "$(median <"$O/j")"
row "... the elephant (MB/s)" "$(median <"$O/pe")" "$(median <"$O/je")"
echo "(max_ops $mops, a lone 64 B flow's plain rate; the 64 B flow JUSTITIA_CLASS=tput)"
fi

# ---- CPU per MB: the lone 1 MiB ib_write_bw client (all its threads, the
# shim's progress thread included; Soft-RoCE's packet work in its system
# calls too, for plain and Justitia alike)
if part cpu; then
: >"$O/p"; : >"$O/j"
for _ in $(seq "$ROUNDS"); do
	for m in plain justitia; do
		perf ib_write_bw 1048576 $m cpu
		wait $PF_CLI
		wait $PF_SRV
		awk -v c="$(cat "$O/cpu.cpu")" -v b="$(col cpu 1048576 4)" \
			-v s="$SECS" 'BEGIN { if (b > 0) printf "%.2f\n", c * 1000 / (b * s); else print 0 }' \
			>>"$O/${m:0:1}"
	done
done
row "client CPU per MB moved (ms/MB)" "$(median <"$O/p")" "$(median <"$O/j")"
[ -n "${LAT_CPU:-}" ] &&
	printf '%-34s %10s %10s\n' "... split and paced, last latency round" "" "$LAT_CPU"
fi

daemons_down
