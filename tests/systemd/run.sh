#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# run.sh - the systemd tier: build the Debian package (twice, for reproducibility, and once
# more with a higher version), check it with lintian, boot a minimal Debian with systemd as
# PID 1 in the QEMU test VM and run tests/systemd/suite.sh there as a service: it installs
# the package with apt and tests the daemon as installed (see tests/systemd/README.md).
#
# Usage: tests/systemd/run.sh [--timeout SEC] [--shell]
#
#   --timeout SEC  bound on the whole VM run (default 3000, or VSOCKMAP_VM_TIMEOUT): the suite
#                  took 1320 s here with another VM beside it, and about 1200 s alone on a
#                  slower machine of this kind (its 29 restarts move 7.5 GiB)
#   --shell        debug: no suite; a root shell on the console (leave with 'poweroff -f')
#
# Environment: VSOCKMAP_VM_CACHE, VSOCKMAP_VM_KERNEL, VSOCKMAP_VM_MODULES (see
# scripts/fetch-vm-kernel.sh), VSOCKMAP_VM_REFRESH=1 (rebuild the cached root file system),
# VSOCKMAP_VM_VERBOSE=1 (echo the raw console), SYSTEMD_TESTS="name ..." (run only these
# tests of the suite), QEMU.
#
# Output: one "  PASS|FAIL|SKIP name detail" line per test, a "vm:" line with the timings,
# then "N passed, N failed[, N skipped]". Exit status 0 only if nothing failed, the suite
# reached its end and at least one test ran. The raw console is kept in
# .output/systemd/vm.log.

set -euo pipefail
shopt -s extglob

PROG=systemd-vm
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=tests/lib/runner.sh
. "$ROOT/tests/lib/runner.sh"
# shellcheck source=tests/lib/summary.sh
. "$ROOT/tests/lib/summary.sh"
QEMU=${QEMU:-qemu-system-x86_64}
# Order matters: each module needs the ones before it.
MODULES=(virtio_blk vsock vmw_vsock_virtio_transport_common vsock_loopback)

die() {
	echo "$PROG: $*" >&2
	exit 1
}

