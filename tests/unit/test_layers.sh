#!/bin/bash
# The include rules of docs/architecture.md (tests/check-layers): the tree
# keeps them, and the checker finds each kind of break, planted one at a
# time in a copy of the sources (a check that cannot fail checks nothing).
# Run by tests/run-check --unit from the repository root.
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

tests/check-layers . || { echo "FAIL: the tree breaks its include rules"; exit 1; }

# plant(NAME FILE LINE EXPECT): a copy of the tree with LINE added before
# the first #include of FILE (or as a new FILE) must fail with EXPECT in
# the checker's output.
plant() {
	local name=$1 file=$2 line=$3 expect=$4 out
	rm -rf "$tmp/t" && mkdir -p "$tmp/t/tests"
	cp -r shim daemon common tools include "$tmp/t/"
	mkdir -p "$tmp/t/tests/progs" "$tmp/t/tests/sim"
	cp -r tests/progs/. "$tmp/t/tests/progs/"
	cp tests/sim/*.h "$tmp/t/tests/sim/"
	if [[ -e $tmp/t/$file ]]; then
		sed -i "0,/^#include/s//$line\n&/" "$tmp/t/$file"
	else
		echo "$line" >"$tmp/t/$file" # a new file
	fi
	if out=$(tests/check-layers "$tmp/t"); then
		echo "FAIL: $name: the checker did not see it"; exit 1
	fi
	grep -q -- "$expect" <<<"$out" || {
		echo "FAIL: $name: expected \"$expect\", got:"; echo "$out"; exit 1; }
	echo "ok: $name"
}

plant "upward include in the shim" shim/registry.h '#include "pace.h"' 'upward'
plant "the daemon link calls the pacer" shim/client.c '#include "pacectl.h"' 'upward'
plant "circle of headers" shim/splitstate.h '#include "registry.h"' 'circle'
plant "circle of modules" daemon/peerauth.c '#include "peer.h"' 'circle'
plant "ctl reaches into main" daemon/ctlcmd.c '#include "justitiad.h"' 'passed in'
plant "messages call the channel" daemon/peermsg.c '#include "peerconn.h"' 'never call back'
plant "a tool links daemon internals" tools/justctl.c '#include "daemon\/flows.h"' 'may include only'
plant "common depends on the shim" common/proto.c '#include "shim\/log.h"' 'may include only'
plant "a module without a layer" shim/newmod.c '#include "sq.h"' 'has no layer'
echo "all include rules hold, and each break is found"
