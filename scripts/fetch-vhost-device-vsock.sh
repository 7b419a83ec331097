#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# fetch-vhost-device-vsock.sh - provide Debian's vhost-device-vsock, the vhost-user vsock
# backend of the test VM's virtio tier (tests/vm/run.sh --virtio).
#
# Prints one line on success:
#   VHOST_DEVICE_VSOCK=/path/to/vhost-device-vsock
# and exits non-zero with one "fetch-vhost-device-vsock: ..." line on failure.
#
# Sources, in order:
#   1. VSOCKMAP_VHOST_DEVICE_VSOCK=/path: a binary the user names.
#   2. The newest version already extracted into the cache (no network access).
#   3. The package from the newest Debian suite that has it (VSOCKMAP_VHOST_SUITES, newest
#      first), downloaded with apt-get through a private source list derived from this
#      machine's own Debian apt source (scripts/lib/apt-source.sh), and unpacked with
#      dpkg-deb -x: it is not installed. 0.3.0-2 runs on bookworm (it needs glibc 2.34).
#
# Environment: VSOCKMAP_VM_CACHE (as scripts/fetch-vm-kernel.sh), VSOCKMAP_VM_REFRESH=1 (look
# for a newer package even when one is cached), VSOCKMAP_VHOST_SUITES (default
# "unstable testing trixie-backports trixie bookworm-backports").

set -euo pipefail

PROG=fetch-vhost-device-vsock
PKG=vhost-device-vsock
SUITES=${VSOCKMAP_VHOST_SUITES:-unstable testing trixie-backports trixie bookworm-backports}

die() {
	echo "$PROG: $*" >&2
	exit 1
}

emit() {
	[[ -f $1 && -x $1 ]] || die "$1 is not an executable file"
	echo "VHOST_DEVICE_VSOCK=$1"
}

if [[ -n ${VSOCKMAP_VHOST_DEVICE_VSOCK:-} ]]; then
	emit "$VSOCKMAP_VHOST_DEVICE_VSOCK"
	exit 0
fi

# shellcheck source=scripts/lib/apt-source.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/apt-source.sh"
cache=$(vm_cache_dir) || die "cannot create a writable cache directory (set VSOCKMAP_VM_CACHE)"
exec 9>"$cache/.lock"
flock 9 || die "cannot lock $cache/.lock"

# newest_cached: the binary of the newest extracted version.
newest_cached() {
	local d best=
	for d in $(find "$cache/extract" -mindepth 1 -maxdepth 1 -type d -name "${PKG}_*" \
			-printf '%f\n' 2>/dev/null | sort -V); do
		[[ -f $cache/extract/$d/.complete ]] && best=$cache/extract/$d/usr/bin/$PKG
	done
	[[ -n $best ]] && echo "$best"
}

if [[ ${VSOCKMAP_VM_REFRESH:-0} != 1 ]] && bin=$(newest_cached); then
	emit "$bin"
	exit 0
fi

for tool in apt-get apt-cache dpkg-deb; do
	command -v "$tool" >/dev/null || die "$tool not found; set VSOCKMAP_VHOST_DEVICE_VSOCK instead"
done
mkdir -p "$cache/debs" "$cache/extract"

# The first suite (newest first) whose private list has the package.
ver=
for suite in $SUITES; do
	private_apt "$cache/apt-vhost-$suite" "$suite" ||
		die "no Debian apt source with suite bookworm found in /etc/apt; set VSOCKMAP_VHOST_DEVICE_VSOCK"
	echo "$PROG: looking in $suite" >&2
	apt-get "${APT_OPTS[@]}" -q update >/dev/null 2>&1 || continue
	ver=$(apt-cache "${APT_OPTS[@]}" show "$PKG" 2>/dev/null | sed -n 's/^Version: //p' |
		sort -V | tail -n1) || true
	[[ -z $ver ]] || break
done
if [[ -z $ver ]]; then
	# Offline refresh or no suite has it: fall back to what is cached.
	bin=$(newest_cached) || die "no suite of '$SUITES' has $PKG (offline? set VSOCKMAP_VHOST_DEVICE_VSOCK)"
	emit "$bin"
	exit 0
fi

dest=$cache/extract/${PKG}_$ver
if [[ ! -f $dest/.complete ]]; then
	shopt -s nullglob
	debs=("$cache/debs/${PKG}_${ver/*:/}_"*.deb)
	if ((${#debs[@]} == 0)); then
		echo "$PROG: downloading $PKG $ver from $suite" >&2
		if ! out=$(cd "$cache/debs" && apt-get "${APT_OPTS[@]}" -q download "$PKG=$ver" 2>&1); then
			printf '%s\n' "$out" | tail -n 5 >&2
			die "apt-get download $PKG=$ver failed"
		fi
		debs=("$cache/debs/${PKG}_${ver/*:/}_"*.deb)
		((${#debs[@]} > 0)) || die "apt-get download $PKG produced no .deb"
	fi
	rm -rf "$dest" "$dest.tmp"
	dpkg-deb -x "${debs[-1]}" "$dest.tmp" || die "dpkg-deb -x ${debs[-1]} failed"
	mv "$dest.tmp" "$dest"
	touch "$dest/.complete"
fi
emit "$dest/usr/bin/$PKG"
