#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# fetch-vm-kernel.sh - provide a kernel and its modules for the vsockmap test VM.
#
# Prints two lines on success:
#   KERNEL=/path/to/vmlinuz
#   MODULES=/path/to/lib/modules/VERSION
# and exits non-zero with one "fetch-vm-kernel: ..." line on failure.
#
# Sources, in order:
#   1. VSOCKMAP_VM_KERNEL (+ VSOCKMAP_VM_MODULES): a kernel the user names.
#   2. A kernel already extracted into the cache (no network access at all).
#   3. The newest Debian bookworm-backports linux-image-6.12.*-cloud-amd64-unsigned,
#      downloaded with apt-get through a private source list derived from this
#      machine's own Debian apt source (same URI, suite bookworm-backports); with
#      VSOCKMAP_VM_SERIES=6.1, bookworm's own linux-image-6.1.*-cloud-amd64-unsigned
#      (suite bookworm), a kernel whose sockmap refuses vsock; with
#      VSOCKMAP_VM_SERIES=newest, the newest linux-binary-VERSION-cloud-amd64 and its
#      linux-modules-VERSION-cloud-amd64 in trixie-backports (7.3 on 2026-12-01).
#
# Environment:
#   VSOCKMAP_VM_CACHE    cache directory (default /var/cache/vsockmap-vm, falling
#                        back to ~/.cache/vsockmap-vm when that is not writable)
#   VSOCKMAP_VM_KERNEL   use this vmlinuz instead of downloading one
#   VSOCKMAP_VM_MODULES  its /lib/modules/VERSION directory (required with
#                        VSOCKMAP_VM_KERNEL unless it can be guessed)
#   VSOCKMAP_VM_REFRESH  set to 1 to look for a newer package even when one is cached
#   VSOCKMAP_VM_SERIES   6.12 (default), 6.1 or newest
#
# The host's apt state (lists, caches, status) is never modified.

set -euo pipefail

PROG=fetch-vm-kernel
SERIES=${VSOCKMAP_VM_SERIES:-6.12}
case $SERIES in
6.12) SUITE=bookworm-backports ;;
6.1) SUITE=bookworm ;;
# The newest cloud kernel Debian has for trixie: split into linux-binary-VERSION-cloud-amd64
# (the vmlinuz) and linux-modules-VERSION-cloud-amd64.
newest) SUITE=trixie-backports ;;
*)
	echo "$PROG: VSOCKMAP_VM_SERIES=$SERIES: use 6.12, 6.1 or newest" >&2
	exit 1
	;;
esac
PKG_REGEX="^linux-image-${SERIES//./\\.}\\.[^ ]*-cloud-amd64-unsigned\$"
SPLIT_REGEX='^linux-modules-[0-9][^ ]*-cloud-amd64$'
# Extracted packages are cached under extract/ by this prefix (the newest version wins).
EXTRACT_PREFIX=linux-image-$SERIES.
[[ $SERIES != newest ]] || EXTRACT_PREFIX=linux-split-
# Modules the VM needs, relative to MODULES; checked so a bad kernel fails here.
REQUIRED_MODS=(
	kernel/net/vmw_vsock/vsock.ko
	kernel/net/vmw_vsock/vmw_vsock_virtio_transport_common.ko
	kernel/net/vmw_vsock/vsock_loopback.ko
)

die() {
	echo "$PROG: $*" >&2
	exit 1
}

note() {
	echo "$PROG: $*" >&2
}

# has_module MODDIR REL: the module exists (compressed or not) or is built in.
has_module() {
	local f
	for f in "$1/$2" "$1/$2.xz" "$1/$2.zst" "$1/$2.gz"; do
		[[ -f $f ]] && return 0
	done
	[[ -f $1/modules.builtin ]] && grep -qx "$2" "$1/modules.builtin"
}

