#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fail with one readable line when a build tool or library is missing or too old.
set -uo pipefail

fail() {
	echo "vsockmap: $*" >&2
	exit 1
}

# version_ge A B: is version A >= B?
version_ge() {
	[[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" == "$2" ]]
}

need_tool() {
	command -v "$1" >/dev/null 2>&1 || fail "$1 is required but not installed (run: make deps)"
}

need_tool "${CC:-cc}"
need_tool "${CLANG:-clang}"
need_tool "${BPFTOOL:-bpftool}"
need_tool "${PKG_CONFIG:-pkg-config}"

clang_ver=$("${CLANG:-clang}" -dumpversion 2>/dev/null)
version_ge "$clang_ver" 11 || fail "clang >= 11 required, found $clang_ver"

bpftool_ver=$("${BPFTOOL:-bpftool}" version 2>/dev/null | sed -n '1s/.*v\([0-9.]*\).*/\1/p')
version_ge "${bpftool_ver:-0}" 5.13 || fail "bpftool >= 5.13 required, found ${bpftool_ver:-none}"

check_lib() {
	local pkg=$1 min=$2 deb=$3 ver
	ver=$("${PKG_CONFIG:-pkg-config}" --modversion "$pkg" 2>/dev/null) ||
		fail "$pkg >= $min required, not found (Debian package $deb; run: make deps)"
	version_ge "$ver" "$min" || fail "$pkg >= $min required, found $ver"
}
check_lib libbpf 1.1 libbpf-dev
check_lib libsystemd 246 libsystemd-dev
check_lib inih 52 libinih-dev
check_lib json-c 0.15 libjson-c-dev

[[ -r ${VMLINUX_BTF:-/sys/kernel/btf/vmlinux} ]] ||
	fail "kernel BTF ${VMLINUX_BTF:-/sys/kernel/btf/vmlinux} not readable (set VMLINUX_BTF=FILE)"
exit 0
