#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# build-systemd-rootfs.sh - a minimal Debian bookworm root file system with systemd as PID 1,
# as an ext4 image, for the systemd test VM (tests/systemd/run.sh).
#
# Prints one line on success:
#   ROOTFS=/path/to/rootfs.ext4
# and exits non-zero with one "build-systemd-rootfs: ..." line on failure.
#
# The image is built once with debootstrap --variant=minbase and cached in
# ${VSOCKMAP_VM_CACHE:-/var/cache/vsockmap-vm}/rootfs-systemd/, keyed by the package list
# and the recipe below: it is rebuilt only when one of them changes (or with
# VSOCKMAP_VM_REFRESH=1). The Debian archive is the one this machine's apt sources name
# (same discovery as scripts/fetch-vm-kernel.sh); nothing is written to the host's apt state.
#
# The image holds no vsockmap files: tests/systemd/run.sh adds the freshly built binaries,
# units and test scripts at every boot, from its initramfs, into a throw-away snapshot.

set -euo pipefail

PROG=build-systemd-rootfs
SUITE=bookworm
# What the tests use besides systemd: socat (vsock echo service), capsh (capability sets),
# kmod (insmod), procps (ps/pgrep), the daemon's shared libraries.
PACKAGES=(systemd systemd-sysv dbus socat libcap2-bin kmod procps
	libbpf1 libinih1 libjson-c5 libsystemd0)
# Downloaded but not left installed: the libraries that only vsockmap uses. They wait in a
# local apt repository in the image (LOCAL_REPO), so that "apt-get install ./vsockmap_*.deb"
# in the VM must resolve the package's Depends to install them (tests/systemd/suite.sh).
DEPS_ONLY=(libbpf1 libinih1)
LOCAL_REPO=/var/lib/vmtest/apt
# Bump when the customisation in customise() changes.
RECIPE=4
IMAGE_SLACK_MB=384

die() {
	echo "$PROG: $*" >&2
	exit 1
}

note() {
	echo "$PROG: $*" >&2
}

if [[ -n ${VSOCKMAP_VM_CACHE:-} ]]; then
	cache=$VSOCKMAP_VM_CACHE
else
	cache=/var/cache/vsockmap-vm
fi
mkdir -p "$cache/rootfs-systemd" 2>/dev/null ||
	[[ -d $cache/rootfs-systemd ]] || die "cannot create $cache/rootfs-systemd (set VSOCKMAP_VM_CACHE)"
dir=$(cd "$cache/rootfs-systemd" && pwd)
image=$dir/rootfs.ext4

key=$(printf '%s\n' "suite=$SUITE" "recipe=$RECIPE" "${PACKAGES[@]}" | sha256sum | cut -c1-16)

cached() {
	[[ ${VSOCKMAP_VM_REFRESH:-0} != 1 && -f $image && -f $dir/key && $(cat "$dir/key") == "$key" ]]
}

if cached && [[ ! -w $dir ]]; then
	echo "ROOTFS=$image"
	exit 0
fi
exec 9>"$dir/.lock"
flock 9 || die "cannot lock $dir/.lock"
if cached; then
	echo "ROOTFS=$image"
	exit 0
fi

((EUID == 0)) || die "building the root file system needs root (debootstrap)"
for tool in debootstrap mkfs.ext4 sha256sum dpkg-scanpackages; do
	command -v "$tool" >/dev/null || die "$tool not found (make deps)"
done

# shellcheck source=scripts/lib/apt-source.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/apt-source.sh"