timeout_s=${VSOCKMAP_VM_TIMEOUT:-3000}
shell=0
while (($#)); do
	case $1 in
	--timeout)
		(($# >= 2)) || die "--timeout wants a value"
		timeout_s=$2
		shift 2
		;;
	--shell)
		shell=1
		shift
		;;
	*) die "usage: $0 [--timeout SEC] [--shell]" ;;
	esac
done
[[ $timeout_s =~ ^[0-9]+$ && $timeout_s -ge 60 ]] || die "--timeout wants whole seconds >= 60"

for tool in "$QEMU" cpio gzip xz; do
	command -v "$tool" >/dev/null || die "$tool not found (make deps)"
done
BUSYBOX=$(command -v busybox || true)
if [[ -z $BUSYBOX ]] || ldd "$BUSYBOX" >/dev/null 2>&1; then
	die "a static busybox is needed (apt-get install busybox-static)"
fi
[[ -x $ROOT/.output/tools/vsm-peer ]] || die ".output/tools/vsm-peer missing: run make first"
for tool in dpkg-buildpackage lintian; do
	command -v "$tool" >/dev/null || die "$tool not found (make deps)"
done

outdir=$ROOT/.output/systemd
mkdir -p "$outdir"
log=$outdir/vm.log
initrd=$outdir/initramfs.cpio.gz
rel_log=${log#"$PWD"/}

t0=$EPOCHREALTIME
kinfo=$("$ROOT/scripts/fetch-vm-kernel.sh") || exit 1
kernel=$(sed -n 's/^KERNEL=//p' <<<"$kinfo")
moddir=$(sed -n 's/^MODULES=//p' <<<"$kinfo")
[[ -n $kernel && -n $moddir ]] || die "fetch-vm-kernel.sh printed no KERNEL/MODULES"
if ! rootfs=$("$ROOT/scripts/build-systemd-rootfs.sh"); then
	if ((EUID != 0)); then
		echo "  SKIP systemd-vm building the Debian root file system needs root (debootstrap)"
		echo "0 passed, 0 failed, 1 skipped"
		exit 0
	fi
	exit 1
fi
rootfs=${rootfs#ROOTFS=}
t_prep=$EPOCHREALTIME

# ---- the Debian package: what the VM installs, built twice, and a higher version ----------
pkgdir=$outdir/deb
base_version=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
up_version=$base_version+upgradetest1
deb_sha() { # DIR VERSION: the sha256 of that build's vsockmap .deb
	sha256sum "$1/vsockmap_$2_amd64.deb" | cut -d' ' -f1
}
"$ROOT/scripts/build-deb.sh" --out "$outdir/deb-first" --no-lintian >/dev/null ||
	die "scripts/build-deb.sh failed"
"$ROOT/scripts/build-deb.sh" --out "$pkgdir" --no-lintian >/dev/null || die "scripts/build-deb.sh failed"
sha1=$(deb_sha "$outdir/deb-first" "$base_version")
sha2=$(deb_sha "$pkgdir" "$base_version")
if [[ $sha1 == "$sha2" ]]; then
	echo "  PASS package-reproducible two builds of vsockmap_${base_version}_amd64.deb, one sha256 ${sha1:0:16}"
	runner_count PASS
else
	diff_files=$(diff <(dpkg-deb -c "$outdir/deb-first/vsockmap_${base_version}_amd64.deb") \
		<(dpkg-deb -c "$pkgdir/vsockmap_${base_version}_amd64.deb") | tr '\n' ' ')
	echo "  FAIL package-reproducible two builds differ: ${sha1:0:16} and ${sha2:0:16} ${diff_files:+(contents: $diff_files)}"
	runner_count FAIL
fi
rm -rf "$outdir/deb-first"
tags=$(lintian --pedantic -I -E "$pkgdir/vsockmap_${base_version}_amd64.changes" 2>&1 |
	grep -v 'running with root privileges' || true)
if [[ -z $tags ]]; then
	echo "  PASS package-lintian lintian $(lintian --print-version) --pedantic -I -E: no tag but the justified overrides in debian/"
	runner_count PASS
else
	echo "  FAIL package-lintian $(tr '\n' ' ' <<<"$tags")"
	runner_count FAIL
fi
"$ROOT/scripts/build-deb.sh" --out "$pkgdir" --version "$up_version" --no-lintian >/dev/null ||
	die "scripts/build-deb.sh --version $up_version failed"

# ---- initramfs: busybox, the modules, /init, and the payload copied over the root ----------
staging=$(mktemp -d "${TMPDIR:-/tmp}/vsockmap-systemd-vm.XXXXXX")
rcfile=$staging.rc
trap 'rm -rf "$staging" "$rcfile"' EXIT
mkdir -p "$staging"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,newroot,lib/modules/vmtest}
cp "$BUSYBOX" "$staging/bin/busybox"
cp "$HERE/init" "$staging/init"
chmod 0755 "$staging/init"
for m in "${MODULES[@]}"; do
	src=$(find "$moddir" \( -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" -o -name "$m.ko.gz" \) | head -n1)
	if [[ -z $src ]]; then
		grep -q "/$m\.ko\$" "$moddir/modules.builtin" 2>/dev/null && continue
		die "module $m not found under $moddir"
	fi
	case $src in
	*.xz) xz -dc "$src" >"$staging/lib/modules/vmtest/$m.ko" ;;
	*.zst) zstd -dc "$src" >"$staging/lib/modules/vmtest/$m.ko" ;;
	*.gz) gzip -dc "$src" >"$staging/lib/modules/vmtest/$m.ko" ;;
	*) cp "$src" "$staging/lib/modules/vmtest/$m.ko" ;;
	esac
	echo "$m" >>"$staging/lib/modules/vmtest/load-order"
done

p=$staging/payload
# vsockmap itself only as the two .debs: the suite installs them with apt (package.sh).
for v in "$base_version" "$up_version"; do
	install -D -m 0644 "$pkgdir/vsockmap_${v}_amd64.deb" "$p/var/lib/vmtest/pkg/vsockmap_${v}_amd64.deb"
done
install -D -m 0755 "$ROOT/.output/tools/vsm-peer" "$p/usr/bin/vsm-peer"
install -D -m 0755 "$ROOT/.output/tools/vsm-soak" "$p/usr/bin/vsm-soak"
install -D -m 0755 "$ROOT/.output/tools/vsm-bench" "$p/usr/bin/vsm-bench"
install -D -m 0644 "$ROOT/tests/lib/harness.sh" "$p/usr/lib/vmtest/lib.sh"
install -D -m 0755 "$HERE/suite.sh" "$p/usr/lib/vmtest/suite.sh"
install -D -m 0644 "$HERE/package.sh" "$p/usr/lib/vmtest/package.sh"
install -D -m 0644 "$HERE/vsockmap-test.service" "$p/etc/systemd/system/vsockmap-test.service"
mkdir -p "$p/etc/systemd/system/multi-user.target.wants"
# The suite's time limit, below the host's, so its own timeout is reported first.
suite_timeout=$((timeout_s - 60))
mkdir -p "$p/etc/vmtest"
{
	echo "VMTEST_TIMEOUT=$suite_timeout"
	echo "SYSTEMD_TESTS=\"${SYSTEMD_TESTS:-}\""
	# The restart test's size: RESTARTS=3 BULK=64M for a quick look.
	echo "RESTARTS=${RESTARTS:-20}"
	echo "BULK=${BULK:-256M}"
	# The soak through restarts: SOAK_COUNT=10000 for a long run.
	echo "SOAK_COUNT=${SOAK_COUNT:-1000}"
	[[ -z ${SOAK_SEED:-} ]] || echo "SOAK_SEED=$SOAK_SEED"
	# The scale group's redirects (test_scale): 10,000 unless asked otherwise.
	echo "SCALE_CONNS=${SCALE_CONNS:-10000}"
	echo "PKG_BASE=vsockmap_${base_version}_amd64.deb"
	echo "PKG_UPGRADE=vsockmap_${up_version}_amd64.deb"
} >"$p/etc/vmtest/env"
mkdir -p "$p/etc/systemd/system/vsockmap-test.service.d"
printf '[Service]\nRuntimeMaxSec=%s\n' "$suite_timeout" \
	>"$p/etc/systemd/system/vsockmap-test.service.d/timeout.conf"
