# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# A client that goes away while the daemon is in the middle of a step: its end was read as an
# EOF (and passed on to the target as a half-close), then the daemon's write of the server's
# answer into it failed (EPIPE), all in one step, before its hang-up was seen. Nothing is left
# to carry either way, so the pair must close then, as socat exits on the same EPIPE; before,
# the daemon stopped watching the client and kept the pair until the server closed, which a
# server that waits for its EOF over a hybrid-vsock backend (no half-close passed on: the
# virtio tier) did only at its own timeout. The server here answers at the client's EOF and
# then holds its socket open for 60 s: the pair must be gone while it still holds it.
# VSOCKMAPD_TEST_STEP_DELAY_US widens each step so that the client's end falls inside one.
#
#   peer-gone-mid-step-userspace   datapath = userspace
#   peer-gone-mid-step-kernel      datapath = kernel
# Uses mini_config, mini_daemon and mini_stop (access-cases.sh).

peer_gone_case() {
	local name=$1 i left=1
	mini_config "$name" s "datapath = $2" "log-level = debug"
	# The server reads to EOF, answers 64 KiB at once, then holds its end for 60 s.
	"$PYTHON" -c 'import os,socket,sys,time
l=socket.socket(socket.AF_UNIX); l.bind(sys.argv[1]); l.listen(1)
open(sys.argv[2], "w").close()
c,_=l.accept()
while c.recv(65536): pass
c.sendall(os.urandom(65536)); time.sleep(60)' "$MINI_DIR/srv.sock" "$MINI_DIR/srv.ready" \
		>"$MINI_DIR/srv.log" 2>&1 &
	MINI_SRV=$!
	wait_for_file "$MINI_DIR/srv.ready" 10
	VSOCKMAPD_TEST_STEP_DELAY_US=300000 mini_daemon
	# The client shuts down writing at once and closes 450 ms later, reading nothing: the
	# daemon reads its EOF in the first step (0-300 ms) and passes it on; the answer starts
	# the second (300-600 ms), in which the client goes.
	"$PYTHON" -c 'import socket,sys,time
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.shutdown(socket.SHUT_WR)
time.sleep(0.45); s.close()' "$MINI_DIR/s.sock"
	for ((i = 0; i < 300; i++)); do
		kill -0 "$MINI_SRV" 2>/dev/null || break
		left=$(vsockmapctl -s "$MINI_DIR/ctl.sock" --json list | "$PYTHON" -c 'import json,sys; print(len(json.load(sys.stdin)))')
		((left == 0)) && break
		sleep 0.2
	done
	if ((left == 0)) && kill -0 "$MINI_SRV" 2>/dev/null; then
		vmtest_pass "$name" "closed while the server still held its end: $(grep -m1 -oE 'redirect 1: closed after [0-9]+ ms' "$MINI_DIR/daemon.log"); $(grep -m1 -oE 'writing to the client failed: [^;]*' "$MINI_DIR/daemon.log" || echo 'no write failed')"
	elif ((left == 0)); then
		vmtest_fail "$name" "the pair closed only when the server closed ($(grep -m1 -oE 'redirect 1: closed after [0-9]+ ms' "$MINI_DIR/daemon.log"))"
	else
		vmtest_fail "$name" "$left redirects still live after 60 s: $(grep -m3 -E 'redirect 1' "$MINI_DIR/daemon.log" | tr '\n' ' ')"
	fi
	mini_stop
}

host_peer_gone_cases() {
	peer_gone_case peer-gone-mid-step-userspace userspace
	peer_gone_case peer-gone-mid-step-kernel kernel
}
