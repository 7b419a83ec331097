# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-vsock-test.sh - the VM side of kernel/selftest.sh: the kernel's own vsock test suite
# (tools/testing/vsock/vsock_test, with the selftest of kernel/patches), server and client in
# one guest over vsock_loopback (CID 1), the control channel on 127.0.0.1. One VMTEST line
# per test case.

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"

log=$VMTEST_TMP/vsock_test
vsock_test --mode=server --control-port=1234 --peer-cid=1 >"$log.server" 2>&1 &
srv=$!
sleep 1
vsock_test --mode=client --control-host=127.0.0.1 --control-port=1234 --peer-cid=1 \
	>"$log.client" 2>&1
rc=$?
wait "$srv"
src=$?
# "N - NAME...ok" per case; a failing case prints its reason and the run stops there.
sed -n 's/^\([0-9]*\) - \(.*\)\.\.\.ok$/\1 \2/p' "$log.client" | while read -r n name; do
	vmtest_pass "vsock_test-$n" "$name"
done
if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
	vmtest_fail vsock_test "client rc=$rc server rc=$src: $(tail -n 3 "$log.client" | tr '\n' ' ') | $(tail -n 3 "$log.server" | tr '\n' ' ')"
fi

# The af_unix selftest of the series (TAP: "ok N NAME", "not ok N NAME"). Without the series
# its taken_at_insert cases must fail: that shows they can.
log=$VMTEST_TMP/sockmap_queued
sockmap_queued >"$log" 2>&1
case $(uname -r) in
*-stock) stock=1 ;;
*) stock=0 ;;
esac
sed -n 's/^\(not ok\|ok\) [0-9]* \([^ ]*\)\(.*\)$/\1|\2|\3/p' "$log" | while IFS='|' read -r res name rest; do
	case $rest in *"# SKIP"*)
		vmtest_skip "$name" "${rest#*# SKIP }"
		continue ;;
	esac
	case $res:$stock:$name in
	ok:1:*.taken_at_insert) vmtest_fail "$name" "passes without the series: it cannot fail" ;;
	"not ok":1:*.taken_at_insert)
		# For the reason the series removes, not a failed set-up: SIOCINQ not 0 after the insert.
		# This case's own lines: from its RUN line to its result.
		_case=$(awk -v n="$name" 'index($0, "RUN") && index($0, n " ") { on = 1 } on { print } on && /^(not )?ok / { exit }' "$log")
		if printf '%s\n' "$_case" | grep -q 'taken_at_insert:Expected 0 (0) == inq'; then
			vmtest_pass "$name" "fails without the series, as it must: $(printf '%s\n' "$_case" | grep -m1 -o 'Expected 0 (0) == inq ([0-9]*)')"
		else
			vmtest_fail "$name" "failed on stock, but not at the SIOCINQ check: $(printf '%s\n' "$_case" | grep '^# ' | head -n 3 | tr '\n' ' ')"
		fi ;;
	ok:*) vmtest_pass "$name" ok ;;
	*) vmtest_fail "$name" "$(grep -F ":${name##*.}:" "$log" | head -n 2 | tr '\n' ' ')" ;;
	esac
done
grep -q '^# Totals' "$log" || vmtest_fail sockmap_queued "did not finish: $(tail -n 3 "$log" | tr '\n' ' ')"
