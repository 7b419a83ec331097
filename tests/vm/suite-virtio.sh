# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-virtio.sh - vsockmapd over the transport users run: virtio-vsock to Debian's
# vhost-device-vsock on the host (tests/vm/run.sh --virtio), the peers on the host as unix
# sockets, every byte verified by vsm-peer at the far end.
#
#	tests/vm/run.sh tests/vm/suite-virtio.sh --virtio
#
# Each data path (kernel, userspace; set explicitly) carries:
#   up     guest UNIX-LISTEN -> VSOCK-CONNECT:2:P -> the host's unix server
#   down   the host's client -> backend -> guest VSOCK-LISTEN:P -> UNIX-CONNECT, a guest server
#   echo   up, with every byte coming back
#   dgram  guest UNIX-RECV -> VSOCK-CONNECT:2:P, 64 KiB datagrams into a host stream server
#   stop   SIGTERM while an upload runs into a slow host reader
#   reload SIGHUP while uploads run
# and then the e2e stream scenarios of tests/e2e/scenarios.sh that need no half-close, their
# servers on the host (names ending @kernel, @userspace).
# Nothing here depends on a half-close: vhost-device-vsock 0.3.0 does not pass a guest's
# shutdown(SHUT_WR) on, and turns a host's into a full shutdown (tests/vm/README.md).

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"
# shellcheck source=tests/e2e/scenarios.sh
. /usr/lib/vmtest/scenarios.sh
# shellcheck source=tests/vm/virtio-guest.sh
. /usr/lib/vmtest/virtio.sh

V_DIR=$VMTEST_TMP/virtio
V_UP=${V_UP:-32M}
V_OUT=$V_DIR
mkdir -p "$V_DIR"

# host_server NAME PORT ARG...: a vsm-peer server on the host, behind guest CID 2 port PORT;
# once it listens, SERVER_PID is a guest process that ends with its exit status, having
# written its output to $V_OUT/NAME.server.
host_server() {
	_hs=$(host_req server "$@")
	if [ "$_hs" != ready ]; then
		echo "host server $1: ${_hs:-no answer}" >"$V_OUT/$1.server"
		SERVER_PID=
		return 1
	fi
	host_wait "$1" "$V_DIR" >"$V_OUT/$1.server" &
	SERVER_PID=$!
}

# verdict NAME CLIENT_RC SERVER_RC CLIENT_OUT SERVER_OUT DETAIL
verdict() {
	if [ "$2" -eq 0 ] && [ "$3" -eq 0 ]; then
		vmtest_pass "$1" "$6 | $(grep '^server total' "$5")"
	else
		vmtest_fail "$1" "client rc=$2 server rc=$3 | $(tail -n 2 "$4" | tr '\n' ' ') | $(tail -n 2 "$5" | tr '\n' ' ')"
	fi
}

# ---- the filter of the host's processes -------------------------------------------------
# tests/tools/vsm-novsock must refuse AF_VSOCK where vsock exists: a vsock listener comes up
# without it and fails with EPERM under it; a unix one comes up under it.
check_novsock() {
	rm -f "$V_DIR/nv.ready"
	vsm-peer server vsock:any:7990 --count 1 --timeout 1 --ready-file "$V_DIR/nv.ready" \
		>"$V_DIR/nv-plain.out" 2>&1
	_plain=$?
	vsm-novsock vsm-peer server vsock:any:7991 --count 1 --timeout 1 \
		--ready-file "$V_DIR/nv-f.ready" >"$V_DIR/nv-filtered.out" 2>&1
	_filtered=$?
	vsm-novsock vsm-peer server "unix:$V_DIR/nv.sock" --count 1 --timeout 1 \
		--ready-file "$V_DIR/nv-u.ready" >/dev/null 2>&1
	if [ ! -e "$V_DIR/nv.ready" ]; then
		vmtest_fail novsock-filter "without the filter, no vsock listener: $(tail -n 1 "$V_DIR/nv-plain.out")"
	elif [ $_filtered -ne 2 ] || [ -e "$V_DIR/nv-f.ready" ] ||
		! grep -q 'socket vsock:any:7991: Operation not permitted' "$V_DIR/nv-filtered.out"; then
		vmtest_fail novsock-filter "under vsm-novsock: rc=$_filtered $(tail -n 1 "$V_DIR/nv-filtered.out")"
	elif [ ! -e "$V_DIR/nv-u.ready" ]; then
		vmtest_fail novsock-filter "under vsm-novsock a unix listener did not come up"
	else
		vmtest_pass novsock-filter "socket(AF_VSOCK) works (rc=$_plain after its 1 s), under vsm-novsock: $(cat "$V_DIR/nv-filtered.out"); AF_UNIX still works"
	fi
}

