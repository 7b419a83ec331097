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

# The af_unix selftest of the series (TAP: "ok N NAME", "not ok N NAME"). Each case must also
# be seen to fail where the kernel lacks what it checks: taken_at_insert on the stock kernel
# (no patch 7), order_under_sends on the series without patch 6 (kernel/build.sh --without 6).
log=$VMTEST_TMP/sockmap_queued
sockmap_queued >"$log" 2>&1
case $(uname -r) in
*-stock) lacks=taken_at_insert why="without the series" check='taken_at_insert:Expected 0 (0) == inq' ;;
*-without-6) lacks=order_under_sends why="without patch 6" check='order_under_sends:round [0-9]*: [0-9]* read where [0-9]* was sent' ;;
*) lacks= ;;
esac
sed -n 's/^\(not ok\|ok\) [0-9]* \([^ ]*\)\(.*\)$/\1|\2|\3/p' "$log" | while IFS='|' read -r res name rest; do
	if [ -n "$lacks" ] && [ "${name##*.}" = "$lacks" ]; then
		# Every socket type must fail, but a case for streams only skips its dgram variant.
		case $rest in *"# SKIP"*)
			if [ "$name" = "sockmap_queued.stream.$lacks" ]; then
				vmtest_fail "$name" "skipped $why, where it must fail: ${rest#*# SKIP }"
			else
				vmtest_skip "$name" "${rest#*# SKIP }"
			fi
			continue ;;
		esac
		if [ "$res" = ok ]; then
			vmtest_fail "$name" "passes $why: it did not catch what it checks"
			continue
		fi
		# For the reason the patch removes, not a failed set-up: this case's own lines, from
		# its RUN line to its result, must hold its own check's message.
		_case=$(awk -v n="$name" 'index($0, "RUN") && index($0, n " ") { on = 1 } on { print } on && /^(not )?ok / { exit }' "$log")
		_seen=$(printf '%s\n' "$_case" | grep -m1 -o "${check}[ (0-9)]*")
		if [ -n "$_seen" ]; then
			vmtest_pass "$name" "fails $why, as it must: ${_seen#*:}"
		else
			vmtest_fail "$name" "failed $why, but not at its own check: $(printf '%s\n' "$_case" | grep '^# ' | head -n 3 | tr '\n' ' ')"
		fi
		continue
	fi
	case $rest in *"# SKIP"*)
		vmtest_skip "$name" "${rest#*# SKIP }"
		continue ;;
	esac
	case $res in
	ok) vmtest_pass "$name" ok ;;
	*) vmtest_fail "$name" "$(grep -F ":${name##*.}:" "$log" | head -n 2 | tr '\n' ' ')" ;;
	esac
done
grep -q '^# Totals' "$log" || vmtest_fail sockmap_queued "did not finish: $(tail -n 3 "$log" | tr '\n' ' ')"
# The case that must fail here must have run at all.
if [ -n "$lacks" ] && ! grep -q "^\(not \)\{0,1\}ok [0-9]* sockmap_queued\.stream\.$lacks\( \|$\)" "$log"; then
	vmtest_fail "sockmap_queued.stream.$lacks" "never ran $why, where it must fail"
fi
