#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# build.sh - build the newest Debian kernel source twice for the test VM: as Debian ships it
# ("stock") and with kernel/patches/*.patch applied ("patched"), from the same tree and the
# same configuration, so that the two differ only by the patches (make kernel-patched).
#
#   kernel/build.sh [--jobs N] [--only stock|patched] [--first N | --without N] [--if-stale]
#
# --first N builds the patched variant with the first N patches only, as "patched-N": how
# each patch's own before and after is measured. --without N builds it with every patch but
# the Nth, as "patched-without-N": how a selftest is shown to catch what patch N fixes.
# --if-stale leaves a variant alone, without fetching anything, when its build in the cache
# was made from the same patches (by content; make kernel-selftest uses it).
#
# Source: linux-source-VERSION and Debian's cloud configuration (from
# linux-headers-VERSION-cloud-amd64), fetched like the VM kernels (scripts/fetch-vm-kernel.sh):
# a private apt list of this machine's own Debian archive, suite trixie-backports. The
# configuration is reduced to what the VM needs: every module off except vsock and its
# loopback transport, which are built in; BPF, BTF, sockmap and kprobes stay as Debian has
# them. Everything is cached outside the tree, in ${VSOCKMAP_KERNEL_CACHE:-/var/cache/
# vsockmap-kernel}; never part of make check. Prints, for each variant built:
#   VARIANT KERNEL=.../boot/vmlinuz-VERSION MODULES=.../lib/modules/VERSION
# and the VM takes it as VSOCKMAP_VM_KERNEL=... VSOCKMAP_VM_MODULES=... (tests/vm/run.sh).

set -euo pipefail
PROG=kernel-build
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
CACHE=${VSOCKMAP_KERNEL_CACHE:-/var/cache/vsockmap-kernel}
SUITE=trixie-backports
jobs=$(nproc)
only=
first=
without=
if_stale=0
while (($#)); do
	case $1 in
	--jobs) jobs=${2:?--jobs wants a number}; shift 2 ;;
	--only) only=${2:?--only wants stock or patched}; shift 2 ;;
	--first) first=${2:?--first wants a number}; shift 2 ;;
	--without) without=${2:?--without wants a patch number}; shift 2 ;;
	--if-stale) if_stale=1; shift ;;
	*) echo "usage: $0 [--jobs N] [--only stock|patched] [--first N | --without N] [--if-stale]" >&2; exit 2 ;;
	esac
done
[[ -z $first || -z $without ]] || { echo "$0: --first and --without do not go together" >&2; exit 2; }
[[ -z $first || $first =~ ^[1-9][0-9]*$ ]] || { echo "$0: --first wants a number, not '$first'" >&2; exit 2; }
[[ -z $without || $without =~ ^[1-9][0-9]*$ ]] || { echo "$0: --without wants a patch number, not '$without'" >&2; exit 2; }
[[ -z $first$without || $only == patched ]] || { echo "$0: --first and --without want --only patched" >&2; exit 2; }

die() { echo "$PROG: $*" >&2; exit 1; }
note() { echo "$PROG: $*" >&2; }

# variant_name VARIANT: stock, patched, patched-N (--first) or patched-without-N (--without).
variant_name() {
	if [[ $1 == patched && -n $first ]]; then
		echo "patched-$first"
	elif [[ $1 == patched && -n $without ]]; then
		echo "patched-without-$without"
	else
		echo "$1"
	fi
}

# write_want VARIANT FILE: the patches VARIANT is built with, one path per line.
write_want() {
	local n
	if [[ $1 != patched* ]]; then
		: >"$2"
		return 0
	fi
	find "$HERE/patches" -name '*.patch' ! -name '0000-*' | sort | head -n "${first:-1000}" >"$2"
	[[ -s $2 ]] || die "no kernel/patches/*.patch"
	[[ -n $without ]] || return 0
	n=$(printf '%04d' "$without")
	grep -q "/$n-" "$2" || die "there is no patch $without"
	grep -v "/$n-" "$2" >"$2.tmp" || true
	mv "$2.tmp" "$2"
}

# patch_sums FILE: the content of the patches FILE lists, as one line of sums each.
patch_sums() {
	local p
	while read -r p; do sha256sum <"$p"; done <"$1"
}