check_modules() {
	local moddir=$1 m
	[[ -d $moddir ]] || die "modules directory $moddir does not exist"
	for m in "${REQUIRED_MODS[@]}"; do
		has_module "$moddir" "$m" || die "$moddir lacks $m (need vsock + vsock_loopback modules)"
	done
}

emit() {
	local kernel=$1 moddir=$2
	[[ -f $kernel && -r $kernel ]] || die "kernel $kernel is not a readable file"
	check_modules "$moddir"
	echo "KERNEL=$kernel"
	echo "MODULES=$moddir"
}

# ---- 1. user-supplied kernel -------------------------------------------------
if [[ -n ${VSOCKMAP_VM_KERNEL:-} ]]; then
	kernel=$VSOCKMAP_VM_KERNEL
	[[ -f $kernel && -r $kernel ]] || die "VSOCKMAP_VM_KERNEL=$kernel is not a readable file"
	moddir=${VSOCKMAP_VM_MODULES:-}
	if [[ -z $moddir ]]; then
		# vmlinuz-VERSION next to lib/modules/VERSION, as in an extracted .deb or /boot.
		base=$(basename "$kernel")
		ver=${base#vmlinuz-}
		root=$(dirname "$(dirname "$kernel")")
		for cand in "$root/lib/modules/$ver" "/lib/modules/$ver"; do
			if [[ $ver != "$base" && -d $cand ]]; then
				moddir=$cand
				break
			fi
		done
		[[ -n $moddir ]] || die "VSOCKMAP_VM_KERNEL is set; also set VSOCKMAP_VM_MODULES=/path/to/lib/modules/VERSION"
	fi
	emit "$kernel" "$moddir"
	exit 0
fi
[[ -z ${VSOCKMAP_VM_MODULES:-} ]] || die "VSOCKMAP_VM_MODULES is set without VSOCKMAP_VM_KERNEL"

# ---- cache directory ---------------------------------------------------------
# shellcheck source=scripts/lib/apt-source.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/apt-source.sh"
cache=$(vm_cache_dir) || die "cannot create a writable cache directory (set VSOCKMAP_VM_CACHE)"

# Serialise concurrent callers (several test runs may start at once).
exec 9>"$cache/.lock"
flock 9 || die "cannot lock $cache/.lock"

# cached_kernel DIR: print "KERNEL MODDIR" for an extracted package, or fail. bookworm's
# packages have boot/vmlinuz-VERSION and lib/modules/VERSION; trixie's (merged /usr) have
# both in usr/lib/modules/VERSION.
cached_kernel() {
	local dir=$1 k m
	[[ -f $dir/.complete ]] || return 1
	for k in "$dir"/boot/vmlinuz-* "$dir"/usr/lib/modules/*/vmlinuz; do
		[[ -f $k ]] || continue
		if [[ ${k##*/} == vmlinuz ]]; then
			m=${k%/vmlinuz}
		else
			m=$dir/lib/modules/${k##*/vmlinuz-}
		fi
		[[ -d $m ]] || continue
		printf '%s %s\n' "$k" "$m"
		return 0
	done
	return 1
}

# newest_cached: the extracted package whose name sorts last by version.
newest_cached() {
	local d best=
	for d in $(find "$cache/extract" -mindepth 1 -maxdepth 1 -type d -name "$EXTRACT_PREFIX*" \
			-printf '%f\n' 2>/dev/null | sort -V); do
		cached_kernel "$cache/extract/$d" >/dev/null && best=$d
	done
	[[ -n $best ]] && echo "$best"
}

# ---- 2. cached kernel ---------------------------------------------------------
if [[ ${VSOCKMAP_VM_REFRESH:-0} != 1 ]] && pkg=$(newest_cached); then
	read -r kernel moddir < <(cached_kernel "$cache/extract/$pkg")
	emit "$kernel" "$moddir"
	exit 0
fi