if ((shell)); then
	# A root shell on the serial console instead of the suite (the image masks the gettys).
	printf '[Service]\nExecStart=\nExecStart=/bin/bash -l\nStandardInput=tty-force\nRuntimeMaxSec=infinity\n' \
		>"$p/etc/systemd/system/vsockmap-test.service.d/shell.conf"
fi
ln -sfn ../vsockmap-test.service "$p/etc/systemd/system/multi-user.target.wants/vsockmap-test.service"
(cd "$staging" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -1) >"$initrd.tmp"
mv -f "$initrd.tmp" "$initrd"

append="console=ttyS0 quiet panic=-1"
# shellcheck disable=SC2054 # commas belong to -cpu and -drive
qemu_cmd=("$QEMU" -accel tcg -cpu max,cx16=off -smp 1 -m 1024 -nographic -no-reboot -nic none
	-kernel "$kernel" -initrd "$initrd"
	-drive "file=$rootfs,format=raw,if=virtio,snapshot=on")

if ((shell)); then
	exec "${qemu_cmd[@]}" -append "$append"
fi

t_systemd='' t_ready=''

# The same checks with the host's systemd-analyze, offline (the host needs no systemd as
# PID 1 for these); the VM repeats them on the loaded units.
if command -v systemd-analyze >/dev/null; then
	hver=$(systemd-analyze --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p')
	out=$(cd "$ROOT/systemd" && systemd-analyze security --offline=true vsockmapd.service 2>&1)
	score=$(sed -n 's/.*Overall exposure level for vsockmapd.service: \([0-9.]*\).*/\1/p' <<<"$out")
	if [[ -n $score ]] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
		echo "  PASS host-analyze-security exposure $score (systemd $hver on the host, --offline=true)"
		runner_count PASS
	else
		echo "  FAIL host-analyze-security exposure ${score:-?} (systemd $hver, --offline=true): $(tail -n 1 <<<"$out")"
		runner_count FAIL
	fi
	# vsockmapd and vsockmapctl are not installed on the host: those complaints are expected.
	out=$(cd "$ROOT/systemd" && systemd-analyze verify --man=no ./vsockmapd.service ./vsockmapd.socket \
		./vsockmapd-logs.socket 2>&1) || true
	out=$(grep -vE 'Command /usr/(sbin/vsockmapd|bin/vsockmapctl) is not executable' <<<"$out" || true)
	if [[ -z $out ]]; then
		echo "  PASS host-analyze-verify vsockmapd.service, vsockmapd.socket, vsockmapd-logs.socket (systemd $hver on the host)"
		runner_count PASS
	else
		echo "  FAIL host-analyze-verify $(tr '\n' ' ' <<<"$out")"
		runner_count FAIL
	fi
fi
t_boot0=$EPOCHREALTIME
set +e
while IFS= read -r line; do
	runner_line "$line"
	if [[ $runner_clean =~ VM:\ switching\ to\ systemd ]]; then
		t_systemd=$EPOCHREALTIME
	elif [[ $runner_clean =~ vmtest:\ suite\ start ]]; then
		t_ready=$EPOCHREALTIME
	fi
done < <(timeout -k 10 "$timeout_s" "${qemu_cmd[@]}" -append "$append" </dev/null 2>&1 | tee "$log"
	echo "${PIPESTATUS[0]}" >"$rcfile")
set -e
t1=$EPOCHREALTIME
qemu_rc=$(cat "$rcfile" 2>/dev/null || true)

runner_verdict "$rel_log" "$qemu_rc" "$timeout_s"

timing="prepare $(runner_elapsed "$t0" "$t_prep")s"
[[ -z $runner_t_kernel ]] || timing+=", kernel $(runner_elapsed "$t_boot0" "$runner_t_kernel")s"
[[ -z $t_systemd || -z $t_ready ]] || timing+=", systemd to multi-user $(runner_elapsed "$t_systemd" "$t_ready")s"
timing+=", total $(runner_elapsed "$t0" "$t1")s"
echo "vm: ${runner_kernel:-kernel ?} + systemd ($timing); log $rel_log"
[[ -z $runner_problem ]] || echo "vm: $runner_problem"
runner_summary