src_line=$(find_debian_source | head -n1)
[[ -n $src_line ]] || die "no Debian apt source with suite bookworm found in /etc/apt"
read -r uri signed_by <<<"$src_line"
keyring=()
[[ $signed_by == /* && -f $signed_by ]] && keyring=(--keyring="$signed_by")

# Units a test VM does not want: consoles that would print login prompts among the results,
# timers and services that only cost boot time under TCG.
MASK=(getty.target serial-getty@ttyS0.service getty@tty1.service console-getty.service
	apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer
	fstrim.timer systemd-tmpfiles-clean.timer systemd-timesyncd.service
	systemd-firstboot.service systemd-update-utmp.service systemd-update-utmp-runlevel.service
	systemd-journal-flush.service systemd-random-seed.service systemd-pstore.service
	remote-fs.target cryptsetup.target)

# local_repo ROOT: move DEPS_ONLY out of the installed system into LOCAL_REPO, with an index,
# as the image's only apt source (the VM has no network).
local_repo() {
	local root=$1 repo=$1$LOCAL_REPO p deb
	mkdir -p "$repo"
	for p in "${DEPS_ONLY[@]}"; do
		deb=$(find "$root/var/cache/apt/archives" -name "${p}_*.deb" | head -n1)
		[[ -n $deb ]] || die "debootstrap left no .deb of $p in var/cache/apt/archives"
		mv "$deb" "$repo/"
	done
	chroot "$root" dpkg --purge "${DEPS_ONLY[@]}" >/dev/null ||
		die "dpkg --purge ${DEPS_ONLY[*]} in the image failed: something else needs them"
	(cd "$repo" && dpkg-scanpackages --multiversion . 2>/dev/null) >"$repo/Packages" ||
		die "dpkg-scanpackages failed in $repo"
	echo "deb [trusted=yes] file:$LOCAL_REPO ./" >"$root/etc/apt/sources.list"
	rm -f "$root"/etc/apt/sources.list.d/*
}

customise() {
	local root=$1 u
	# A fixed machine id: no first-boot logic, and the same journal directory every boot.
	echo 5f3a0c5e2b8d4f6a9c1e7d2b4a6c8e0f >"$root/etc/machine-id"
	echo vmtest-systemd >"$root/etc/hostname"
	echo "127.0.0.1 localhost vmtest-systemd" >"$root/etc/hosts"
	# The root file system is mounted read-write by the initramfs; nothing else to mount.
	echo "# none: the initramfs mounts the root file system" >"$root/etc/fstab"
	for u in "${MASK[@]}"; do
		ln -sfn /dev/null "$root/etc/systemd/system/$u"
	done
	ln -sfn /lib/systemd/system/multi-user.target "$root/etc/systemd/system/default.target"
	mkdir -p "$root/etc/systemd/journald.conf.d" "$root/etc/systemd/system.conf.d"
	cat >"$root/etc/systemd/journald.conf.d/vmtest.conf" <<-'EOF'
		[Journal]
		Storage=volatile
		ForwardToConsole=no
		RateLimitIntervalSec=0
	EOF
	cat >"$root/etc/systemd/system.conf.d/vmtest.conf" <<-'EOF'
		[Manager]
		DefaultTimeoutStopSec=15s
		ShowStatus=error
	EOF
	local_repo "$root"
	# No package downloads happen in the VM.
	rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
	# Documentation is not needed to boot.
	rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*
}

t0=$SECONDS
tree=$dir/tree.tmp
rm -rf "$tree" "$image.tmp"
note "debootstrap $SUITE (minbase + ${PACKAGES[*]}) from $uri; this takes a few minutes once"
log=$dir/debootstrap.log
if ! debootstrap --variant=minbase ${keyring[@]+"${keyring[@]}"} \
	--include="$(
		IFS=,
		echo "${PACKAGES[*]}"
	)" \
	"$SUITE" "$tree" "$uri" >"$log" 2>&1; then
	tail -n 5 "$log" >&2
	[[ ! -f $tree/debootstrap/debootstrap.log ]] || tail -n 5 "$tree/debootstrap/debootstrap.log" >&2
	die "debootstrap failed; see $log"
fi
customise "$tree"

size_mb=$(($(du -sm "$tree" | cut -f1) + IMAGE_SLACK_MB))
note "making a ${size_mb} MiB ext4 image"
if ! out=$(mkfs.ext4 -q -F -L vmroot -O ^has_journal -E root_owner=0:0 -d "$tree" \
	"$image.tmp" "${size_mb}M" 2>&1); then
	printf '%s\n' "$out" >&2
	die "mkfs.ext4 -d $tree failed"
fi
mv -f "$image.tmp" "$image"
echo "$key" >"$dir/key"
rm -rf "$tree"
note "done in $((SECONDS - t0)) s"
echo "ROOTFS=$image"
