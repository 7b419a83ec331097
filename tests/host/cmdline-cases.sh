# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# socat's command line on this kernel: the compatibility scenarios against real socat
# (tests/e2e/cmdline-scenarios.sh, unix and TCP targets; the VM runs them with vsock), fork,
# --control, and bad command lines. Sourced by tests/host/run.sh after tests/lib/harness.sh.

# With fork, connection after connection until SIGTERM; the socket file goes with it.
cmdline_fork() {
	local dir=$E2E_DIR/cmd-fork i ok=0 rc
	mkdir -p "$dir"
	vsm-peer server "unix:$dir/srv.sock" --sink --count 3 --seeds 3 --expect 1M \
		--ready-file "$dir/srv.ready" --timeout 30 >"$dir/server" 2>&1 &
	local srv=$!
	wait_for_file "$dir/srv.ready" 10
	vsockmapd --control "$dir/ctl.sock" "UNIX-LISTEN:$dir/in.sock,fork,mode=0660" \
		"UNIX-CONNECT:$dir/srv.sock" 2>"$dir/relay.log" &
	local relay=$!
	wait_for_file "$dir/in.sock" 10
	for i in 0 1 2; do
		vsm-peer client "unix:$dir/in.sock" --seed $((1 + 2 * i)) --send 1M \
			>"$dir/client$i" 2>&1 && ok=$((ok + 1))
	done
	wait "$srv"
	local listeners reload rrc mode
	listeners=$(vsockmapctl -s "$dir/ctl.sock" listeners 2>&1)
	reload=$(vsockmapctl -s "$dir/ctl.sock" reload 2>&1)
	rrc=$?
	mode=$(stat -c %a "$dir/in.sock" 2>/dev/null)
	kill -TERM "$relay"
	wait "$relay"
	rc=$?
	if ((rrc == 0)) || ! grep -q 'nothing to reload' <<<"$reload"; then
		vmtest_fail cmdline-fork "vsockmapctl reload on a command-line daemon: exit $rrc: $reload"
	elif ! grep -q 'cmdline' <<<"$listeners" || [[ $mode != 660 ]]; then
		vmtest_fail cmdline-fork "listeners: $listeners; socket mode ${mode:-none} (want 660)"
	elif ((ok == 3 && rc == 0)) && [[ ! -e $dir/in.sock ]]; then
		vmtest_pass cmdline-fork "3 connections one after another through one vsockmapd with fork, mode 0660; --control: listeners shows [cmdline], reload refused ($reload); SIGTERM: exit 0, socket file removed"
	else
		vmtest_fail cmdline-fork "$ok of 3 clients ok, exit $rc, socket file: ${mode:-gone} | $(tail -n 2 "$dir/relay.log" | tr '\n' ' ')"
	fi
}

# expect_bad_cmdline NAME PATTERN ARGS...: exit 1 and exactly one line, matching PATTERN.
expect_bad_cmdline() {
	local name=$1 pattern=$2 out rc lines
	shift 2
	out=$(cd "$E2E_DIR" && timeout 10 vsockmapd "$@" 2>&1)
	rc=$?
	lines=$(printf '%s\n' "$out" | wc -l)
	if ((rc != 1)); then
		vmtest_fail "cmdline-$name" "exit $rc (socat's is 1): $out"
	elif ((lines != 1)); then
		vmtest_fail "cmdline-$name" "$lines lines, not one: $(tr '\n' '|' <<<"$out")"
	elif ! grep -qE -- "$pattern" <<<"$out"; then
		vmtest_fail "cmdline-$name" "expected /$pattern/, got: $out"
	else
		vmtest_pass "cmdline-$name" "exit 1: $out"
	fi
}

