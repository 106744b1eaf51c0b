#!/bin/bash
# Data integrity under splitting: our integrity program moves a seeded mix
# of RDMA WRITE, READ, SEND and WRITE_WITH_IMM (1 B..64 MiB, random offsets,
# 1..4 SGEs, batches, unsignaled WRs) rxe1 -> rxe0 and verifies every byte,
# every receive length and the completion order.  For each post API it runs
# plain, then under the shim with the same seed while one daemon managing
# both devices forces 64 KiB chunks: 0 corrupted bytes, the same completion
# order file, the shim's counts equal the program's, and messages were
# really split (the shim's JUSTITIA_STATS report).  Also: the checker finds
# one flipped byte; and overlapping WRITE/READ and WRITE/WRITE pairs keep
# their order while the large message is split (--overlap).
. tests/vm/lib.sh
. tests/vm/shimlib.sh
# a QP's packets in order, as on a real RNIC (lib.sh)
jv_inorder on
trap 'jv_inorder off' EXIT
D=$PWD/build/justitiad
C=$PWD/build/justctl
P=$PWD/build/tests/integrity
S=$JV_OUT/stats
SEED=20261121
mkdir -p "$S"
jv_split_conf "$JV_OUT/ji.json" /run/ji share
"$D" -c "$JV_OUT/ji.json" -D flow >"$JV_OUT/ji.log" 2>&1 &
JD=$!
for _ in $(seq 100); do [ -S /run/ji/justitiad.sock ] && break; sleep 0.05; done
export JUSTITIA_SOCKET=/run/ji/justitiad.sock

# field OUT KEY: KEY=VALUE from the program's summary line
field() {
	sed -n "s/^integrity: api=.* $2=\([^ ]*\).*/\1/p" "$1"
}

# same A B: "identical", or where they differ first (A must not be empty)
same() {
	if [[ -s $1 ]] && cmp -s "$1" "$2"; then
		echo identical
	else
		echo "differs: $(diff "$1" "$2" 2>&1 | head -4 | tr '\n' ' ')"
	fi
}

# connected OUT: "yes" unless the shim's log says messages went whole
# (then its first two such lines).  Not the ordering barrier's episodes:
# the program verifies each message's bytes without polling (seconds for
# 64 MiB on a slow guest), so its barrier may wait past ORDER_WAIT_NS and
# large messages go whole until the program polls again ("came back late"),
# as designed (order.h); they are counted in the INFO line.
connected() {
	local w
	w=$(grep -E 'go whole|pacing whole' "$1" | grep -v 'ordering barrier' | head -2 | tr '\n' ' ')
	[[ -z $w ]] && echo yes || echo "no: $w"
}

# the checker itself: a byte flipped in message 5's destination is found
timeout 60 "$P" -a "$RXE_DEV1" -b "$RXE_DEV0" -g "$RXE_GID" --max-size 1M --bytes 4M \
	--corrupt 5 >"$JV_OUT/integrity.checker.out" 2>&1
expect_eq integrity.checker "rc 1, corrupted 1" \
	"rc $?, corrupted $(field "$JV_OUT/integrity.checker.out" corrupted)"

