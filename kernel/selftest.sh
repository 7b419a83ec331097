#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# selftest.sh - the kernel's own vsock test suite, with the test the series adds, and the
# series' af_unix selftest, on both kernels of kernel/build.sh (make kernel-selftest):
# tools/testing/vsock/vsock_test and tools/testing/selftests/net/af_unix/sockmap_queued
# built from the same Debian source with the tools/ patches of kernel/patches, then run in
# the test VM on the stock and on the patched kernel (kernel/suite-vsock-test.sh), and on
# the series without patch 6 where kernel/build.sh --without 6 has built it: there
# order_under_sends must fail. The VM has two vCPUs here (VSOCKMAP_VM_SMP), so that the
# insert and the sends of order_under_sends run at once. Never part of make check. Ends
# with "N passed, N failed".
#
#   kernel/selftest.sh [VARIANT]...    (default: stock patched [patched-without-6])

set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
CACHE=${VSOCKMAP_KERNEL_CACHE:-/var/cache/vsockmap-kernel}
cd "$ROOT"
# shellcheck source=tests/lib/summary.sh
. tests/lib/summary.sh

die() { echo "kernel-selftest: $*" >&2; exit 1; }

variants=("$@")
if ((${#variants[@]} == 0)); then
	variants=(stock patched)
	if [[ -d $CACHE/out/patched-without-6 ]]; then
		variants+=(patched-without-6)
	else
		echo "  SKIP patched-without-6: sockmap_queued.stream.order_under_sends is not shown to fail: no kernel without patch 6 (kernel/build.sh --only patched --without 6)"
		summary_skipped=$((summary_skipped + 1))
	fi
fi
export VSOCKMAP_VM_SMP=${VSOCKMAP_VM_SMP:-2}
tree=$(compgen -G "$CACHE/tree/linux-source-*" | sort -V | tail -n 1) ||
	die "no kernel source in $CACHE: run make kernel-patched first"
obj=$CACHE/obj/$(basename "$tree")
[[ -d $obj ]] || die "no build of $(basename "$tree") in $CACHE: run make kernel-patched first"

# The UAPI headers of that source (vsock_test uses newer ones than this machine's), made
# in the build's object directory ($obj/usr/include).
make -s -C "$CACHE/work/$(basename "$tree")" O="$obj" headers >/dev/null 2>&1 ||
	die "make headers failed"
hdrs=$obj/usr
# The pristine tools/ plus the patches that touch tools/ only.
src=$CACHE/selftest/src
rm -rf "$src"
mkdir -p "$src"
cp -a "$tree/tools" "$src/"
for p in "$HERE"/patches/0*.patch; do
	[[ $p == */0000-* ]] && continue
	grep '^diff --git' "$p" | grep -qv ' a/tools/' && continue
	(cd "$src" && patch -p1 -s -i "$p") || die "$(basename "$p") does not apply to tools/"
	echo "kernel-selftest: with $(basename "$p")" >&2
done
vsock=$src/tools/testing/vsock
make -s -C "$vsock" vsock_test LDLIBS=-lpthread \
	CFLAGS="-g -O2 -Wall -I. -I$tree/tools/include -I$hdrs/include -Wno-pointer-sign -fno-strict-overflow -fno-strict-aliasing -fno-common -D_GNU_SOURCE" ||
	die "building vsock_test failed"
# The af_unix selftest, with the harness of the same tree.
unix_test=$src/tools/testing/selftests/net/af_unix/sockmap_queued
gcc -g -O2 -Wall -D_GNU_SOURCE -I"$src/tools/testing/selftests" -I"$hdrs/include" \
	"$unix_test.c" -o "$unix_test" -lpthread || die "building sockmap_queued failed"

# pthread_cancel() loads libgcc_s at run time: ldd does not name it.
libgcc=$(gcc -print-file-name=libgcc_s.so.1)
[[ -f $libgcc ]] || die "libgcc_s.so.1 not found (vsock_test's pthread_cancel() needs it)"
for v in "${variants[@]}"; do
	kernel=$(compgen -G "$CACHE/out/$v/boot/vmlinuz-*" | head -n 1) || die "no $v kernel: make kernel-patched"
	modules=$(compgen -G "$CACHE/out/$v/lib/modules/*" | head -n 1)
	echo "== $v: $(basename "$kernel")"
	VSOCKMAP_VM_KERNEL=$kernel VSOCKMAP_VM_MODULES=$modules \
		tests/vm/run.sh kernel/suite-vsock-test.sh --timeout 1200 --name "vsock-test-$v" \
		--file "$vsock/vsock_test:/usr/bin/vsock_test" \
		--file "$unix_test:/usr/bin/sockmap_queued" \
		--file "$libgcc:/lib/x86_64-linux-gnu/libgcc_s.so.1" >"$CACHE/selftest/$v.out" 2>&1 || true
	grep -Ev '^[0-9]+ passed' "$CACHE/selftest/$v.out" | sed "s/^  \(PASS\|FAIL\|SKIP\) /  \1 $v: /"
	summary_add "$CACHE/selftest/$v.out" "$v"
done
summary_print
