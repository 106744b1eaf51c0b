#!/bin/bash
# The interposer (shim/preload.c) on a host without an RDMA device: what it
# exports (the verbs it interposes at the versions libibverbs defines them,
# its own API), and what it does in a process that loads it (nothing on the
# application's stdout or stderr unless JUSTITIA_LOG asks; a bad
# JUSTITIA_WINDOW logged once and replaced by the default; no JUSTITIA_STATS
# report from a process that never used verbs; a program listing devices
# sees the same as without it).  Run by tests/run-check --unit after `make all`.
set -euo pipefail
B=${B:-build}
SHIM=$B/libjustitia.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# exports: default versions where libibverbs' are, the 1.0 compat ones, the API
# (defined symbols, global or weak, without the version nodes themselves)
objdump -T "$SHIM" | awk '!/\*UND\*/ && $2 ~ /[gw]/ && $NF != $(NF - 1) { print $(NF - 1), $NF }' |
	sort >"$tmp/exports"
for want in "IBVERBS_1.1 ibv_create_qp" "(IBVERBS_1.0) ibv_create_qp" \
	"IBVERBS_1.1 ibv_open_device" "(IBVERBS_1.0) ibv_open_device" \
	"IBVERBS_1.1 ibv_close_device" "IBVERBS_1.1 ibv_destroy_qp" \
	"IBVERBS_1.1 ibv_modify_qp" "IBVERBS_1.6 ibv_qp_to_qp_ex" \
	"JUSTITIA_1.0 justitia_qp_status" "JUSTITIA_1.0 justitia_set_qp_class"; do
	grep -qxF "$want" "$tmp/exports" || fail "libjustitia.so does not export $want"
done
# (nothing else of the shim leaks out of the version script)
if awk '{ print $2 }' "$tmp/exports" | grep -v '^ibv_\|^justitia_'; then
	fail "libjustitia.so exports more than the interposed verbs and its API"
fi

# silent by default, even with a bad setting; logged once when asked
env LD_PRELOAD="$SHIM" JUSTITIA_WINDOW=bogus true >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/out" ] && [ ! -s "$tmp/err" ] || fail "the shim wrote without JUSTITIA_LOG"
env LD_PRELOAD="$SHIM" JUSTITIA_LOG=stderr JUSTITIA_WINDOW=bogus true >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/out" ] || fail "the shim wrote to the application's stdout"
[ "$(grep -c 'JUSTITIA_WINDOW=bogus is not' "$tmp/err")" = 1 ] ||
	fail "a bad JUSTITIA_WINDOW was not logged once: $(cat "$tmp/err")"

# no report from a process that never used verbs (a wrapper that inherited it)
env LD_PRELOAD="$SHIM" JUSTITIA_STATS="$tmp/stats-%p.json" true
! ls "$tmp"/stats-* >/dev/null 2>&1 || fail "a process without verbs wrote a report"

# a verbs program sees what it sees without the shim (no device here)
if command -v ibv_devices >/dev/null; then
	ibv_devices >"$tmp/plain" 2>&1 || true
	env LD_PRELOAD="$SHIM" ibv_devices >"$tmp/shim" 2>&1 || true
	cmp -s "$tmp/plain" "$tmp/shim" || fail "ibv_devices differs under the shim"
fi
echo "ok"
