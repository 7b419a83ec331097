#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# mkinitramfs.sh - build the initramfs of the vsockmap test VM.
#
# Usage: tests/vm/mkinitramfs.sh OUT.cpio.gz --suite SCRIPT [--modules DIR] [--virtio]
#                                [--file SRC[:DEST]]...
#
#   --suite SCRIPT   shell script run inside the VM as /suite.sh (required)
#   --modules DIR    the VM kernel's /lib/modules/VERSION directory; default: the
#                    MODULES line printed by scripts/fetch-vm-kernel.sh
#   --virtio         the virtio transport (vmw_vsock_virtio_transport) in place of
#                    vsock_loopback, for a VM with a virtio-vsock device (run.sh --virtio),
#                    and tests/vm/virtio-guest.sh (the host agent's guest end) as
#                    /usr/lib/vmtest/virtio.sh, tests/vm/virtio-soak-forms.awk beside it
#   --file SRC[:DEST]
#                    extra file or directory; DEST defaults to /files/BASENAME.
#                    Dynamically linked executables (also inside a directory)
#                    bring their libraries.
#
# The archive holds: busybox (static) and its applet links, tests/vm/init as
# /init, tests/lib/harness.sh as /usr/lib/vmtest/lib.sh, the vsock modules
# (decompressed) in /lib/modules/vmtest/, .output/vsockmapd, .output/vsockmapctl
# and .output/tools/* in /usr/bin (whichever exist), socat, and the shared
# libraries of every executable (found with ldd). A suite named *small-writes* also gets
# tests/vm/small-writes-lib.sh as /usr/lib/vmtest/small-writes.sh.

set -euo pipefail

PROG=mkinitramfs
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
MODULES_IN_ORDER=(vsock vmw_vsock_virtio_transport_common vsock_loopback)

die() {
	echo "$PROG: $*" >&2
	exit 1
}

usage() {
	echo "usage: $0 OUT.cpio.gz --suite SCRIPT [--modules DIR] [--virtio] [--file SRC[:DEST]]..." >&2
	exit 2
}

