# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# virtio-guest.sh - the guest's end of the host agent (tests/vm/virtio-agent.sh), sourced by
# the suites that run with tests/vm/run.sh --virtio (mkinitramfs.sh --virtio puts it at
# /usr/lib/vmtest/virtio.sh): suite-virtio.sh, suite-virtio-soak.sh and make bench's virtio part.

VIRTIO_AGENT_PORT=9000 # tests/vm/virtio-host.sh

# host_req WORD...: one request to the host agent, its answer on stdout. socat's -t: the
# answer of a "wait" may take minutes after our side is done.
host_req() {
	printf '%s\n' "$*" | socat -t 600 -T 600 - "VSOCK-CONNECT:2:$VIRTIO_AGENT_PORT"
}

# host_wait NAME DIR: the output of host peer NAME once it ended (the agent's answer is kept
# in DIR/NAME.wait); its exit status.
host_wait() {
	host_req wait "$1" 300 >"$2/$1.wait"
	grep -v '^rc=' "$2/$1.wait"
	_hw=$(sed -n 's/^rc=\([0-9]*\)$/\1/p' "$2/$1.wait")
	return "${_hw:-125}"
}
