#!/bin/bash
# An application killed -9 while it holds tokens and has split chunks in
# flight: two preloaded tests/progs/mtpost (one QP pair each, rxe1 -> rxe0,
# every byte verified) share rxe1, which one daemon paces (pace mode
# protect: SafeUtil = max_rate, shared by weight; 64 KiB chunks).  A is
# killed -9; then
#   reclaim.freed   A's flows are gone from the daemon within 1 s: the
#                   justctl poll that finds them gone was sent at most 1 s
#                   after the kill (under TCG one justctl + jq takes 0.2-0.5 s)
#   reclaim.grant   B's granted rate rises (to more than 1.5 times what it
#                   was while A ran) within 5 s of the kill (polled too)
#   reclaim.b.*     B finishes with its data verified
. tests/vm/lib.sh
. tests/vm/shimlib.sh
jv_inorder on
trap 'jv_inorder off' EXIT
C=$PWD/build/justctl
M=$PWD/build/tests/mtpost
SOCK=/run/jk/justitiad.sock

cat >"$JV_OUT/jk.json" <<EOF
{
  "runtime_dir": "/run/jk",
  "devices": [
    { "name": "$RXE_DEV1", "gid_index": $RXE_GID, "max_rate": "200Mbit",
      "chunk_default": 65536, "chunk_latency": 65536 },
    { "name": "$RXE_DEV0", "gid_index": $RXE_GID, "chunk_default": 65536, "chunk_latency": 65536 }
  ],
  "controller": { "pace_mode": "protect" }
}
EOF

ctl() { "$C" -s "$SOCK" "$@"; }
# grant PID: the granted rate of PID's flow on rxe1 (its posting side)
grant() {
	ctl --json flows 2>/dev/null | jq -r --argjson p "$1" --arg d "$RXE_DEV1" \
		'[.flows[] | select(.pid == $p and .device == $d) | .paced_rate_bps // 0] | add // 0'
}
wait_file() {
	local end=$((SECONDS + ${2:-60}))
	until [[ -s $1 ]]; do
		((SECONDS < end)) || { echo 0; return 1; }
		sleep 0.1
	done
	cat "$1"
}

if ! jv_daemon_start "$JV_OUT/jk.json" "$SOCK"; then
	_jv_result reclaim.daemon 0 "justitiad did not come up"
	jv_summary
	exit 0
fi

SHIMENV=(env LD_PRELOAD="$SHIM" JUSTITIA_SOCKET="$SOCK" JUSTITIA_LOG=stderr)
rm -f "$JV_OUT"/{a,b}.ready "$JV_OUT/b.stop"
(exec "${SHIMENV[@]}" "$M" -t 1 -D 120 -s 1048576 --ready "$JV_OUT/a.ready") >"$JV_OUT/a.out" 2>&1 &
AP=$!
(exec "${SHIMENV[@]}" "$M" -t 1 -D 120 -s 1048576 --ready "$JV_OUT/b.ready" \
	--stop "$JV_OUT/b.stop") >"$JV_OUT/b.out" 2>&1 &
BP=$!
a=$(wait_file "$JV_OUT/a.ready" 120)
b=$(wait_file "$JV_OUT/b.ready" 120)
# both active: B granted half of MaxRate (an inactive flow's share goes to
# the active ones, and on a slow guest a flow waiting for its ordering
# barrier or a retransmission is inactive for a moment): the lowest of
# B's grants while both run, polled until it is half (at most 20 s)
g0=0
end=$((SECONDS + 20))
while ((SECONDS < end)); do
	g=$(grant "$b")
	((g > 0 && (g0 == 0 || g < g0))) && g0=$g
	((g0 > 0 && g0 <= 100000001)) && break
	sleep 0.2
done
ga=$(grant "$a")
echo "INFO while both run: A granted $ga bit/s, B $g0 bit/s (B's lowest)"

kill -9 "$AP"
t0=$(jv_now)
# one poll answers both (on a slow guest one justctl + jq takes up to 2 s:
# a poll spent on anything else would delay what is judged): "N G", N
# A's flows left, G B's grant
both() {
	ctl --json flows 2>/dev/null | jq -r --argjson a "$a" --argjson b "$b" --arg d "$RXE_DEV1" \
		'"\([.flows[] | select(.pid == $a)] | length) \([.flows[] | select(.pid == $b and .device == $d) | .paced_rate_bps // 0] | add // 0)"'
}
asked='' rose='' left=-1 g1=0
while :; do
	sent=$(jv_secs "$t0") # when this poll started
	read -r left g1 <<<"$(both)"
	g1=${g1:-0}
	[[ -z $asked && $left == 0 ]] && asked=$sent
	[[ -z $rose ]] && ((g1 * 2 > g0 * 3)) && rose=$sent
	[[ -n $asked && -n $rose ]] && break
	(($(jv_secs "$t0" | cut -d. -f1) < 10)) || break
	sleep 0.05
done
_jv_result reclaim.freed "$(awk -v s="${asked:-99}" 'BEGIN { print (s <= 1.0) ? 1 : 0 }')" \
	"A's flows gone when asked ${asked:-never (10 s)} s after the kill ($left left at the last poll)"
_jv_result reclaim.grant "$( ((g0 > 0)) && [[ -n $rose ]] && awk -v s="$rose" 'BEGIN { print (s <= 5.0) ? 1 : 0 }' || echo 0)" \
	"B granted $g0 -> $g1 bit/s, seen by a poll sent ${rose:-never (10 s)} s after the kill (A's flows gone at ${asked:-never} s)"
touch "$JV_OUT/b.stop"
rc=0
wait "$BP" || rc=$?
_jv_result reclaim.b.run $((rc == 0)) "mtpost B rc $rc"
((rc)) && _jv_show "$JV_OUT/b.out" "mtpost B"
expect_eq reclaim.b.verified yes "$(grep -q 'all verified' "$JV_OUT/b.out" && echo yes)"
kill -TERM "$JD"
wait "$JD"
expect_eq reclaim.daemon.exit 0 "$?"
jv_summary
