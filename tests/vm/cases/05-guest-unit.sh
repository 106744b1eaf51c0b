#!/bin/bash
# The host's unit tests that need what the host's kernel lacks: each exited
# 77 in `tests/run-check`'s unit (and sanitizer) pass, which listed it in
# build/tests/unit/guest-tests (build-san/tests/unit/guest-tests).  Today
# these are the peer channel's tests (test_peerauth, test_peer), which need
# the kernel crypto API (AF_ALG); Debian's kernel in this guest has it.
# Here 77 is a failure: the guest must provide what they need.
. tests/vm/lib.sh

ran=0
for list in build/tests/unit/guest-tests build-san/tests/unit/guest-tests; do
	[ -s "$list" ] || continue
	case $list in build-san/*) tier=unit-san ;; *) tier=unit ;; esac
	while read -r t; do
		[ -n "$t" ] || continue
		name=$tier/${t##*/}
		log=$JV_OUT/${tier}-${t##*/}.log
		if [ ! -x "$t" ]; then
			_jv_result "$name" 0 "listed but not built: $t"
			continue
		fi
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
			ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 "$t" >"$log" 2>&1
		rc=$?
		ran=$((ran + 1))
		if [ $rc = 0 ] && ! grep -q "runtime error:\|ERROR: AddressSanitizer\|ERROR: LeakSanitizer" "$log"; then
			_jv_result "$name" 1 "$(grep -c '^\[       OK \]' "$log") cases, in the guest"
		else
			_jv_result "$name" 0 "rc $rc in the guest"
			_jv_show "$log" "$name"
		fi
	done <"$list"
done
echo "guest unit tests: $ran run"
jv_summary