# ---- 3. download ---------------------------------------------------------------
for tool in apt-get apt-cache dpkg-deb; do
	command -v "$tool" >/dev/null || die "$tool not found; set VSOCKMAP_VM_KERNEL and VSOCKMAP_VM_MODULES instead"
done

apt_dir=$cache/apt  # one list per suite: apt-6.1 for bookworm
[[ $SERIES == 6.12 ]] || apt_dir=$cache/apt-$SERIES
mkdir -p "$cache/debs" "$cache/extract"
private_apt "$apt_dir" "$SUITE" ||
	die "no Debian apt source with suite bookworm found in /etc/apt; set VSOCKMAP_VM_KERNEL and VSOCKMAP_VM_MODULES"

note "updating private package lists for $SUITE"
if ! out=$(apt-get "${APT_OPTS[@]}" -q update 2>&1); then
	printf '%s\n' "$out" | tail -n 5 >&2
	die "apt-get update of the private $SUITE list failed (offline? set VSOCKMAP_VM_KERNEL/VSOCKMAP_VM_MODULES)"
fi

# available NAME: the private lists have package NAME.
available() {
	apt-cache "${APT_OPTS[@]}" show "$1" >/dev/null 2>&1
}

# The packages to fetch, and the name of their extracted directory.
if [[ $SERIES == newest ]]; then
	# The highest VERSION whose modules and binary packages are both there.
	pkgs=()
	for mods in $(apt-cache "${APT_OPTS[@]}" search --names-only "$SPLIT_REGEX" 2>/dev/null |
			awk '{print $1}' | grep -E "$SPLIT_REGEX" | sort -rV); do
		ver=${mods#linux-modules-}
		ver=${ver%-cloud-amd64}
		if available "linux-binary-$ver-cloud-amd64"; then
			pkgs=("linux-binary-$ver-cloud-amd64" "$mods")
			break
		fi
	done
	name=${pkgs[0]:+linux-split-$ver-cloud-amd64}
	what="linux-binary-VERSION-cloud-amd64 with its linux-modules package"
else
	pkgs=()
	pkg=$(apt-cache "${APT_OPTS[@]}" search --names-only "$PKG_REGEX" 2>/dev/null |
		awk '{print $1}' | grep -E "$PKG_REGEX" | sort -V | tail -n1 || true)
	[[ -z $pkg ]] || pkgs=("$pkg")
	name=$pkg
	what="linux-image-$SERIES.*-cloud-amd64-unsigned package"
fi
if [[ -z $name ]]; then
	# Offline refresh or vanished package: fall back to what is cached.
	if name=$(newest_cached); then
		read -r kernel moddir < <(cached_kernel "$cache/extract/$name")
		emit "$kernel" "$moddir"
		exit 0
	fi
	die "no $what in $SUITE"
fi

dest=$cache/extract/$name
if ! cached_kernel "$dest" >/dev/null; then
	shopt -s nullglob
	rm -rf "$dest" "$dest.tmp"
	for pkg in "${pkgs[@]}"; do
		debs=("$cache/debs/${pkg}"_*.deb)
		if ((${#debs[@]} == 0)); then
			note "downloading $pkg"
			if ! out=$(cd "$cache/debs" && apt-get "${APT_OPTS[@]}" -q download "$pkg" 2>&1); then
				printf '%s\n' "$out" | tail -n 5 >&2
				die "apt-get download $pkg failed"
			fi
			debs=("$cache/debs/${pkg}"_*.deb)
			((${#debs[@]} > 0)) || die "apt-get download $pkg produced no .deb"
		fi
		deb=${debs[-1]}
		note "extracting $(basename "$deb")"
		dpkg-deb -x "$deb" "$dest.tmp" || die "dpkg-deb -x $deb failed"
	done
	mv "$dest.tmp" "$dest"
	touch "$dest/.complete"
fi

read -r kernel moddir < <(cached_kernel "$dest") || die "$dest holds no boot/vmlinuz-* with matching lib/modules"
emit "$kernel" "$moddir"
