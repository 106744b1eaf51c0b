#!/bin/bash
# The shipped configuration example (etc/justitiad.json): justitiad
# --check-config accepts it, `make install` puts it into
# SYSCONFDIR/justitia/justitiad.json, and a second install does not overwrite
# an edited file (docs/justitiad.json.5.md, "The shipped example"); the
# public header include/justitia.h is installed and compiles on its own.
# Run by tests/run-check --unit from the repository root after `make all`.
set -euo pipefail
B=${B:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$B"/justitiad --check-config -c etc/justitiad.json >"$tmp/effective.json"
"$B"/justitiad --check-config -c /dev/null >/dev/null 2>&1 && {
	echo "FAIL: --check-config accepted an empty file (the check cannot fail)"; exit 1; }
# the effective configuration of the example is the built-in default one
printf '{}' >"$tmp/empty.json"
"$B"/justitiad --check-config -c "$tmp/empty.json" >"$tmp/defaults.json"
cmp "$tmp/effective.json" "$tmp/defaults.json" || {
	echo "FAIL: etc/justitiad.json differs from the defaults"; exit 1; }

# -o all: install what is built, never rebuild it with other flags here
make --no-print-directory -s -o all install DESTDIR="$tmp/root" PREFIX=/usr \
	SYSCONFDIR=/etc >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; exit 1; }
conf=$tmp/root/etc/justitia/justitiad.json
cmp "$conf" etc/justitiad.json
"$B"/justitiad --check-config -c "$conf" >/dev/null
grep -q '"_comment"' "$conf"
# the public header, from include/, compiles on its own
cmp "$tmp/root/usr/include/justitia.h" include/justitia.h
echo '#include <justitia.h>
int main(void) { return JUSTITIA_CLASS_LATENCY; }' >"$tmp/h.c"
${CC:-cc} -std=c11 -Wall -Werror -I"$tmp/root/usr/include" -c -o "$tmp/h.o" "$tmp/h.c"
echo '{ "log_level": "debug" }' >"$conf"
make --no-print-directory -s -o all install DESTDIR="$tmp/root" PREFIX=/usr \
	SYSCONFDIR=/etc >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; exit 1; }
grep -q '"debug"' "$conf" || { echo "FAIL: make install overwrote an existing justitiad.json"; exit 1; }
echo "ok: example valid, installed, not overwritten; header installed"
