#!/bin/bash
# The daemon killed -9 and restarted three times while four preloaded
# applications split their messages: tests/progs/integrity, rxe1 -> rxe0,
# two through ibv_post_send and two through ibv_wr_*, each a seeded mix of
# RDMA WRITE, READ, SEND and WRITE_WITH_IMM up to 1 MiB, 4 in flight, every
# byte and every completion verified; one daemon, 64 KiB chunks, pace mode
# share (so that even a lone flow splits).  While the daemon is away the
# applications run unpaced, as four plain integrity runs would: with 4 MiB
# messages, 8 in flight and a 67 ms ACK timeout those fail on Soft-RoCE
# without the shim too (1-2 of 4 per run: retransmission storms rxe does
# not survive), hence the lighter load and -T 18 (about 1 s).
#   restart.N.alive     all four applications still run when the daemon is
#                       killed the Nth time (else the test proves nothing)
#   restart.N.relisted  the restarted daemon lists every application's two
#                       QPs again (the shims reconnect on their own; the
#                       INFO line says how long it took, at most 30 s)
#   restart.APP.*       each application exits 0 with its data verified, its
#                       longest post call (ibv_post_send, or ibv_wr_start to
#                       ibv_wr_complete) under 1 s, and messages split
. tests/vm/lib.sh
. tests/vm/shimlib.sh
jv_inorder on
trap 'jv_inorder off' EXIT
C=$PWD/build/justctl
P=$PWD/build/tests/integrity
SOCK=/run/jr/justitiad.sock
S=$JV_OUT/stats
BYTES=${RESTART_BYTES:-800M}
mkdir -p "$S"

jv_split_conf "$JV_OUT/jr.json" /run/jr share

ctl() { "$C" -s "$SOCK" "$@"; }
start_daemon() { jv_daemon_start "$JV_OUT/jr.json" "$SOCK" ${RESTART_TRACE:+-D flow}; }
# listed PID...: how many of these processes have both their QPs listed
# (one justctl and one jq: under TCG next to four busy applications each
# takes a good fraction of a second)
listed() {
	local json
	json=$(ctl --json flows 2>>"$JV_OUT/ctl.err") || { echo 0; return; }
	jq --argjson want "[$(IFS=,; echo "$*")]" \
		'[.flows[].pid] as $all | [$want[] | . as $p | select([$all[] | select(. == $p)] | length == 2)] | length' \
		<<<"$json"
}
live() { local p; for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && echo "$p"; done; }
all_listed() {
	local l
	mapfile -t l < <(live)
	((${#l[@]} == 0)) || (($(listed "${l[@]}") == ${#l[@]}))
}

if ! start_daemon; then
	_jv_result restart.daemon 0 "justitiad did not come up"
	jv_summary
	exit 0
fi

APPS=(classic1 ex2 classic3 ex4)
PIDS=() WAITS=()
JV_TIMEOUT=600
for a in "${APPS[@]}"; do
	api=${a%%[0-9]*} seed=${a##*[a-z]}
	(exec env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET="$SOCK" JUSTITIA_LOG=stderr \
		JUSTITIA_STATS="$S/$a.json" timeout -k 5 "$JV_TIMEOUT" "$P" -a "$RXE_DEV1" \
		-b "$RXE_DEV0" -g "$RXE_GID" --api "$api" -S "$((20261126 + seed))" \
		--max-size "${RESTART_MAX:-256K}" --depth "${RESTART_DEPTH:-2}" -T 18 --bytes "$BYTES") >"$JV_OUT/$a.out" 2>&1 &
	WAITS+=($!)
done
# the integrity processes themselves (timeout's children)
for w in "${WAITS[@]}"; do
	for _ in $(seq 50); do
		c=$(pgrep -P "$w" -x integrity) && break
		sleep 0.1
	done
	PIDS+=("${c:-0}")
done
t0=$(jv_now)
jv_until 60 all_listed
expect_eq restart.0.listed "${#PIDS[@]}" "$(listed "${PIDS[@]}")"
echo "INFO every QP listed $(jv_secs "$t0") s after the applications started"

for n in 1 2 3; do
	sleep 2
	alive=0
	for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
	expect_eq "restart.$n.alive" "${#PIDS[@]}" "$alive"
	kill -9 "$JD"
	wait "$JD" 2>/dev/null
	sleep 0.5
	if ! start_daemon; then
		_jv_result "restart.$n.daemon" 0 "justitiad did not come back"
		break
	fi
	t0=$(jv_now)
	if [[ -n ${RESTART_TRACE:-} ]]; then
		for _ in $(seq 8); do
			j=$(ctl --json flows 2>/dev/null)
			echo "TRACE restart $n +$(jv_secs "$t0")s live $(live | wc -l) flows per pid:" \
				"$(jq -c '[.flows[] | {pid, qpn, id, class, split}] | group_by(.pid) | map({pid: .[0].pid, n: length, q: map("\(.qpn)/\(.id)/\(.split)")})' <<<"$j")"
			sleep 1
		done
	fi
	jv_until 30 all_listed
	mapfile -t l < <(live)
	expect_eq "restart.$n.relisted" "${#l[@]} of ${#l[@]} still running" \
		"$( ((${#l[@]})) && listed "${l[@]}" || echo 0) of ${#l[@]} still running"
	echo "INFO restart $n: every QP listed again after $(jv_secs "$t0") s"
done

field() { sed -n "s/^integrity: api=.* $2=\([^ ]*\).*/\1/p" "$1"; }
for i in "${!APPS[@]}"; do
	a=${APPS[$i]}
	rc=0
	wait "${WAITS[$i]}" || rc=$?
	out=$JV_OUT/$a.out
	_jv_result "restart.$a.run" $((rc == 0)) "rc $rc"
	((rc)) || [[ -n ${RESTART_TRACE:-} ]] && _jv_show "$out" "$a"
	expect_eq "restart.$a.verified" "OK 0 0" \
		"$(grep -q '^integrity: OK' "$out" && echo OK) $(field "$out" corrupted) $(field "$out" errors)"
	ms=$(field "$out" max_post_ms)
	_jv_result "restart.$a.post" "$(awk -v m="${ms:-9e9}" 'BEGIN { print (m < 1000) ? 1 : 0 }')" \
		"longest post call ${ms:-?} ms (at most 1000)"
	expect_eq "restart.$a.split" yes "$(jqv "$S/$a.json" \
		'[.qps[].split | (.one_sided // 0) + (.send // 0) + (.write_imm // 0)] | add > 0 | if . then "yes" else "no" end')"
	echo "INFO $a: $(field "$out" msgs) messages, $(field "$out" MBps) MB/s, longest post ${ms} ms"
done
[[ -s $JV_OUT/ctl.err ]] && _jv_show "$JV_OUT/ctl.err" "justctl errors"
[[ -n ${RESTART_TRACE:-} ]] && _jv_show "$JV_OUT/jr.log" justitiad
kill -TERM "$JD"
wait "$JD"
expect_eq restart.daemon.exit 0 "$?"
jv_summary