check_transport() {
	_bound=$(find /sys/bus/virtio/drivers/vmw_vsock_virtio_transport -name 'virtio*' 2>/dev/null)
	if [ -n "$_bound" ] &&
		! grep -q '^vsock_loopback ' /proc/modules; then
		vmtest_pass virtio-transport "a virtio-vsock device bound to vmw_vsock_virtio_transport, no vsock_loopback"
	else
		vmtest_fail virtio-transport "no virtio-vsock device bound: drivers $(find /sys/bus/virtio/drivers -mindepth 1 -maxdepth 1 2>&1 | tr '\n' ' '); modules: $(cut -d' ' -f1 /proc/modules | tr '\n' ' ')"
	fi
}

# ---- the daemon ---------------------------------------------------------------------------
# Ports: PATH_BASE + 0 up, + 1 down (the guest's VSOCK-LISTEN), + 2 dgram, + 3 echo.
start_daemon() { # DATAPATH BASE
	_dp=$1
	V_BASE=$2
	cat >"$V_DIR/vsockmap.conf" <<CONF
[daemon]
control = $V_DIR/control.sock
connect-timeout = 5
datapath = $_dp

[up]
listen  = UNIX-LISTEN:$V_DIR/up.sock
connect = VSOCK-CONNECT:2:$V_BASE

[down]
listen  = VSOCK-LISTEN:$((V_BASE + 1))
connect = UNIX-CONNECT:$V_DIR/down.sock

[dgram]
listen  = UNIX-RECV:$V_DIR/dgram.sock
connect = VSOCK-CONNECT:2:$((V_BASE + 2))

[echo]
listen  = UNIX-LISTEN:$V_DIR/echo.sock
connect = VSOCK-CONNECT:2:$((V_BASE + 3))
CONF
	vsockmapd -c "$V_DIR/vsockmap.conf" 2>"$V_DIR/daemon-$_dp.log" &
	V_DAEMON=$!
	if ! wait_for_socket "$V_DIR/control.sock" 10; then
		vmtest_fail "daemon-start" "vsockmapd did not come up: $(tail -n 3 "$V_DIR/daemon-$_dp.log")"
		return 1
	fi
}

stop_daemon() {
	kill "$V_DAEMON" 2>/dev/null
	wait "$V_DAEMON" 2>/dev/null
	rm -f "$V_DIR/control.sock"
}

# ---- scenarios ---------------------------------------------------------------------------
virtio_up() {
	_n=up-$_dp
	host_server "$_n" "$V_BASE" --sink --count 1 --expect "$V_UP" --timeout 240 || true
	vsm-peer client "unix:$V_DIR/up.sock" --send "$V_UP" --timeout 240 >"$V_DIR/$_n.client" 2>&1
	_crc=$?
	wait $SERVER_PID
	verdict "$_n" $_crc $? "$V_DIR/$_n.client" "$V_DIR/$_n.server" \
		"guest unix -> vsock CID 2 -> host unix server, $V_UP verified on the host"
}

