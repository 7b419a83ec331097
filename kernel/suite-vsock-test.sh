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
