# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-smoke.sh - proves the test VM works: real AF_VSOCK over vsock_loopback,
# BPF prerequisites, and (when built) a raw vsock stream with vsm-peer.
# No daemon. Runs inside the VM as /suite.sh:
#
#	tests/vm/run.sh tests/vm/suite-smoke.sh

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"

T=$VMTEST_TMP/smoke
mkdir -p "$T"

# ---- (a) socat echo over vsock: 1 MiB round trip ---------------------------
test_vsock_echo() {
	port=5000
	socat VSOCK-LISTEN:$port,fork EXEC:cat >"$T/echo-server.log" 2>&1 &
	srv=$!

	# socat has no ready signal: retry a tiny round trip until it answers.
	ok=0
	i=0
	while [ $i -lt 50 ]; do
		if [ "$(echo ping | run_with_timeout 5 socat -t 2 - VSOCK-CONNECT:1:$port 2>/dev/null)" = ping ]; then
			ok=1
			break
		fi
		i=$((i + 1))
		sleep 0.1
	done
	if [ $ok -ne 1 ]; then
		vmtest_fail vsock-echo-socat "echo server on vsock port $port never answered: $(tail -n 1 "$T/echo-server.log")"
		kill "$srv" 2>/dev/null
		return
	fi

	dd if=/dev/urandom of="$T/in" bs=65536 count=16 2>/dev/null
	t0=$(now_ms)
	run_with_timeout 60 socat -t 30 - VSOCK-CONNECT:1:$port <"$T/in" >"$T/out" 2>"$T/echo-client.log"
	rc=$?
	t1=$(now_ms)
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null

	sent=$(sha256sum <"$T/in" | cut -d' ' -f1)
	got=$(sha256sum <"$T/out" | cut -d' ' -f1)
	n=$(wc -c <"$T/out" | tr -d ' ')
	if [ $rc -ne 0 ]; then
		vmtest_fail vsock-echo-socat "client rc=$rc after $n bytes: $(tail -n 1 "$T/echo-client.log")"
	elif [ "$sent" != "$got" ]; then
		vmtest_fail vsock-echo-socat "checksum mismatch: sent 1048576 bytes, got $n"
	else
		vmtest_pass vsock-echo-socat "1 MiB echoed via CID 1, sha256 ok, $((t1 - t0)) ms"
	fi
}

# ---- (b) BPF prerequisites ------------------------------------------------------
test_bpf_sanity() {
	why=
	[ -e /sys/kernel/btf/vmlinux ] || why="$why no /sys/kernel/btf/vmlinux;"
	grep -q ' /sys/fs/bpf bpf ' /proc/mounts || why="$why bpffs not mounted on /sys/fs/bpf;"
	if [ -z "$why" ]; then
		vmtest_pass bpf-sanity "BTF present, bpffs mounted"
	else
		vmtest_fail bpf-sanity "$why"
	fi
}

# ---- repository binaries start (their libraries made it into the initramfs) -------
test_binaries_link() {
	bins=
	for b in /usr/bin/vsockmapd /usr/bin/vsockmapctl /usr/bin/vsm-*; do
		[ -x "$b" ] && bins="$bins $b"
	done
	if [ -z "$bins" ]; then
		vmtest_skip binaries-link "no repository binaries built (.output/)"
		return
	fi
	ldso=
	for l in /lib64/ld-linux-*.so.*; do
		[ -e "$l" ] && ldso=$l && break
	done
	bad=
	for b in $bins; do
		[ -n "$ldso" ] || break
		# Scripts need no libraries.
		[ "$(head -c 4 "$b" | tail -c 3)" = ELF ] || continue
		out=$("$ldso" --list "$b" 2>&1)
		rc=$?
		case $out in
		*"not a dynamic"*) continue ;; # static: fine
		esac
		missing=$(echo "$out" | grep 'not found' | awk '{print $1}' | tr '\n' ' ')
		if [ -n "$missing" ]; then
			bad="$bad $(basename "$b"): $missing;"
		elif [ $rc -ne 0 ]; then
			why=$(echo "$out" | sed -n 's/.*shared libraries: \([^:]*\):.*/\1/p' | head -n 1)
			bad="$bad $(basename "$b"): ${why:-loader rc=$rc};"
		fi
	done
	if [ -z "$bad" ]; then
		vmtest_pass binaries-link "$(echo "$bins" | wc -w | tr -d ' ') binaries resolve their libraries"
	else
		vmtest_fail binaries-link "unresolved libraries:$bad"
	fi
}

# ---- (c) vsm-peer: 64 MiB raw vsock stream --------------------------------------
test_vsm_peer_stream() {
	peer=/usr/bin/vsm-peer
	if [ ! -x $peer ]; then
		vmtest_skip vsock-stream-64m "vsm-peer not built (.output/tools/vsm-peer)"
		return
	fi
	help=$($peer --help 2>&1)
	for flag in --sink --count --ready-file --send; do
		case $help in
		*"$flag"*) ;;
		*)
			vmtest_skip vsock-stream-64m "vsm-peer --help lacks $flag"
			return
			;;
		esac
	done

	port=5001
	bytes=67108864
	# Let the server verify length and content when the tool can.
	expect=
	case $help in
	*--expect*) expect="--expect $bytes" ;;
	esac
	rm -f "$T/peer.ready"
	# shellcheck disable=SC2086 # $expect is two words or none
	run_with_timeout 120 $peer server vsock:any:$port --sink --count 1 $expect \
		--ready-file "$T/peer.ready" >"$T/peer-server.log" 2>&1 &
	srv=$!
	if ! wait_for_file "$T/peer.ready" 10; then
		vmtest_fail vsock-stream-64m "server not ready in 10 s: $(tail -n 1 "$T/peer-server.log")"
		kill "$srv" 2>/dev/null
		return
	fi
	t0=$(now_ms)
	run_with_timeout 120 $peer client vsock:1:$port --send $bytes >"$T/peer-client.log" 2>&1
	crc=$?
	wait "$srv"
	src=$?
	t1=$(now_ms)
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		vmtest_fail vsock-stream-64m "client rc=$crc server rc=$src: $(tail -n 1 "$T/peer-client.log") / $(tail -n 1 "$T/peer-server.log")"
		return
	fi
	ms=$((t1 - t0))
	# The tool's own figures, when it prints them.
	extra=
	v=$(sed -n 's/.*verify=\([^ ]*\).*/\1/p' "$T/peer-server.log" | head -n 1)
	[ -z "$v" ] || extra="$extra, server verify=$v"
	m=$(sed -n 's/.*MBps=\([0-9.]*\).*/\1/p' "$T/peer-client.log" | tail -n 1)
	[ -z "$m" ] || extra="$extra, client $m MB/s"
	vmtest_pass vsock-stream-64m "64 MiB in $ms ms, $(mb_per_s $bytes $ms) MB/s$extra (TCG, no daemon)"
}

test_vsock_echo
test_bpf_sanity
test_binaries_link
test_vsm_peer_stream
exit 0
