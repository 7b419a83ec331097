#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What this machine allows, at the head of `make check`, so that a CI log says which
# branches of the daemon its host tiers ran: the kernel, lockdown, BTF, the cgroup v2
# hierarchy, and which drain signals the host kernel lets the daemon load (each tried with a
# throwaway daemon started with --drain=MODE). Prints lines only; never fails.
set -uo pipefail
cd "$(dirname "$0")/../.."

out=${VSOCKMAP_OUTPUT:-$PWD/.output}
lockdown=$(cat /sys/kernel/security/lockdown 2>/dev/null || echo "unknown (no securityfs)")
btf=no
[[ -r /sys/kernel/btf/vmlinux ]] && btf=yes
cgroup2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo 2>/dev/null)
echo "== machine: $(uname -r), $(nproc) CPUs; lockdown: $lockdown; BTF: $btf; cgroup2: ${cgroup2:-none}"

# signal MODE: "yes", or "no (why)" from the daemon's own words.
signal() {
	local dir log pid i
	dir=$(mktemp -d /tmp/vsockmap-signal.XXXXXX)
	log=$dir/log
	"$out/vsockmapd" -d -d --drain="$1" "UNIX-LISTEN:$dir/in.sock" "UNIX-CONNECT:$dir/none.sock" \
		2>"$log" &
	pid=$!
	for ((i = 0; i < 100; i++)); do
		grep -q 'drain signal:\|not started' "$log" 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	if grep -q "drain signal: queue $1" "$log"; then
		echo yes
	else
		echo "no ($(grep -m1 -o -E 'loading the BPF object[^:]*: .*|not started: .*' "$log" ||
			echo 'the daemon did not start'))"
	fi
	rm -rf "$dir"
}

if ((EUID != 0)) || [[ ! -x $out/vsockmapd ]]; then
	echo "== drain signals: not tried (needs root and a built vsockmapd)"
	exit 0
fi
echo "== drain signals on this kernel: probe $(signal probe); iterator $(signal iterator)"