virtio_down() {
	_n=down-$_dp
	vsm-peer server "unix:$V_DIR/down.sock" --sink --count 1 --expect "$V_UP" --timeout 240 \
		--ready-file "$V_DIR/$_n.ready" >"$V_DIR/$_n.server" 2>&1 &
	_spid=$!
	wait_for_file "$V_DIR/$_n.ready" 10
	_r=$(host_req client "$_n" $((V_BASE + 1)) --send "$V_UP" --timeout 240 --connect-timeout 10)
	host_wait "$_n" "$V_DIR" >"$V_DIR/$_n.client"
	_crc=$?
	[ "$_r" = started ] || echo "agent: $_r" >>"$V_DIR/$_n.client"
	wait $_spid
	verdict "$_n" $_crc $? "$V_DIR/$_n.client" "$V_DIR/$_n.server" \
		"host client -> backend -> guest VSOCK-LISTEN -> unix server, $V_UP verified in the guest"
}

virtio_echo() {
	_n=echo-$_dp
	host_server "$_n" $((V_BASE + 3)) --echo --count 1 --timeout 240 || true
	vsm-peer client "unix:$V_DIR/echo.sock" --send 8M --after echo --timeout 240 \
		>"$V_DIR/$_n.client" 2>&1
	_crc=$?
	wait $SERVER_PID
	verdict "$_n" $_crc $? "$V_DIR/$_n.client" "$V_DIR/$_n.server" \
		"8 MiB to a host echo server and back, verified in the guest"
}

# The datagrams' stream ends when the daemon stops: this one stops it. Its host server came up
# before the daemon (run_datapath): a target that comes up later waits out the redial back-off.
virtio_dgram() {
	_n=dgram-$_dp
	vsm-peer client "unix-dgram:$V_DIR/dgram.sock" --dgram-count 100 --msg-size 64K \
		>"$V_DIR/$_n.client" 2>&1
	_crc=$?
	sleep 1
	stop_daemon
	wait $V_DGRAM_PID
	verdict "$_n" $_crc $? "$V_DIR/$_n.client" "$V_DIR/$_n.server" \
		"100 datagrams of 64 KiB into one stream to a host server, verified there"
}

# SIGTERM while a client uploads into a slow host reader: the host must get every byte the
# client's writes handed over, verified, then EOF; the daemon exits 0.
virtio_stop_mid() {
	_n=stop-$_dp
	start_daemon "$_dp" "$V_BASE" || return
	host_server "$_n" "$V_BASE" --sink --count 1 --slow 2000 --read-size 16384 --timeout 120 ||
		true
	vsm-peer client "unix:$V_DIR/up.sock" --send 256M --timeout 120 >"$V_DIR/$_n.client" 2>&1 &
	_cpid=$!
	sleep 2
	kill -TERM "$V_DAEMON"
	_t=0
	while kill -0 "$V_DAEMON" 2>/dev/null && [ $_t -lt 300 ]; do
		sleep 0.1
		_t=$((_t + 1))
	done
	kill -KILL "$V_DAEMON" 2>/dev/null
	wait "$V_DAEMON"
	_drc=$?
	rm -f "$V_DIR/control.sock"
	wait $_cpid
	wait $SERVER_PID
	_src=$?
	_sent=$(sed -n 's/^client conn=[0-9]* sent=\([0-9]*\).*/\1/p' "$V_DIR/$_n.client")
	_line=$(grep -m1 '^server conn=' "$V_DIR/$_n.server")
	_got=$(printf '%s' "$_line" | sed -n 's/^server conn=[0-9]* bytes=\([0-9]*\).*/\1/p')
	if [ $_drc -ne 0 ] || [ $_t -ge 300 ]; then
		vmtest_fail "$_n" "daemon exit $_drc after $((_t / 10)) s: $(tail -n 2 "$V_DIR/daemon-$_dp.log" | tr '\n' ' ')"
	elif [ -z "$_sent" ] || [ "$_sent" != "$_got" ] ||
		! printf '%s' "$_line" | grep -q 'verify=ok.*eof=clean'; then
		vmtest_fail "$_n" "the client handed over ${_sent:-?} bytes, the host got ${_got:-?} (lost $((${_sent:-0} - ${_got:-0}))); server: ${_line:-nothing} rc=$_src"
	else
		vmtest_pass "$_n" "SIGTERM mid-upload into a slow host reader: exit 0 within $((_t / 10 + 1)) s; the host got all $_got bytes the client wrote, verified, then EOF"
	fi
}

