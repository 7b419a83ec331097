#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# run.sh - run one test suite inside the vsockmap QEMU test VM.
#
# Usage: tests/vm/run.sh SUITE_SCRIPT [--file SRC[:DEST]]... [--timeout SEC] [--name NAME]
#                        [--virtio] [--shell]
#
#   SUITE_SCRIPT     busybox sh script run in the VM as /suite.sh; it sources
#                    /usr/lib/vmtest/lib.sh and prints VMTEST lines
#   --file SRC[:DEST]  extra file for the initramfs (see mkinitramfs.sh)
#   --timeout SEC    bound on the whole VM run (default 600, or VSOCKMAP_VM_TIMEOUT)
#   --name NAME      name of the run's initramfs and log (default: the suite's), so that
#                    two runs of one suite can go at once
#   --virtio         the virtio-vsock transport: a vhost-user-vsock device served by Debian's
#                    vhost-device-vsock on the host (tests/vm/virtio-host.sh), guest CID 3,
#                    peers on the host through tests/vm/virtio-agent.sh
#   --shell          interactive: after the suite, give a shell on the console
#                    (no timeout, no result parsing; leave with 'poweroff -f')
#
# Environment: VSOCKMAP_VM_CACHE, VSOCKMAP_VM_KERNEL, VSOCKMAP_VM_MODULES,
# VSOCKMAP_VM_SERIES (see scripts/fetch-vm-kernel.sh), VSOCKMAP_VM_APPEND (more kernel
# arguments, e.g. lockdown=confidentiality), VSOCKMAP_VM_TIMEOUT, VSOCKMAP_VM_VERBOSE=1
# (echo the raw console while it runs), VSOCKMAP_VM_SMP (vCPUs, default 1: every suite and
# bench figure is for one), QEMU (default qemu-system-x86_64).
#
# Output: one "  PASS|FAIL|SKIP name detail" line per test, then
# "N passed, N failed[, N skipped]". Exit status 0 only if nothing failed, the
# suite reached its end (VMSUITE-END) and at least one test ran.
# The raw console is kept in .output/vm/SUITE.log.

set -euo pipefail
shopt -s extglob

PROG=vm
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=tests/lib/runner.sh
. "$ROOT/tests/lib/runner.sh"
# shellcheck source=tests/lib/summary.sh
. "$ROOT/tests/lib/summary.sh"
QEMU=${QEMU:-qemu-system-x86_64}

die() {
	echo "$PROG: $*" >&2
	exit 1
}

usage() {
	echo "usage: $0 SUITE_SCRIPT [--file SRC[:DEST]]... [--timeout SEC] [--name NAME] [--virtio] [--shell]" >&2
	exit 2
}

suite=
run_name=
timeout_s=${VSOCKMAP_VM_TIMEOUT:-600}
smp=${VSOCKMAP_VM_SMP:-1}
[[ $smp =~ ^[1-8]$ ]] || { echo "vm: VSOCKMAP_VM_SMP wants 1 to 8 vCPUs, not '$smp'" >&2; exit 2; }
shell=0
virtio=0
VM_MEM_MB=1024
mkargs=()
while (($#)); do
	case $1 in
	--file)
		(($# >= 2)) || usage
		mkargs+=(--file "$2")
		shift 2
		;;
	--timeout)
		(($# >= 2)) || usage
		timeout_s=$2
		shift 2
		;;
	--shell)
		shell=1
		shift
		;;
	--virtio)
		virtio=1
		mkargs+=(--virtio)
		shift
		;;
	--name)
		(($# >= 2)) || usage
		run_name=$2
		shift 2
		;;
	-h | --help) usage ;;
	-*) die "unknown option $1" ;;
	*)
		[[ -z $suite ]] || usage
		suite=$1
		shift
		;;
	esac
done
[[ -n $suite ]] || usage
[[ -f $suite ]] || die "suite script $suite not found"
[[ $timeout_s =~ ^[0-9]+$ && $timeout_s -ge 10 ]] || die "--timeout wants whole seconds >= 10"
command -v "$QEMU" >/dev/null || die "$QEMU not found (apt-get install qemu-system-x86)"