cmdline_bad() {
	local L=UNIX-LISTEN:$E2E_DIR/bad.sock C=UNIX-CONNECT:$E2E_DIR/nothing.sock
	# Refused while parsing: no vsock socket is ever opened on this machine.
	expect_bad_cmdline vsock-listen-mode 'option "mode" does not apply to VSOCK-LISTEN' \
		VSOCK-LISTEN:1234,fork,mode=0600 "$C"
	expect_bad_cmdline tcp6-listen 'TCP6-LISTEN:8080: not supported: use TCP-LISTEN:PORT,bind=\[::\]' \
		TCP6-LISTEN:8080 "$C"
	expect_bad_cmdline tcp-listen-bind 'bind=localhost is not a numeric' \
		TCP-LISTEN:8080,bind=localhost "$C"
	expect_bad_cmdline two-port-listeners 'one address must listen' TCP-LISTEN:8080 \
		VSOCK-LISTEN:1234
	expect_bad_cmdline exec 'EXEC:/bin/cat: not supported: .*run a program' EXEC:/bin/cat "$L"
	expect_bad_cmdline unknown-type 'unknown address type "UNIX-LISTN"' UNIX-LISTN:/x "$C"
	expect_bad_cmdline unknown-option 'unknown option "forkk" \(did you mean "fork"\?\)' \
		"$L,forkk" "$C"
	expect_bad_cmdline option-wrong-kind 'option "fork" does not apply to UNIX-CONNECT' \
		"$L" "$C,fork"
	expect_bad_cmdline one-address 'one address given' "$L"
	expect_bad_cmdline three-addresses '3 addresses given' "$L" "$C" "$C"
	expect_bad_cmdline two-listeners 'one address must listen' "$L" "UNIX-LISTEN:/tmp/x.sock"
	expect_bad_cmdline two-targets 'one address must listen' "$C" VSOCK-CONNECT:2:1
	expect_bad_cmdline socat-v 'option -v is socat.s.*dumps the transferred data' -v "$L" "$C"
	expect_bad_cmdline T-not-seconds '-T "soon" is not a number of seconds' -T soon "$L" "$C"
	expect_bad_cmdline T-zero '-T 0 must be greater than 0' -T 0 "$L" "$C"
	expect_bad_cmdline T-with-config '-d, -T and --control go with two addresses' -T 5 -c /dev/null
	expect_bad_cmdline unknown-flag 'unknown option -Z' -Z "$L" "$C"
	expect_bad_cmdline fastpath-unknown '--fastpath: unknown mode "fast" \(counted or permanent\)' \
		--fastpath=fast "$L" "$C"
	expect_bad_cmdline fastpath-timed-drain 'fastpath=permanent needs an exact drain signal, and --drain=timed rules it out' \
		--fastpath=permanent --drain=timed "$L" "$C"
	expect_bad_cmdline fastpath-idle-timeout 'the idle timeout needs the byte counters, which fastpath=permanent drops' \
		--fastpath=permanent -T 5 "$L" "$C"
	expect_bad_cmdline control-is-listen-path '--control .*/bad.sock: the listen address uses that path' \
		--control "$E2E_DIR/bad.sock" "$L" "$C"
	expect_bad_cmdline config-and-addresses '-c and two addresses' -c /dev/null "$L" "$C"
	if [[ -e $E2E_DIR/bad.sock ]]; then
		vmtest_fail cmdline-bad-leftovers "a refused command line left $E2E_DIR/bad.sock"
	fi
}

# -T (socat's idle timeout): a redirect that moves no byte for that long is closed, its
# client sees EOF; one that keeps moving bytes stays.
cmdline_idle_timeout() {
	local dir=$E2E_DIR/cmd-idle relay srv out
	mkdir -p "$dir"
	vsm-peer server "unix:$dir/srv.sock" --echo --ready-file "$dir/srv.ready" --timeout 30 \
		>"$dir/server" 2>&1 &
	srv=$!
	wait_for_file "$dir/srv.ready" 10
	vsockmapd -d -T 1 "UNIX-LISTEN:$dir/in.sock,fork" "UNIX-CONNECT:$dir/srv.sock" \
		2>"$dir/relay.log" &
	relay=$!
	wait_for_file "$dir/in.sock" 10
	out=$(python3 - "$dir/in.sock" <<'PY'
import socket, sys, time
def conn():
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(b"x")
    assert s.recv(1) == b"x"
    return s
idle, busy = conn(), conn()
t0 = time.monotonic()
# busy echoes a byte every 300 ms for 3 s; idle says nothing.
while time.monotonic() - t0 < 3:
    busy.sendall(b"y")
    assert busy.recv(1) == b"y"
    time.sleep(0.3)
idle.settimeout(0)
try:
    r = idle.recv(1)
    print("idle", "eof" if r == b"" else "data")
except BlockingIOError:
    print("idle open")
busy.sendall(b"z")
busy.settimeout(2)
print("busy", "alive" if busy.recv(1) == b"z" else "closed")
PY
)
	kill -TERM "$relay" "$srv" 2>/dev/null
	wait "$relay" "$srv" 2>/dev/null
	if [[ $out == $'idle eof\nbusy alive' ]] && grep -q 'no byte either way for [0-9]* ms (idle-timeout)' "$dir/relay.log"; then
		vmtest_pass cmdline-idle-timeout "-T 1: the idle redirect closed ($(grep -o 'no byte either way for [0-9]* ms' "$dir/relay.log" | head -n1)), the busy one stayed for 3 s"
	else
		vmtest_fail cmdline-idle-timeout "$(tr '\n' ' ' <<<"$out") | $(tail -n 3 "$dir/relay.log" | tr '\n' ' ')"
	fi
}

cmdline_cases() {
	cmdline_compat # tests/e2e/cmdline-scenarios.sh
	cmdline_fork
	cmdline_bad
	cmdline_idle_timeout
}
