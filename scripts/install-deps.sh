#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Install the Debian packages vsockmap needs to build and test. Running it again is harmless:
# it only calls apt-get when something is missing.
#
#   scripts/install-deps.sh [--kernel]
#
# --kernel adds what kernel/build.sh (make kernel-patched) needs to build a kernel; make check
# never builds one.
set -euo pipefail

packages=(
	make gcc pkg-config clang bpftool
	libbpf-dev libsystemd-dev libinih-dev libjson-c-dev libcmocka-dev
	socat qemu-system-x86 busybox-static cpio xz-utils gzip gnuplot-nox
	debootstrap e2fsprogs python3 util-linux acl cppcheck clang-tidy
	debhelper dpkg-dev lintian
)
if [[ ${1:-} == --kernel ]]; then
	packages+=(flex bison bc dwarves libelf-dev libssl-dev patch)
elif (($#)); then
	echo "usage: $0 [--kernel]" >&2
	exit 2
fi

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[[ $status == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
	exit 0
fi
if ((EUID != 0)); then
	echo "install-deps: missing packages: ${missing[*]} (run as root, or install them)" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