# up_to_date VARIANT: its build in the cache is of the same patches; prints its line.
up_to_date() {
	local dest=$CACHE/out/$1 k m
	[[ -f $dest/.vsockmap-applied ]] || return 1
	k=$(compgen -G "$dest/boot/vmlinuz-*" | head -n 1) || return 1
	m=$(compgen -G "$dest/lib/modules/*" | head -n 1) || return 1
	mkdir -p "$CACHE"
	write_want "$1" "$CACHE/want-$1"
	[[ $(cat "$dest/.vsockmap-applied") == "$(patch_sums "$CACHE/want-$1")" ]] || return 1
	echo "$1 KERNEL=$k MODULES=$m"
}

variants=()
for v in stock patched; do
	[[ -z $only || $only == "$v" ]] || continue
	v=$(variant_name "$v")
	if ((if_stale)) && up_to_date "$v"; then
		note "$v: up to date (--if-stale)"
		continue
	fi
	variants+=("$v")
done
((${#variants[@]})) || exit 0

# What a kernel build needs beyond make check's own packages (installed only when missing).
"$ROOT/scripts/install-deps.sh" --kernel || die "scripts/install-deps.sh --kernel failed"
for tool in apt-get apt-cache dpkg-deb make gcc flex bison bc pahole; do
	command -v "$tool" >/dev/null || die "$tool not found (kernel/README.md lists what the build needs)"
done

# ---- fetch ---------------------------------------------------------------------------------
# shellcheck source=scripts/lib/apt-source.sh
. "$ROOT/scripts/lib/apt-source.sh"
read -r uri signed_by < <(find_debian_source | head -n1) ||
	die "no Debian apt source with suite bookworm found in /etc/apt"
[[ $signed_by == /* && -f $signed_by ]] || signed_by=
apt_dir=$CACHE/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$CACHE/debs"
echo "deb${signed_by:+ [signed-by=$signed_by]} $uri $SUITE main" >"$apt_dir/sources.list"
APT_OPTS=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")
[[ $(id -u) -ne 0 ]] || APT_OPTS+=(-o APT::Sandbox::User=root)
apt-get "${APT_OPTS[@]}" -q update >/dev/null 2>&1 || die "apt-get update of the private $SUITE list failed"
src_pkg=$(apt-cache "${APT_OPTS[@]}" search --names-only '^linux-source-[0-9.]*$' | awk '{print $1}' |
	sort -V | tail -n1)
[[ -n $src_pkg ]] || die "no linux-source-VERSION package in $SUITE"
series=${src_pkg#linux-source-}
# The cloud headers of the same upstream series carry Debian's .config.
hdr_pkg=$(apt-cache "${APT_OPTS[@]}" search --names-only "^linux-headers-$series\\.[0-9]+\\+[^ ]*-cloud-amd64\$" |
	awk '{print $1}' | sort -V | tail -n1)
[[ -n $hdr_pkg ]] || die "no linux-headers-$series.*-cloud-amd64 in $SUITE (for Debian's configuration)"
for pkg in "$src_pkg" "$hdr_pkg"; do
	compgen -G "$CACHE/debs/${pkg}_*.deb" >/dev/null && continue
	note "downloading $pkg"
	(cd "$CACHE/debs" && apt-get "${APT_OPTS[@]}" -q download "$pkg" >/dev/null 2>&1) ||
		die "apt-get download $pkg failed"
done
src_deb=$(compgen -G "$CACHE/debs/${src_pkg}_*.deb" | sort -V | tail -n1)
hdr_deb=$(compgen -G "$CACHE/debs/${hdr_pkg}_*.deb" | sort -V | tail -n1)
debver=$(dpkg-deb -f "$src_deb" Version)

# ---- tree and configuration ----------------------------------------------------------------
tree=$CACHE/tree/$src_pkg-$debver
if [[ ! -f $tree/.vsockmap-pristine ]]; then
	note "unpacking $src_pkg $debver"
	rm -rf "$tree" "$CACHE/unpack"
	mkdir -p "$CACHE/unpack" "$CACHE/tree"
	dpkg-deb -x "$src_deb" "$CACHE/unpack"
	tar -C "$CACHE/unpack" -xaf "$CACHE/unpack/usr/src/$src_pkg.tar.xz"
	mv "$CACHE/unpack/$src_pkg" "$tree"
	rm -rf "$CACHE/unpack"
	touch "$tree/.vsockmap-pristine"
fi
cfg_dir=$CACHE/config
mkdir -p "$cfg_dir"
dpkg-deb --fsys-tarfile "$hdr_deb" | tar -xO --wildcards '*/.config' >"$cfg_dir/debian.config"

# make_config OUTDIR: Debian's cloud configuration, reduced for the VM.
make_config() {
	local out=$1
	cp "$cfg_dir/debian.config" "$out/.config"
	# No module the VM does not load; vsock and its loopback transport built in.
	: >"$cfg_dir/lsmod.empty"
	make -C "$tree" O="$out" LSMOD="$cfg_dir/lsmod.empty" localmodconfig </dev/null >/dev/null 2>&1 ||
		die "make localmodconfig failed"
	"$tree/scripts/config" --file "$out/.config" \
		--enable VSOCKETS --enable VIRTIO_VSOCKETS_COMMON --enable VSOCKETS_LOOPBACK \
		--enable VSOCKETS_DIAG \
		--disable MODULE_SIG --disable MODULE_SIG_ALL --set-str MODULE_SIG_KEY "" \
		--set-str SYSTEM_TRUSTED_KEYS "" --set-str SYSTEM_REVOCATION_KEYS "" \
		--disable DEBUG_INFO_BTF_MODULES --set-str LOCALVERSION "-vsockmap-$2" \
		--disable LOCALVERSION_AUTO
	make -C "$tree" O="$out" olddefconfig >/dev/null 2>&1 || die "make olddefconfig failed"
	local want
	for want in VSOCKETS VSOCKETS_LOOPBACK BPF_SYSCALL DEBUG_INFO_BTF NET_SOCK_MSG KPROBES; do
		grep -qx "CONFIG_$want=y" "$out/.config" || die "the reduced configuration lost CONFIG_$want"
	done
}

# set_patches WANT: the working tree carries exactly the patches listed in WANT (a file, one
# path per line; empty for stock). What it carries is kept in applied/, to be taken off again.
set_patches() {
	local want=$1 p sums
	# By content, not by name: a patch changed in place is applied again.
	sums=$(patch_sums "$want")
	if [[ -f $work/.vsockmap-applied ]] && [[ $(cat "$work/.vsockmap-applied") == "$sums" ]]; then
		return 0
	fi
	if [[ -d $CACHE/applied ]]; then
		for p in $(find "$CACHE/applied" -name '*.patch' | sort -r); do
			(cd "$work" && patch -R -p1 -s -i "$p") || die "taking $(basename "$p") off again failed; remove $work"
		done
	fi
	rm -rf "$CACHE/applied"
	mkdir -p "$CACHE/applied"
	while read -r p; do
		(cd "$work" && patch -p1 --forward -s -i "$p") ||
			die "$(basename "$p") does not apply to $src_pkg $debver"
		cp "$p" "$CACHE/applied/"
	done <"$want"
	printf '%s\n' "$sums" >"$work/.vsockmap-applied"
}

# build VARIANT: the working tree without (stock) or with (patched) the patches, into
# out/VARIANT. One tree and one object directory for both, so the second is incremental.
build() {
	local variant=$1 ver dest want
	dest=$CACHE/out/$variant
	want=$CACHE/want-$variant
	write_want "$variant" "$want"
	set_patches "$want"
	tree=$work make_config "$obj" "$variant"
	note "$variant: building (make -j$jobs; the first build takes a while)"
	make -C "$work" O="$obj" -j"$jobs" bzImage modules >"$obj/build.log" 2>&1 ||
		{ tail -n 20 "$obj/build.log" >&2; die "$variant: the build failed ($obj/build.log)"; }
	ver=$(make -s -C "$work" O="$obj" kernelrelease)
	rm -rf "$dest"
	mkdir -p "$dest/boot"
	cp "$obj/arch/x86/boot/bzImage" "$dest/boot/vmlinuz-$ver"
	make -C "$work" O="$obj" INSTALL_MOD_PATH="$dest" modules_install >/dev/null 2>&1 ||
		die "$variant: modules_install failed"
	patch_sums "$want" >"$dest/.vsockmap-applied"
	echo "$variant KERNEL=$dest/boot/vmlinuz-$ver MODULES=$dest/lib/modules/$ver"
}

work=$CACHE/work/$src_pkg-$debver
obj=$CACHE/obj/$src_pkg-$debver
if [[ ! -f $work/.vsockmap-tree ]]; then
	rm -rf "$work"
	mkdir -p "$(dirname "$work")"
	cp -a "$tree" "$work"
	touch "$work/.vsockmap-tree"
	rm -rf "$CACHE/applied" "$obj"
fi
mkdir -p "$obj"
for v in "${variants[@]}"; do
	build "$v"
done