# 64 MiB messages (two of exactly 64 MiB, a WRITE and a READ), then many
# small ones up to 1 MiB; both fit the case in about 6 minutes of TCG
JV_TIMEOUT=300
for api in classic ex; do
	for cfg in big small; do
		t=integrity.$api.$cfg
		args=(-a "$RXE_DEV1" -b "$RXE_DEV0" -g "$RXE_GID" -S "$SEED" --api "$api")
		if [[ $cfg == big ]]; then
			args+=(--max-size 64M --bytes 192M)
		else
			args+=(--max-size 1M --bytes 32M)
		fi
		run_one "$t.plain" "$P" "${args[@]}" --order "$S/$t.plain.order"
		run_one "$t.shim" env LD_PRELOAD="$SHIM" JUSTITIA_STATS="$S/$t.json" \
			JUSTITIA_LOG=stderr "$P" "${args[@]}" --order "$S/$t.shim.order"
		p=$JV_OUT/$t.plain.out
		s=$JV_OUT/$t.shim.out
		expect_eq "$t.plain.corrupted" 0 "$(field "$p" corrupted)"
		expect_eq "$t.shim.corrupted" 0 "$(field "$s" corrupted)"
		expect_eq "$t.shim.errors" 0 "$(field "$s" errors)"
		# the completions' sequence (wr_id opcode status), then with byte_len
		for r in plain shim; do cut -d' ' -f1-3 "$S/$t.$r.order" >"$S/$t.$r.seq" 2>&1; done
		expect_eq "$t.order.sequence" identical "$(same "$S/$t.plain.seq" "$S/$t.shim.seq")"
		expect_eq "$t.order" identical "$(same "$S/$t.plain.order" "$S/$t.shim.order")"
		# the shim counted each message once, however it was split
		expect_eq "$t.shim.counts" "$(field "$s" msgs)/$(field "$s" recvs)" \
			"$(jqv "$S/$t.json" '"\(.totals.send.wrs)/\(.totals.recv.wrs)"')"
		expect_eq "$t.shim.connected" yes "$(connected "$s")"
		# messages the shim split, from its own report (a sub-second run
		# is over before a poll of the daemon's flows could see it)
		split=$(jqv "$S/$t.json" '.totals.split | .one_sided + .send + .write_imm')
		# (both APIs: ibv_wr_* batches are buffered and split too)
		expect_eq "$t.split" yes "$( ((split > 0)) && echo yes || echo "no: $split split")"
		echo "INFO $t: $(field "$p" msgs) messages, $(field "$p" bytes) bytes;" \
			"plain $(field "$p" MBps) MB/s in $(field "$p" elapsed) s," \
			"shim $(field "$s" MBps) MB/s in $(field "$s" elapsed) s, $split messages split;" \
			"send byte_len differs plain $(field "$p" send_byte_len_differs)" \
			"shim $(field "$s" send_byte_len_differs);" \
			"$(grep -c 'ordering barrier did not come back' "$s") barrier waits gave up"
	done
done
# overlapping accesses: a small WRITE then a large READ of the same bytes
# must read them, a small WRITE then a large WRITE must leave the large
# one's; the large messages are split (64 KiB chunks on the split QP), so
# only the ordering barrier keeps them behind the small WRITE.  (Soft-RoCE
# rarely reorders two QPs; JUSTITIA_ORDER=none is run for information.)
for api in classic ex; do
	t=integrity.overlap.$api
	args=(-a "$RXE_DEV1" -b "$RXE_DEV0" -g "$RXE_GID" -S "$SEED" --api "$api" --max-size 1M
	      --overlap 20)
	run_one "$t.shim" env LD_PRELOAD="$SHIM" JUSTITIA_STATS="$S/$t.json" "$P" "${args[@]}"
	s=$JV_OUT/$t.shim.out
	expect_eq "$t.stale_reads" 0 "$(sed -n 's/.*stale_reads=\([0-9]*\).*/\1/p' "$s")"
	expect_eq "$t.overwritten" 0 "$(sed -n 's/.*overwritten=\([0-9]*\).*/\1/p' "$s")"
	split=$(jqv "$S/$t.json" '.totals.split.one_sided')
	expect_eq "$t.split" yes "$( ((split >= 40)) && echo yes || echo "no: $split split")"
	env LD_PRELOAD="$SHIM" JUSTITIA_ORDER=none timeout 120 "$P" "${args[@]}" \
		>"$JV_OUT/$t.none.out" 2>&1
	echo "INFO $t without the barrier: $(grep -o 'stale_reads=.*' "$JV_OUT/$t.none.out")"
done
kill -TERM $JD
wait $JD
jv_summary