out=
suite=
moddir=
files=()
virtio=0
while (($#)); do
	case $1 in
	--suite)
		(($# >= 2)) || usage
		suite=$2
		shift 2
		;;
	--modules)
		(($# >= 2)) || usage
		moddir=$2
		shift 2
		;;
	--virtio)
		MODULES_IN_ORDER[2]=vmw_vsock_virtio_transport
		virtio=1
		shift
		;;
	--file)
		(($# >= 2)) || usage
		files+=("$2")
		shift 2
		;;
	-h | --help) usage ;;
	-*) die "unknown option $1" ;;
	*)
		[[ -z $out ]] || usage
		out=$1
		shift
		;;
	esac
done
[[ -n $out && -n $suite ]] || usage
[[ -f $suite ]] || die "suite script $suite not found"

for tool in cpio gzip xz ldd; do
	command -v "$tool" >/dev/null || die "$tool not found"
done
BUSYBOX=$(command -v busybox || true)
[[ -n $BUSYBOX ]] || die "busybox not found (apt-get install busybox-static)"
if ldd "$BUSYBOX" >/dev/null 2>&1; then
	die "$BUSYBOX is dynamically linked; install busybox-static"
fi
SOCAT=$(command -v socat || true)
[[ -n $SOCAT ]] || die "socat not found (apt-get install socat)"

if [[ -z $moddir ]]; then
	moddir=$("$ROOT/scripts/fetch-vm-kernel.sh" | sed -n 's/^MODULES=//p')
	[[ -n $moddir ]] || die "scripts/fetch-vm-kernel.sh gave no MODULES"
fi
[[ -d $moddir ]] || die "modules directory $moddir not found"

# Absolute paths before leaving the caller's directory.
START=$PWD
abspath() {
	case $1 in
	/*) printf '%s\n' "$1" ;;
	*) printf '%s\n' "$START/$1" ;;
	esac
}
suite=$(abspath "$suite")
moddir=$(abspath "$moddir")
out=$(abspath "$out")

staging=$(mktemp -d "${TMPDIR:-/tmp}/vsockmap-initramfs.XXXXXX")
trap 'rm -rf "$staging"' EXIT
cd "$staging"

mkdir -p bin sbin usr/bin usr/sbin usr/lib/vmtest lib/modules/vmtest lib64 \
	etc root proc sys dev tmp run

# copy_libs FILE: copy the shared libraries and loader FILE needs, at the paths
# ldd reports (the loader searches /lib/x86_64-linux-gnu and friends).
copy_libs() {
	local f=$1 line lib
	# Static binaries and scripts: nothing to do.
	ldd "$f" >/dev/null 2>&1 || return 0
	while IFS= read -r line; do
		lib=
		case $line in
		*"=> not found"*) die "$f needs a library ldd cannot find: ${line%% =>*}" ;;
		*"=> /"*)
			lib=${line#*=> }
			lib=${lib%% (*}
			;;
		[[:space:]]/*)
			lib=${line#"${line%%[![:space:]]*}"}
			lib=${lib%% (*}
			;;
		esac
		[[ -n $lib ]] || continue
		[[ -e .$lib ]] && continue
		mkdir -p ".$(dirname "$lib")"
		cp -L "$lib" ".$lib"
	done < <(ldd "$f")
}

# put SRC DEST [MODE]: copy a file (replacing any applet link) plus its libs.
put() {
	local src=$1 dest=$2
	mkdir -p ".$(dirname "$dest")"
	rm -f ".$dest"
	cp -L "$src" ".$dest"
	[[ -z ${3:-} ]] || chmod "$3" ".$dest"
	copy_libs "$src"
}

# busybox and its applet links (absolute-path symlinks to /bin/busybox).
cp "$BUSYBOX" bin/busybox
chmod 0755 bin/busybox

# init, helpers, suite.
put "$HERE/init" /init 0755
put "$HERE/../lib/harness.sh" /usr/lib/vmtest/lib.sh 0644
put "$suite" /suite.sh 0755
if ((virtio)); then
	put "$HERE/virtio-guest.sh" /usr/lib/vmtest/virtio.sh 0644
	put "$HERE/virtio-soak-forms.awk" /usr/lib/vmtest/virtio-soak-forms.awk 0644
fi
[[ $(basename "$suite") != *small-writes* ]] ||
	put "$HERE/small-writes-lib.sh" /usr/lib/vmtest/small-writes.sh 0644

# Modules, decompressed for busybox insmod; /init loads the ones named in
# lib/modules/vmtest/load-order (built-in ones are left out).
: >lib/modules/vmtest/load-order
for m in "${MODULES_IN_ORDER[@]}"; do
	src=$(find "$moddir" \( -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" -o -name "$m.ko.gz" \) | head -n1)
	if [[ -z $src ]]; then
		if [[ -f $moddir/modules.builtin ]] && grep -q "/$m\.ko\$" "$moddir/modules.builtin"; then
			continue
		fi
		die "module $m not found under $moddir (nor in its modules.builtin)"
	fi
	echo "$m" >>lib/modules/vmtest/load-order
	case $src in
	*.xz) xz -dc "$src" >"lib/modules/vmtest/$m.ko" ;;
	*.zst) zstd -dc "$src" >"lib/modules/vmtest/$m.ko" ;;
	*.gz) gzip -dc "$src" >"lib/modules/vmtest/$m.ko" ;;
	*) cp "$src" "lib/modules/vmtest/$m.ko" ;;
	esac
done

# Repository binaries, whichever exist.
shopt -s nullglob
for b in "$ROOT/.output/vsockmapd" "$ROOT/.output/vsockmapctl" "$ROOT"/.output/tools/*; do
	[[ -f $b && -x $b ]] || continue
	put "$b" "/usr/bin/$(basename "$b")" 0755
done
shopt -u nullglob

put "$SOCAT" /usr/bin/socat 0755

# Extra files.
for spec in "${files[@]}"; do
	src=${spec%%:*}
	if [[ $spec == *:* ]]; then
		dest=${spec#*:}
	else
		dest=/files/$(basename "$src")
	fi
	src=$(abspath "$src")
	[[ $dest == /* ]] || dest=/$dest
	[[ -e $src ]] || die "--file $spec: $src not found"
	if [[ -d $src ]]; then
		mkdir -p ".$dest"
		cp -a "$src/." ".$dest/"
		while IFS= read -r -d '' f; do
			copy_libs "$f"
		done < <(find "$src" -type f -perm -u+x -print0)
	else
		put "$src" "$dest"
	fi
done

# Applet links where nothing else lives.
while IFS= read -r applet; do
	[[ -e $applet || -L $applet ]] && continue
	mkdir -p "$(dirname "$applet")"
	ln -s /bin/busybox "$applet"
done < <("$BUSYBOX" --list-full)

# Minimal /etc.
cat >etc/passwd <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >etc/group <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
echo "127.0.0.1 localhost vmtest" >etc/hosts
: >etc/fstab

# Device nodes the kernel needs before devtmpfs is mounted (cpio -R 0:0 keeps
# them root-owned; mknod needs root, so fall back to none: the kernel's own
# initramfs has /dev/console).
if [[ $(id -u) -eq 0 ]]; then
	mknod -m 0600 dev/console c 5 1
	mknod -m 0666 dev/null c 1 3
fi

mkdir -p "$(dirname "$out")"
find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -1 >"$out.tmp.$$"
mv -f "$out.tmp.$$" "$out"
