# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# shellcheck disable=SC2034 # virtio_qemu_args is read by the caller
# shellcheck disable=SC2154 # ROOT, HERE, outdir and VM_MEM_MB come from tests/vm/run.sh
#
# The host side of the virtio tier, sourced by tests/vm/run.sh --virtio: Debian's
# vhost-device-vsock backend (scripts/fetch-vhost-device-vsock.sh), the guest's peers on the
# host (tests/vm/virtio-agent.sh behind socat), QEMU's device arguments, and the check of the
# backend's log. The backend speaks hybrid vsock: a guest connect to CID 2 port P reaches
# the unix socket ${uds}_P, and a host process reaches guest port P through ${uds} with
# "CONNECT P\n". Every process started here runs under tests/tools/vsm-novsock, whose seccomp
# filter refuses socket(AF_VSOCK): no vsock socket exists on the host.

VIRTIO_GUEST_CID=3
VIRTIO_AGENT_PORT=9000
# Above 32 KiB of credit the guest sends nonlinear packets (a header descriptor, then several
# data descriptors; every skb of our kernel/ patch 2); vhost-device-vsock 0.3.0 rejects them
# with DescriptorLengthTooSmall, logged as "error reading TX packet" only at RUST_LOG=debug,
# and the stream hangs. At 65536 (its default) and 49152 no byte got through; at 32768 a
# 64 MiB upload did (73.6 MB/s on 6.12). The fixes (rust-vmm vm-virtio #392, vhost-device
# #954) are not in a release yet.
VIRTIO_TX_BUFFER_SIZE=${VSOCKMAP_VIRTIO_TX_BUFFER_SIZE:-32768} # another only to show the failure

# virtio_start NAME: the backend and the agent; sets virtio_dir, virtio_backend_log and
# virtio_qemu_args (QEMU's device and shared-memory arguments).
virtio_start() {
	local name=$1 bin novsock=$ROOT/.output/tools/vsm-novsock peer=$ROOT/.output/tools/vsm-peer
	local vbench=$ROOT/.output/tools/vsm-bench vsoak=$ROOT/.output/tools/vsm-soak
	[[ -x $novsock && -x $peer && -x $vbench && -x $vsoak ]] ||
		die "build first: make tools (vsm-novsock, vsm-peer, vsm-bench, vsm-soak)"
	command -v socat >/dev/null || die "socat not found"
	bin=$("$ROOT/scripts/fetch-vhost-device-vsock.sh" | sed -n 's/^VHOST_DEVICE_VSOCK=//p')
	[[ -n $bin ]] || exit 1
	# A short path: sun_path holds 108 bytes, and the backend appends _PORT.
	virtio_dir=$(mktemp -d /tmp/vsm-virtio.XXXXXX)
	virtio_novsock=$novsock
	virtio_backend_log=$outdir/$name.backend.log
	local uds=$virtio_dir/vsock.sock vhost=$virtio_dir/vhost.sock
	RUST_LOG=${VSOCKMAP_VIRTIO_RUST_LOG:-debug} "$novsock" "$bin" --guest-cid "$VIRTIO_GUEST_CID" \
		--socket "$vhost" --uds-path "$uds" --tx-buffer-size "$VIRTIO_TX_BUFFER_SIZE" \
		>"$virtio_backend_log" 2>&1 &
	virtio_backend_pid=$!
	VIRTIO_UDS=$uds VIRTIO_DIR=$virtio_dir VSM_PEER=$peer VSM_BENCH=$vbench VSM_SOAK=$vsoak "$novsock" socat \
		"UNIX-LISTEN:${uds}_$VIRTIO_AGENT_PORT,fork" "EXEC:bash $HERE/virtio-agent.sh" \
		2>"$virtio_dir/agent.log" &
	virtio_agent_pid=$!
	local i
	for i in $(seq 50); do
		[[ -S $vhost ]] && break
		kill -0 "$virtio_backend_pid" 2>/dev/null || break
		sleep 0.1
	done
	[[ -S $vhost ]] || die "vhost-device-vsock did not come up: $(tail -n 3 "$virtio_backend_log")"
	# What the kernel says of the two long-lived host processes: 2 is a seccomp filter.
	virtio_seccomp=$(awk '/^Seccomp:/ { printf "%s ", $2 }' "/proc/$virtio_backend_pid/status" \
		"/proc/$virtio_agent_pid/status" 2>/dev/null || true)
	# The guest's memory must be shared with the backend: a memfd, one NUMA node on it.
	# shellcheck disable=SC2054 # commas belong to QEMU's options
	virtio_qemu_args=(-chardev "socket,id=vsock0,path=$vhost"
		-device vhost-user-vsock-pci,chardev=vsock0
		-object "memory-backend-memfd,id=mem,size=${VM_MEM_MB}M,share=on" -numa node,memdev=mem)
}

# virtio_stop: the agent, every host peer still running, and the backend; the scratch
# directory goes, its peers' output is kept in .output/vm/NAME.peers/.
virtio_stop() {
	local f
	[[ -n ${virtio_dir:-} ]] || return 0
	# run.sh runs with set -e: a peer that already ended is not an error here.
	kill "$virtio_agent_pid" 2>/dev/null || true
	for f in "$virtio_dir"/peer-*.pid; do
		[[ ! -f $f ]] || kill "$(cat "$f")" 2>/dev/null || true
	done
	kill "$virtio_backend_pid" 2>/dev/null || true
	# The backend can take a second or more to go; a hung one is not waited for.
	local i
	for i in $(seq 50); do
		kill -0 "$virtio_backend_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$virtio_backend_pid" 2>/dev/null || true
	wait "$virtio_agent_pid" "$virtio_backend_pid" 2>/dev/null || true
	rm -rf "${virtio_backend_log%.backend.log}.peers"
	mkdir -p "${virtio_backend_log%.backend.log}.peers"
	cp "$virtio_dir"/peer-*.out "$virtio_dir"/agent.log "${virtio_backend_log%.backend.log}.peers/" \
		2>/dev/null || true
	rm -rf "$virtio_dir"
	virtio_dir=
}

# virtio_check_filter: a result of the host's own: the backend and the agent (and so every
# host peer it starts) run under vsm-novsock's filter, as the kernel reports it.
virtio_check_filter() {
	if [[ $virtio_seccomp == "2 2 " ]]; then
		printf '  PASS virtio-host-filter the backend and the host agent run under a seccomp filter (vsm-novsock)\n'
		runner_count PASS
	else
		printf '  FAIL virtio-host-filter /proc/PID/status Seccomp of the backend and the agent: %s\n' \
			"${virtio_seccomp:-unread}"
		runner_count FAIL
	fi
}

# virtio_check_log: one result of the host's own: the backend never failed to read a
# packet the guest sent (the stream it belonged to would hang).
virtio_check_log() {
	local n
	n=$(grep -c 'error reading TX packet' "$virtio_backend_log" || true)
	if ((n == 0)); then
		printf '  PASS virtio-backend-tx no "error reading TX packet" from vhost-device-vsock (tx-buffer-size %s)\n' \
			"$VIRTIO_TX_BUFFER_SIZE"
		runner_count PASS
	else
		printf '  FAIL virtio-backend-tx %s lines "error reading TX packet" in %s, first: %s\n' "$n" \
			"${virtio_backend_log#"$PWD"/}" "$(grep -m1 'error reading TX packet' "$virtio_backend_log")"
		runner_count FAIL
	fi
}