# SIGHUP twice while four uploads run (the configuration unchanged): none loses a byte.
virtio_reload() {
	_n=reload-$_dp
	start_daemon "$_dp" "$V_BASE" || return
	host_server "$_n" "$V_BASE" --sink --seeds 4 --count 4 --expect 4M --timeout 240 || true
	vsm-peer client "unix:$V_DIR/up.sock" --parallel 4 --send 4M --timeout 240 \
		>"$V_DIR/$_n.client" 2>&1 &
	_cpid=$!
	sleep 1
	kill -HUP "$V_DAEMON"
	sleep 1
	kill -HUP "$V_DAEMON"
	wait $_cpid
	_crc=$?
	wait $SERVER_PID
	_src=$?
	_hups=$(grep -c 'reload' "$V_DIR/daemon-$_dp.log")
	stop_daemon
	verdict "$_n" $_crc $_src "$V_DIR/$_n.client" "$V_DIR/$_n.server" \
		"4 uploads of 4 MiB, two reloads (SIGHUP) meanwhile ($_hups log lines say reload)"
}

run_datapath() { # DATAPATH BASE
	_dp=$1
	host_server "dgram-$1" $(($2 + 2)) --sink --count 1 --expect 6400K --timeout 240 || true
	V_DGRAM_PID=$SERVER_PID
	start_daemon "$1" "$2" || return
	vmtest_log "daemon ($1): $(grep 'listening' "$V_DIR/daemon-$1.log" | tr '\n' ' ')"
	virtio_up
	virtio_down
	virtio_echo
	virtio_dgram
	virtio_stop_mid
	virtio_reload
}

# ---- the e2e scenarios, servers on the host ------------------------------------------------
# tests/e2e/scenarios.sh with its targets on the host: "host:PORT" for its vsm-peer servers,
# VSOCK-CONNECT:2:PORT for the daemon.
peer_addr() {
	echo "host:$((E2E_PORT_BASE + $1))"
}

target_connect() {
	echo "VSOCK-CONNECT:2:$((E2E_PORT_BASE + $1))"
}

start_server() {
	case $2 in
	host:*)
		_ss_name=$1
		_ss_port=${2#host:}
		shift 2
		host_server "$_ss_name" "$_ss_port" "$@"
		;;
	*) # a TCP server in the guest (scenario_tcp)
		rm -f "$E2E_DIR/$1.ready"
		vsm-peer server "$2" --ready-file "$E2E_DIR/$1.ready" "$@" >"$E2E_DIR/$1.server" 2>&1 &
		SERVER_PID=$!
		wait_for_file "$E2E_DIR/$1.ready" 10
		;;
	esac
}

# The stream scenarios but the two that half-close (tests/vm/README.md, The virtio tier).
run_e2e_streams() { # DATAPATH
	E2E_DIR=$V_DIR/e2e-$1
	V_OUT=$E2E_DIR
	E2E_DAEMON_ARGS=--datapath=$1
	VMTEST_SUFFIX=@$1
	mkdir -p "$E2E_DIR"
	if e2e_start_daemon; then
		scenario_stream_long
		scenario_concurrent
		scenario_echo
		scenario_server_closes_first
		scenario_client_killed
		scenario_slow_reader
		scenario_refused
		scenario_counters
		e2e_stop_daemon
	fi
	VMTEST_SUFFIX=
	V_OUT=$V_DIR
}

E2E_TARGET=vsock
E2E_BIG=${E2E_BIG:-64M}
check_transport
check_novsock
run_datapath kernel 7000
run_datapath userspace 7100
run_e2e_streams kernel
run_e2e_streams userspace
vmtest_log "daemon log tail (userspace):"
tail -n 10 "$V_DIR/daemon-userspace.log" | while read -r line; do vmtest_log "  $line"; done