name=$(basename "$suite")
name=${run_name:-${name%.sh}}
outdir=$ROOT/.output/vm
mkdir -p "$outdir"
log=$outdir/$name.log
initrd=$outdir/$name.cpio.gz
rel_log=${log#"$PWD"/}

t0=$EPOCHREALTIME

# Kernel + modules.
# Both helpers print their own one-line error.
kinfo=$("$ROOT/scripts/fetch-vm-kernel.sh") || exit 1
kernel=$(sed -n 's/^KERNEL=//p' <<<"$kinfo")
moddir=$(sed -n 's/^MODULES=//p' <<<"$kinfo")
[[ -n $kernel && -n $moddir ]] || die "fetch-vm-kernel.sh printed no KERNEL/MODULES"

"$HERE/mkinitramfs.sh" "$initrd" --suite "$suite" --modules "$moddir" ${mkargs[@]+"${mkargs[@]}"} ||
	exit 1

# Leave time inside the VM for the suite's own timeout to report before the
# host-side one fires.
# (Boot takes ~4 s, poweroff well under 1 s.)
suite_timeout=$((timeout_s - 30))
((suite_timeout >= timeout_s * 2 / 3 - 5)) || suite_timeout=$((timeout_s * 2 / 3 - 5))
((suite_timeout >= 5)) || suite_timeout=5

append="console=ttyS0 quiet panic=-1 vmtest.timeout=$suite_timeout${VSOCKMAP_VM_APPEND:+ $VSOCKMAP_VM_APPEND}"
# shellcheck disable=SC2054 # commas belong to -cpu
qemu_cmd=("$QEMU" -accel tcg -cpu max,cx16=off -smp "$smp" -m "$VM_MEM_MB" -nographic -no-reboot -nic none
	-kernel "$kernel" -initrd "$initrd")
if ((virtio)); then
	# shellcheck source=tests/vm/virtio-host.sh
	. "$HERE/virtio-host.sh"
	trap virtio_stop EXIT
	virtio_start "$name"
	qemu_cmd=("$virtio_novsock" "${qemu_cmd[@]}" "${virtio_qemu_args[@]}")
	append+=" vmtest.virtio=1"
fi

if ((shell)); then
	exec "${qemu_cmd[@]}" -append "$append vmtest.shell=1"
fi

rcfile=$(mktemp "${TMPDIR:-/tmp}/vsockmap-vm-rc.XXXXXX")
trap 'rm -f "$rcfile"; ((!virtio)) || virtio_stop' EXIT
t_boot0=$EPOCHREALTIME

# Raw console -> log; VMTEST lines -> stdout as they arrive (tests/lib/runner.sh).
set +e
while IFS= read -r line; do
	runner_line "$line"
done < <(timeout -k 10 "$timeout_s" "${qemu_cmd[@]}" -append "$append" </dev/null 2>&1 | tee "$log"
	echo "${PIPESTATUS[0]}" >"$rcfile")
set -e
t1=$EPOCHREALTIME

qemu_rc=$(cat "$rcfile" 2>/dev/null || true)

if ((virtio)); then
	virtio_stop
	virtio_check_filter
	virtio_check_log
fi
runner_verdict "$rel_log" "$qemu_rc" "$timeout_s"

timing="total $(runner_elapsed "$t0" "$t1")s"
[[ -z $runner_t_kernel ]] || timing="boot $(runner_elapsed "$t_boot0" "$runner_t_kernel")s, $timing"
vcpus=
((smp == 1)) || vcpus=", $smp vCPUs"
echo "vm: ${runner_kernel:-kernel ?}${VSOCKMAP_VM_APPEND:+ ($VSOCKMAP_VM_APPEND)} ($timing$vcpus); log $rel_log"
[[ -z $runner_problem ]] || echo "vm: $runner_problem"
runner_summary
