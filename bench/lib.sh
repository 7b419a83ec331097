# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh disable=SC3045 # busybox ash and bash both have ulimit -n
#
# bench/lib.sh - the measurements of `make bench`, shared by the host part (bench/run.sh,
# bash) and the VM part (tests/vm/suite-bench.sh, busybox sh). One part is one target
# address and the relays in front of it; every measurement is one flat JSON object, a
# "BENCH" line, appended to $BENCH_RESULTS (and written to the console in the VM).
#
# The caller sets:
#	BENCH_PART        host | vm
#	BENCH_DIR         a scratch directory
#	BENCH_RESULTS     file the BENCH json lines are appended to
#	BENCH_MODES       e.g. "direct socat socat-b64k proxyd vsockmapd vsockmapd-permanent
#	                  vsockmapd-relay"
#	BENCH_TARGET_LISTEN   address the vsm-bench servers listen on (vsock:any:5100; host:PORT
#	                  in the virtio part: on the host, behind the backend's UDS_PORT)
#	BENCH_TARGET_DIRECT   the same, as a client dials it (vsock:1:5100)
#	BENCH_TARGET_SOCAT    socat's address of the target (VSOCK-CONNECT:1:5100)
#	BENCH_TARGET_DAEMON   vsockmapd's connect = (VSOCK-CONNECT:1:5100)
#	BENCH_TARGET_PROXYD   systemd-socket-proxyd's target, or empty when it cannot serve
#	BENCH_PROXYD_NA       why proxyd cannot serve (when BENCH_TARGET_PROXYD is empty)
# and optionally BENCH_CONSOLE (a console to echo BENCH lines to), BENCH_TIMEOUT.
#
# Nothing here asserts a timing: numbers are reported, only broken bytes are failures.

BENCH_TOOL=${BENCH_TOOL:-vsm-bench}
BENCH_DAEMON=${BENCH_DAEMON:-vsockmapd}
BENCH_CTL=${BENCH_CTL:-vsockmapctl}
BENCH_PROXYD=${BENCH_PROXYD:-/lib/systemd/systemd-socket-proxyd}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-300}
# The extra vsockmapd arguments that select its user-space relay. The bench starts the daemon
# with them and measures the mode only if the daemon accepts them and logs a user-space data
# path.
BENCH_RELAY_ARGS=${BENCH_RELAY_ARGS:---datapath=userspace}
# The same for the permanent fast path: measured only if the daemon logs it in force.
BENCH_PERMANENT_ARGS=${BENCH_PERMANENT_ARGS:---fastpath=permanent}
BENCH_HZ=${BENCH_HZ:-100}
# Seconds to let memory figures settle before and after a hold; at most this many seconds
# to open the idle connections, and for the daemon to let go of them after they close.
BENCH_SETTLE=${BENCH_SETTLE:-2}
# Seconds the daemon's idle CPU is sampled with the connections held; round trips of the
# echo during a list flood (BENCH_FLOOD_TOOL, host only).
BENCH_IDLE_SECONDS=${BENCH_IDLE_SECONDS:-10}
BENCH_FLOOD_PP=${BENCH_FLOOD_PP:-2000}
BENCH_HOLD_TIMEOUT=${BENCH_HOLD_TIMEOUT:-120}
BENCH_TEARDOWN_MAX=${BENCH_TEARDOWN_MAX:-60}
# Datagram senders use sendto() (like vsm-peer and the e2e tests); "--connect" makes them
# connect() and send() instead (bench/run.sh: BENCH_DGRAM_CONNECT=1).
BENCH_DGRAM_SOURCE_ARGS=${BENCH_DGRAM_SOURCE_ARGS:-}

# ---- records -------------------------------------------------------------------------------

# bench_vm_part DIR: the VM part's settings (a vsock sink on CID 1's port 5100, no proxyd),
# scratch directory DIR and an empty results file; for the VM suites of the bench and trace.
# With BENCH_VIRTIO=1 (tests/vm/run.sh --virtio) the sink runs on the host (CID 2), behind
# vhost-device-vsock's unix socket UDS_5100, started through the host agent (bench_host_server).
bench_vm_part() {
	BENCH_PART=${BENCH_PART_NAME:-vm}
	BENCH_DIR=$1
	BENCH_RESULTS=$BENCH_DIR/results
	BENCH_CONSOLE=$VMTEST_CONSOLE
	_v_cid=1
	BENCH_TARGET_LISTEN=vsock:any:5100
	if [ "${BENCH_VIRTIO:-0}" = 1 ]; then
		_v_cid=2
		BENCH_TARGET_LISTEN=host:5100
		# vhost-device-vsock 0.3.0 does not pass a guest's shutdown(SHUT_WR) on: a stream's
		# EOF reaches the host only when a relay gives up on the other direction (socat
		# after its 0.5 s -t), so the sinks stop the clock at the last expected byte.
		BENCH_SINK_NO_EOF=1
	fi
	BENCH_TARGET_DIRECT=vsock:$_v_cid:5100
	BENCH_TARGET_SOCAT=VSOCK-CONNECT:$_v_cid:5100
	BENCH_TARGET_DAEMON=VSOCK-CONNECT:$_v_cid:5100
	BENCH_TARGET_PROXYD=
	BENCH_PROXYD_NA="systemd-socket-proxyd cannot connect to vsock"
	mkdir -p "$BENCH_DIR"
	: >"$BENCH_RESULTS"
}

# bench_emit JSON: one result line.
bench_emit() {
	printf '%s\n' "$1" >>"$BENCH_RESULTS"
	if [ -n "${BENCH_CONSOLE:-}" ] && [ -w "$BENCH_CONSOLE" ]; then
		printf 'BENCH %s\n' "$1" >"$BENCH_CONSOLE"
	fi
}

# bench_text TEXT: safe inside a JSON string (no quotes, backslashes or control characters).
bench_text() {
	# shellcheck disable=SC1003 # a backslash, not an escaped quote
	printf '%s' "$1" | tr -d '"\\' | tr '\n\r\t' '   ' | cut -c1-200
}

# bench_record METRIC SCENARIO MODE REP STATUS REASON FIELDS TOOL_JSON
# FIELDS: extra ,"k":v pairs (may be empty); TOOL_JSON: a vsm-bench line (may be empty).
bench_record() {
	_r_tool=$(printf '%s' "$8" | sed -n 's/^{\(.*\)}$/\1/p')
	_r_line="{\"part\":\"$BENCH_PART\",\"scenario\":\"$2\",\"mode\":\"$3\",\"rep\":$4"
	_r_line="$_r_line,\"metric\":\"$1\",\"status\":\"$5\""
	[ -z "$6" ] || _r_line="$_r_line,\"reason\":\"$(bench_text "$6")\""
	_r_line="$_r_line$7"
	[ -z "$_r_tool" ] || _r_line="$_r_line,$_r_tool"
	bench_emit "$_r_line}"
}

# bench_json_get FILE KEY: the value of "KEY" in the last JSON line of FILE (no quotes).
bench_json_get() {
	grep '^{' "$1" 2>/dev/null | tail -n 1 |
		sed -n "s/.*\"$2\":\"\{0,1\}\([^\",}]*\).*/\1/p"
}

# bench_busy: sets BUSY and IDLE, jiffies of the whole machine since boot.
bench_busy() {
	# shellcheck disable=SC2046 # two numbers
	set -- $(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6; exit }' /proc/stat)
	BUSY=$1
	IDLE=$2
}

bench_meminfo() { # KEY: its value in kB
	awk -v k="$1:" '$1 == k { print $2; exit }' /proc/meminfo
}

bench_rss_kb() { # PID
	awk '$1 == "VmRSS:" { print $2; exit }' "/proc/$1/status" 2>/dev/null
}

bench_wait_file() { # PATH SEC
	_w_ticks=$(($2 * 20))
	while [ ! -e "$1" ]; do
		[ "$_w_ticks" -gt 0 ] || return 1
		_w_ticks=$((_w_ticks - 1))
		sleep 0.05
	done
}

bench_wait_socket() { # PATH SEC
	_w_ticks=$(($2 * 20))
	while [ ! -S "$1" ]; do
		[ "$_w_ticks" -gt 0 ] || return 1
		_w_ticks=$((_w_ticks - 1))
		sleep 0.05
	done
}

bench_log() {
	_g_t=$(cut -d' ' -f1 /proc/uptime)
	if [ -n "${BENCH_CONSOLE:-}" ] && [ -w "$BENCH_CONSOLE" ]; then
		printf 'bench: [%s] %s\n' "$_g_t" "$*" >"$BENCH_CONSOLE"
	else
		printf 'bench: [%s] %s\n' "$_g_t" "$*" >&2
	fi
}

# ---- modes ---------------------------------------------------------------------------------
# A mode that cannot run has $BENCH_DIR/na-MODE holding the reason.

bench_mode_na() { # MODE: 0 (and the reason on stdout) if the mode cannot run
	[ -f "$BENCH_DIR/na-$1" ] || return 1
	cat "$BENCH_DIR/na-$1"
}

bench_set_na() { # MODE REASON
	bench_text "$2" >"$BENCH_DIR/na-$1"
	bench_log "$1: n/a: $2"
}

bench_in() { # MODE: the unix path a relay listens on
	echo "$BENCH_DIR/in-$1.sock"
}

bench_client_addr() { # MODE
	if [ "$1" = direct ]; then
		echo "$BENCH_TARGET_DIRECT"
	else
		echo "unix:$(bench_in "$1")"
	fi
}

# bench_daemon_start NAME CONFIG_BODY [ARGS...]: a vsockmapd; sets DAEMON_PID, or returns 1.
bench_daemon_start() {
	_d_name=$1
	_d_conf=$BENCH_DIR/$_d_name.conf
	shift
	# The measuring peers run as root alone: no max-redirects-per-uid (the memory rows hold
	# more than its default).
	printf '[daemon]\ncontrol = %s\nmax-redirects-per-uid = 0\n%s\n' "$BENCH_DIR/$_d_name.ctl" "$1" >"$_d_conf"
	shift
	rm -f "$BENCH_DIR/$_d_name.ctl"
	"$BENCH_DAEMON" -c "$_d_conf" "$@" 2>"$BENCH_DIR/$_d_name.log" &
	DAEMON_PID=$!
	_d_ticks=600
	while [ ! -S "$BENCH_DIR/$_d_name.ctl" ]; do
		if ! kill -0 "$DAEMON_PID" 2>/dev/null || [ "$_d_ticks" -le 0 ]; then
			kill "$DAEMON_PID" 2>/dev/null
			wait "$DAEMON_PID" 2>/dev/null
			DAEMON_PID=
			return 1
		fi
		_d_ticks=$((_d_ticks - 1))
		sleep 0.05
	done
}

bench_daemon_error() { # NAME: the daemon's complaint (its first line)
	grep -v '^$' "$BENCH_DIR/$1.log" 2>/dev/null | head -n 1
}

# The kernel path, asked for: with datapath=auto a unix target runs in user space (its
# server's shutdown() would free what the kernel holds for it: docs/kernel-notes.md), and so
# does a vsock one on a kernel without kernel/ patch 1 (docs/datapath.md). The user relay is
# its own mode (--datapath=userspace on the command line wins over this line), and
# bench_auto_note says which of the two rows the default is. This line lands in [daemon].
BENCH_KERNEL_LINE='datapath = kernel'

bench_stream_section() { # MODE
	[ "$1" = vsockmapd-auto ] || printf '%s\n' "$BENCH_KERNEL_LINE"
	printf '[bench]\nlisten  = UNIX-LISTEN:%s\nconnect = %s\n' "$(bench_in "$1")" \
		"$BENCH_TARGET_DAEMON"
}

# bench_start_relay MODE: the long-lived stream relay of MODE, listening on bench_in MODE.
bench_start_relay() {
	_s_in=$(bench_in "$1")
	rm -f "$_s_in" "$BENCH_DIR/na-$1"
	case $1 in
	direct)
		return 0
		;;
	socat)
		socat UNIX-LISTEN:"$_s_in",fork "$BENCH_TARGET_SOCAT" 2>"$BENCH_DIR/$1.log" &
		;;
	socat-b64k)
		socat -b 65536 UNIX-LISTEN:"$_s_in",fork "$BENCH_TARGET_SOCAT" \
			2>"$BENCH_DIR/$1.log" &
		;;
	proxyd)
		if [ -z "${BENCH_TARGET_PROXYD:-}" ]; then
			bench_set_na "$1" "${BENCH_PROXYD_NA:-systemd-socket-proxyd cannot serve here}"
			return 1
		fi
		if ! command -v systemd-socket-activate >/dev/null || [ ! -x "$BENCH_PROXYD" ]; then
			bench_set_na "$1" "systemd-socket-activate or $BENCH_PROXYD not installed"
			return 1
		fi
		# Without --accept it execs proxyd on the first connection, which then accepts
		# on the inherited listening socket itself (one process, splice() inside).
		systemd-socket-activate -l "$_s_in" "$BENCH_PROXYD" "$BENCH_TARGET_PROXYD" \
			2>"$BENCH_DIR/$1.log" &
		;;
	vsockmapd)
		# Measured only where the section really is on the kernel path.
		bench_start_variant "$1" '\[bench\] listening on .*data path: kernel$' ""
		return
		;;
	vsockmapd-relay)
		bench_start_variant "$1" 'data path:.*user' "$BENCH_RELAY_ARGS"
		return
		;;
	vsockmapd-permanent)
		bench_start_variant "$1" 'fastpath: permanent' "$BENCH_PERMANENT_ARGS"
		return
		;;
	*)
		bench_set_na "$1" "unknown mode"
		return 1
		;;
	esac
	echo $! >"$BENCH_DIR/pid-$1"
	if ! bench_wait_socket "$_s_in" 10; then
		bench_set_na "$1" "no listening socket after 10 s: $(tail -n 1 "$BENCH_DIR/$1.log")"
		bench_stop_relay "$1"
		return 1
	fi
}

# bench_start_variant MODE LOG_PATTERN ARGS: vsockmapd started with ARGS, measured only if
# its log shows LOG_PATTERN (the variant is in force), else n/a with what it said.
bench_start_variant() {
	# shellcheck disable=SC2086 # any number of arguments
	if ! bench_daemon_start "$1" "$(bench_stream_section "$1")" $3; then
		bench_set_na "$1" "vsockmapd $3 did not start: $(bench_daemon_error "$1")"
		return 1
	fi
	echo "$DAEMON_PID" >"$BENCH_DIR/pid-$1"
	if ! grep -qi "$2" "$BENCH_DIR/$1.log"; then
		bench_set_na "$1" "vsockmapd $3 did not log /$2/: $(grep -E 'data path|fastpath' "$BENCH_DIR/$1.log" | head -n 2 | tr '\n' ' ')"
		bench_stop_relay "$1"
		return 1
	fi
	return 0
}

bench_stop_relay() { # MODE
	[ -f "$BENCH_DIR/pid-$1" ] || return 0
	bench_stop_pid "$(cat "$BENCH_DIR/pid-$1")" "$1"
	rm -f "$BENCH_DIR/pid-$1"
}

# bench_stop_pid PID WHAT: SIGTERM, and SIGKILL (said in the log) if it is still there after 10 s.
bench_stop_pid() {
	kill "$1" 2>/dev/null || { wait "$1" 2>/dev/null; return 0; }
	_k_ticks=200
	while kill -0 "$1" 2>/dev/null && [ -n "$(awk '$3 != "Z" { print }' "/proc/$1/stat" 2>/dev/null)" ]; do
		if [ $_k_ticks -le 0 ]; then
			bench_log "$2 (pid $1) ignored SIGTERM for 10 s: SIGKILL"
			kill -9 "$1" 2>/dev/null
			break
		fi
		_k_ticks=$((_k_ticks - 1))
		sleep 0.05
	done
	wait "$1" 2>/dev/null
}

bench_daemon_pid() { # MODE
	cat "$BENCH_DIR/pid-$1" 2>/dev/null
}

# ---- one measurement each ------------------------------------------------------------------

# bench_server NAME CMD ADDR ARGS...: a vsm-bench server on the target, ready on return; sets
# SRV_PID, a process that ends with the server's exit status, its output in
# $BENCH_DIR/NAME.out (JSON) and NAME.err.
bench_server() {
	_v_name=$1
	shift
	rm -f "$BENCH_DIR/$_v_name.ready"
	case $2 in
	host:*)
		bench_host_server "$_v_name" "$@"
		return
		;;
	esac
	"$BENCH_TOOL" "$@" --ready-file "$BENCH_DIR/$_v_name.ready" \
		>"$BENCH_DIR/$_v_name.out" 2>"$BENCH_DIR/$_v_name.err" &
	SRV_PID=$!
	bench_wait_file "$BENCH_DIR/$_v_name.ready" 20
}

# bench_host_server NAME CMD host:PORT ARGS...: bench_server's virtio case, the server on the
# host through the agent (tests/vm/virtio-agent.sh, bench verb; the guest's end,
# tests/vm/virtio-guest.sh, must be sourced). Each run gets its own peer name, so that one
# left over from a failed run never answers for the next.
bench_host_server() {
	BENCH_HOST_SEQ=$((${BENCH_HOST_SEQ:-0} + 1))
	_h_name=$1 _h_peer=$1-$BENCH_HOST_SEQ _h_cmd=$2 _h_port=${3#host:}
	shift 3
	_h_ans=$(host_req bench "$_h_peer" "$_h_port" "$_h_cmd" "$@")
	if [ "$_h_ans" != ready ]; then
		: >"$BENCH_DIR/$_h_name.out"
		echo "host $_h_cmd: ${_h_ans:-no answer from the host agent}" >"$BENCH_DIR/$_h_name.err"
		(exit 1) &
		SRV_PID=$!
		return 1
	fi
	(
		host_wait "$_h_peer" "$BENCH_DIR" >"$BENCH_DIR/$_h_name.all"
		_h_rc=$?
		grep '^{' "$BENCH_DIR/$_h_name.all" >"$BENCH_DIR/$_h_name.out"
		grep -v '^{' "$BENCH_DIR/$_h_name.all" >"$BENCH_DIR/$_h_name.err"
		exit $_h_rc
	) &
	SRV_PID=$!
}

# bench_why OUT ERR RC: a short reason for a failed tool run.
bench_why() {
	_y_v=$(bench_json_get "$1" verify)
	if [ -n "$_y_v" ] && [ "$_y_v" != ok ]; then
		echo "verify=$_y_v"
	elif [ -s "$2" ]; then
		tail -n 1 "$2"
	elif [ "$3" -eq 124 ] || [ "$3" -eq 137 ] || [ "$3" -eq 143 ]; then
		echo "timed out"
	else
		echo "exit status $3"
	fi
}

# bench_cpu_fields BYTES: ,"busy_jiffies":..,"cpu_s_per_gb":.. from BUSY0/IDLE0 to now.
bench_cpu_fields() {
	bench_busy
	awk -v b="$1" -v busy=$((BUSY - BUSY0)) -v idle=$((IDLE - IDLE0)) -v hz="$BENCH_HZ" \
		'BEGIN { printf ",\"busy_jiffies\":%d,\"idle_jiffies\":%d,\"cpu_s_per_gb\":%.4f", busy, idle, (b > 0 ? busy / hz / (b / 1e9) : 0) }'
}

# The relay of a dgram run: started after the sink listens, since it dials at once.
bench_dgram_relay_start() { # MODE
	_g_in=$(bench_in "dgram-$1")
	rm -f "$_g_in"
	DGRAM_PID=
	case $1 in
	socat)
		socat -u UNIX-RECV:"$_g_in" "$BENCH_TARGET_SOCAT" 2>"$BENCH_DIR/dgram-$1.log" &
		DGRAM_PID=$!
		;;
	socat-b64k)
		socat -b 65536 -u UNIX-RECV:"$_g_in" "$BENCH_TARGET_SOCAT" \
			2>"$BENCH_DIR/dgram-$1.log" &
		DGRAM_PID=$!
		;;
	vsockmapd | vsockmapd-relay | vsockmapd-permanent)
		_g_args=
		[ "$1" = vsockmapd-relay ] && _g_args=$BENCH_RELAY_ARGS
		[ "$1" = vsockmapd-permanent ] && _g_args=$BENCH_PERMANENT_ARGS
		# shellcheck disable=SC2086 # any number of arguments
		bench_daemon_start "dgram-$1" "$(printf '%s\n[dgram]\nlisten  = UNIX-RECV:%s\nconnect = %s\n' "$BENCH_KERNEL_LINE" "$_g_in" "$BENCH_TARGET_DAEMON")" $_g_args || return 1
		DGRAM_PID=$DAEMON_PID
		;;
	*)
		return 1
		;;
	esac
	bench_wait_socket "$_g_in" 20
}

# bench_throughput SCENARIO KIND MODE REP BYTES PARALLEL
#   KIND stream: sink on the target, source through the mode (PARALLEL streams)
#   KIND reply:  serve on the target, fetch through the mode (the reply direction)
#   KIND dgram:  sink on the target, 64 KiB datagrams into the mode's UNIX-RECV socket;
#                "direct" is a plain vsock stream source (there is no datagram vsock)
bench_throughput() {
	_t_scen=$1 _t_kind=$2 _t_mode=$3 _t_rep=$4 _t_bytes=$5 _t_par=$6
	_t_addr=$(bench_client_addr "$_t_mode")
	_t_tmo=$BENCH_TIMEOUT
	_t_note=
	_t_noeof=
	rm -f "$BENCH_DIR/client.out" "$BENCH_DIR/client.err"
	if [ "$_t_kind" = reply ]; then
		bench_server srv serve "$BENCH_TARGET_LISTEN" --bytes "$_t_bytes" --conns "$_t_par" \
			--timeout "$_t_tmo"
	else
		[ "$_t_kind" != dgram ] && [ "${BENCH_SINK_NO_EOF:-0}" != 1 ] || _t_noeof=--no-eof
		bench_server srv sink "$BENCH_TARGET_LISTEN" --conns "$_t_par" --expect "$_t_bytes" \
			--timeout "$_t_tmo" $_t_noeof
	fi
	_t_srv=$SRV_PID
	DGRAM_PID=
	if [ "$_t_kind" = dgram ] && [ "$_t_mode" != direct ]; then
		if ! bench_dgram_relay_start "$_t_mode"; then
			kill "$_t_srv" 2>/dev/null
			wait "$_t_srv" 2>/dev/null
			bench_record throughput "$_t_scen" "$_t_mode" "$_t_rep" fail \
				"the datagram relay did not start: $(tail -n 1 "$BENCH_DIR/dgram-$_t_mode.log" 2>/dev/null)" "" ""
			[ -z "$DGRAM_PID" ] || { kill "$DGRAM_PID" 2>/dev/null; wait "$DGRAM_PID" 2>/dev/null; }
			return 1
		fi
		_t_addr=unix-dgram:$(bench_in "dgram-$_t_mode")
	fi
	if [ "$_t_kind" = dgram ] && [ "$_t_mode" = direct ]; then
		_t_note=',"note":"no datagram vsock: a vsock stream source with 64 KiB writes"'
	elif [ "$_t_kind" = dgram ]; then
		_t_note=',"dgram_send":"sendto"'
		[ -z "$BENCH_DGRAM_SOURCE_ARGS" ] || _t_note=',"dgram_send":"connect+send"'
	elif [ -n "$_t_noeof" ]; then
		_t_note=',"note":"timed to the last expected byte, not to EOF"'
	fi
	bench_busy
	BUSY0=$BUSY IDLE0=$IDLE
	if [ "$_t_kind" = reply ]; then
		timeout -k 2 "$_t_tmo" "$BENCH_TOOL" fetch "$_t_addr" --bytes "$_t_bytes" \
			--parallel "$_t_par" --timeout "$_t_tmo" >"$BENCH_DIR/client.out" \
			2>"$BENCH_DIR/client.err"
	else
		_t_dargs=
		[ "$_t_kind" != dgram ] || [ "$_t_mode" = direct ] || _t_dargs=$BENCH_DGRAM_SOURCE_ARGS
		# shellcheck disable=SC2086 # none or one option
		timeout -k 2 "$_t_tmo" "$BENCH_TOOL" source "$_t_addr" --bytes "$_t_bytes" \
			--parallel "$_t_par" --timeout "$_t_tmo" $_t_dargs >"$BENCH_DIR/client.out" \
			2>"$BENCH_DIR/client.err"
	fi
	_t_crc=$?
	# A sender that failed leaves the receiver waiting: it has had its chance.
	[ $_t_crc -eq 0 ] || { sleep 1; kill "$_t_srv" 2>/dev/null; }
	wait "$_t_srv"
	_t_src=$?
	_t_cpu=$(bench_cpu_fields $((_t_bytes * _t_par)))
	[ -z "$DGRAM_PID" ] || bench_stop_pid "$DGRAM_PID" "the $_t_mode datagram relay"
	if [ "$_t_kind" = reply ]; then
		_t_recv=$BENCH_DIR/client.out _t_rerr=$BENCH_DIR/client.err _t_rrc=$_t_crc
		_t_send=$BENCH_DIR/srv.out
	else
		_t_recv=$BENCH_DIR/srv.out _t_rerr=$BENCH_DIR/srv.err _t_rrc=$_t_src
		_t_send=$BENCH_DIR/client.out
	fi
	_t_json=$(grep '^{' "$_t_recv" | tail -n 1)
	_t_smbps=$(bench_json_get "$_t_send" mbps)
	_t_fields="$_t_note,\"kind\":\"$_t_kind\",\"parallel\":$_t_par,\"sender_mbps\":${_t_smbps:-0}$_t_cpu"
	if [ $_t_crc -eq 0 ] && [ $_t_src -eq 0 ] && [ "$(bench_json_get "$_t_recv" verify)" = ok ]; then
		bench_record throughput "$_t_scen" "$_t_mode" "$_t_rep" ok "" "$_t_fields" "$_t_json"
		return 0
	fi
	_t_why=$(bench_why "$_t_recv" "$_t_rerr" "$_t_rrc")
	[ "$_t_why" != "exit status 0" ] || _t_why="sender: $(bench_why "$_t_send" "$BENCH_DIR/client.err" "$_t_crc")"
	# socat's default 8 KiB buffer cuts every 64 KiB datagram short: name it.
	case $_t_kind:$_t_mode:$_t_why in
	dgram:socat:verify=mismatch@8192) _t_why="$_t_why: socat's default 8192-byte buffer truncates each 64 KiB datagram" ;;
	esac
	bench_record throughput "$_t_scen" "$_t_mode" "$_t_rep" fail "$_t_why" "$_t_fields" "$_t_json"
	return 1
}

# bench_latency SCENARIO MODE REP COUNT WARMUP: needs a pingpong-server on the target.
bench_latency() {
	timeout -k 2 "$BENCH_TIMEOUT" "$BENCH_TOOL" pingpong "$(bench_client_addr "$2")" \
		--count "$4" --warmup "$5" >"$BENCH_DIR/pp.out" 2>"$BENCH_DIR/pp.err"
	_l_rc=$?
	_l_json=$(grep '^{' "$BENCH_DIR/pp.out" | tail -n 1)
	if [ $_l_rc -eq 0 ]; then
		bench_record latency "$1" "$2" "$3" ok "" "" "$_l_json"
	else
		bench_record latency "$1" "$2" "$3" fail \
			"$(bench_why "$BENCH_DIR/pp.out" "$BENCH_DIR/pp.err" $_l_rc)" "" "$_l_json"
	fi
}

# bench_connrate SCENARIO MODE REP COUNT CONCURRENCY: needs a pingpong-server on the target.
bench_connrate() {
	# A relay that stops answering costs 20 failures, not thousands of timeouts.
	timeout -k 2 "$BENCH_TIMEOUT" "$BENCH_TOOL" connect-rate "$(bench_client_addr "$2")" \
		--count "$4" --concurrency "$5" --max-failures 20 --timeout "$BENCH_TIMEOUT" \
		>"$BENCH_DIR/cr.out" 2>"$BENCH_DIR/cr.err"
	_c_rc=$?
	_c_json=$(grep '^{' "$BENCH_DIR/cr.out" | tail -n 1)
	if [ $_c_rc -eq 0 ]; then
		bench_record connrate "$1" "$2" "$3" ok "" "" "$_c_json"
	else
		_c_why="$(bench_json_get "$BENCH_DIR/cr.out" ok) of $4 connections answered; stopped after $(bench_json_get "$BENCH_DIR/cr.out" attempted) attempts: $(bench_json_get "$BENCH_DIR/cr.out" first_error)"
		[ -n "$_c_json" ] || _c_why=$(bench_why "$BENCH_DIR/cr.out" "$BENCH_DIR/cr.err" $_c_rc)
		bench_record connrate "$1" "$2" "$3" fail "$_c_why" "" "$_c_json"
	fi
}

bench_live_redirects() { # MODE: how many redirects the mode's daemon lists; -1: no answer
	if _r_list=$("$BENCH_CTL" -s "$BENCH_DIR/$1.ctl" --no-legend list 2>/dev/null); then
		printf '%s\n' "$_r_list" | grep -c .
	else
		echo -1
	fi
}

# bench_slab_settle BEFORE_KB DURING_KB: waits (at most 30 s) until SUnreclaim (where socket
# objects live; less noisy than Slab) is back within 10 % of the hold's growth (or 2 MiB) of
# BEFORE_KB; sets SETTLE_FIELDS.
bench_slab_settle() {
	_z_t0=$(bench_uptime_cs)
	_z_limit=$(awk -v b="$1" -v d="$2" 'BEGIN { g = (d - b) / 10; if (g < 2048) g = 2048; printf "%d", b + g }')
	_z_ok=false
	while [ $(($(bench_uptime_cs) - _z_t0)) -lt 3000 ]; do
		if [ "$(bench_meminfo SUnreclaim)" -le "$_z_limit" ]; then
			_z_ok=true
			break
		fi
		sleep 0.2
	done
	_z_cs=$(($(bench_uptime_cs) - _z_t0))
	SETTLE_FIELDS=$(printf ',"slab_settle_s":%d.%02d,"slab_settled":%s,"sunreclaim_end_kb":%d' \
		$((_z_cs / 100)) $((_z_cs % 100)) "$_z_ok" "$(bench_meminfo SUnreclaim)")
	[ "$_z_ok" = true ] || bench_log "SUnreclaim did not return to $_z_limit kB within 30 s: $(bench_meminfo SUnreclaim) kB"
}

bench_uptime_cs() { # centiseconds since boot
	awk '{ printf "%d\n", $1 * 100 }' /proc/uptime
}

bench_cpu_ticks() { # PID: user + system clock ticks so far
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null
}

bench_cpu_ns() { # PID: nanoseconds on a CPU so far, every thread (schedstat; else the ticks)
	# shellcheck disable=SC2012 # the task directories' names are numbers
	if [ -r "/proc/$1/schedstat" ]; then
		cat "/proc/$1"/task/*/schedstat 2>/dev/null | awk '{ t += $1 } END { printf "%.0f\n", t }'
	else
		awk -v hz="$BENCH_HZ" '{ printf "%.0f\n", ($14 + $15) * 1e9 / hz }' "/proc/$1/stat" 2>/dev/null
	fi
}

# bench_idle_cpu PID SECONDS: the share of one CPU (percent) PID used over SECONDS of nothing
# happening (the connections held, idle); sets IDLE_FIELDS.
bench_idle_cpu() {
	_i_t0=$(bench_uptime_cs)
	_i_c0=$(bench_cpu_ns "$1")
	sleep "$2"
	_i_c1=$(bench_cpu_ns "$1")
	_i_cs=$(($(bench_uptime_cs) - _i_t0))
	IDLE_FIELDS=$(awk -v c0="${_i_c0:-0}" -v c1="${_i_c1:-0}" -v cs="$_i_cs" 'BEGIN {
		printf ",\"idle_s\":%.2f,\"idle_cpu_pct\":%.3f", cs / 100, (cs > 0 ? (c1 - c0) / (cs * 1e7) * 100 : 0)
	}')
}

# bench_sweep_cpu MODE PID SECONDS: the same with idle-timeout set (an hour: nothing closes),
# by a reload of MODE's configuration, from the sweep's second check (its first looks at
# every redirect in full); then the configuration as it was, reloaded back, so that the
# teardown is measured as before. Sets SWEEP_FIELDS (none if a reload did not take).
bench_sweep_cpu() {
	SWEEP_FIELDS=''
	_w_conf=$BENCH_DIR/$1.conf
	cp "$_w_conf" "$_w_conf.plain" || return 1
	awk '{ print } $0 == "[daemon]" { print "idle-timeout = 3600" }' "$_w_conf.plain" >"$_w_conf" &&
		bench_reload "$1" "$2" || return 1
	sleep 2
	bench_idle_cpu "$2" "$3"
	mv "$_w_conf.plain" "$_w_conf" && bench_reload "$1" "$2" || return 1
	SWEEP_FIELDS=$(printf '%s' "$IDLE_FIELDS" | sed 's/"idle_s"/"sweep_s"/; s/"idle_cpu_pct"/"sweep_cpu_pct"/')
}

# bench_reload MODE PID: SIGHUP, then until MODE's log says "reloaded" once more (10 s).
bench_reload() {
	_r_n=$(grep -c 'reloaded ' "$BENCH_DIR/$1.log")
	kill -HUP "$2" || return 1
	_r_ticks=100
	while [ "$(grep -c 'reloaded ' "$BENCH_DIR/$1.log")" -le "${_r_n:-0}" ]; do
		[ "$_r_ticks" -gt 0 ] || return 1
		_r_ticks=$((_r_ticks - 1))
		sleep 0.1
	done
}

# bench_flood_latency MODE COUNT: 1-byte round trips through one more connection while
# BENCH_FLOOD_TOOL (tests/host/hostile-control.py) writes 200 "list" requests at a time on the
# daemon's control socket and reads the answers (issue 44: the control plane must not stall
# the data); the same round trips first without the flood. Sets FLOOD_FIELDS.
bench_flood_latency() {
	FLOOD_FIELDS='' FLOOD_WHY=''
	_f_addr=$(bench_client_addr "$1")
	timeout -k 2 "$BENCH_TIMEOUT" "$BENCH_TOOL" pingpong "$_f_addr" --count "$2" --warmup 10 \
		>"$BENCH_DIR/quiet.out" 2>"$BENCH_DIR/quiet.err"
	_f_rc=$?
	if [ $_f_rc -ne 0 ]; then
		FLOOD_WHY="the echo alone: $(bench_why "$BENCH_DIR/quiet.out" "$BENCH_DIR/quiet.err" $_f_rc)"
		return 1
	fi
	# Bounded twice: it stops after BENCH_TIMEOUT seconds, and timeout kills it should it
	# hang on a daemon that stopped answering.
	timeout -k 2 $((BENCH_TIMEOUT + 10)) python3 "$BENCH_FLOOD_TOOL" flood "$BENCH_DIR/$1.ctl" \
		"$BENCH_TIMEOUT" 200 >"$BENCH_DIR/flood.out" 2>"$BENCH_DIR/flood.err" &
	_f_pid=$!
	sleep 1 # the flood's first answers are being built
	timeout -k 2 "$BENCH_TIMEOUT" "$BENCH_TOOL" pingpong "$_f_addr" --count "$2" --warmup 10 \
		>"$BENCH_DIR/fpp.out" 2>"$BENCH_DIR/fpp.err"
	_f_rc=$?
	kill -TERM "$_f_pid" 2>/dev/null
	wait "$_f_pid"
	if [ $_f_rc -ne 0 ]; then
		FLOOD_WHY="the echo during the flood: $(bench_why "$BENCH_DIR/fpp.out" "$BENCH_DIR/fpp.err" $_f_rc)"
		return 1
	fi
	if ! grep -q '^requests=' "$BENCH_DIR/flood.out"; then
		FLOOD_WHY="the flood: $(tail -n 1 "$BENCH_DIR/flood.err")"
		return 1
	fi
	FLOOD_FIELDS=$(printf ',"quiet_p50_us":%s,"quiet_p99_us":%s,"flood_p50_us":%s,"flood_p99_us":%s,"flood_max_us":%s,"flood_requests":%s,"flood_errors":%s' \
		"$(bench_json_get "$BENCH_DIR/quiet.out" p50_us)" "$(bench_json_get "$BENCH_DIR/quiet.out" p99_us)" \
		"$(bench_json_get "$BENCH_DIR/fpp.out" p50_us)" "$(bench_json_get "$BENCH_DIR/fpp.out" p99_us)" \
		"$(bench_json_get "$BENCH_DIR/fpp.out" max_us)" \
		"$(sed -n 's/^requests=\([0-9]*\).*/\1/p' "$BENCH_DIR/flood.out")" \
		"$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' "$BENCH_DIR/flood.out")")
}

# bench_teardown MODE PID: waits (up to BENCH_TEARDOWN_MAX s) until the daemon lists no
# redirect; sets TEARDOWN_FIELDS. A daemon still busy then is restarted, so that the next
# measurement starts from a clean one, and that is said in the record.
bench_teardown() {
	_e_t0=$(bench_uptime_cs)
	_e_cpu0=$(bench_cpu_ticks "$2")
	_e_done=0
	while [ $(($(bench_uptime_cs) - _e_t0)) -lt $((BENCH_TEARDOWN_MAX * 100)) ]; do
		if [ "$(bench_live_redirects "$1")" -eq 0 ]; then
			_e_done=1
			break
		fi
		sleep 0.1
	done
	_e_cs=$(($(bench_uptime_cs) - _e_t0))
	_e_cpu=$(($(bench_cpu_ticks "$2") - _e_cpu0))
	_e_fds=$(find "/proc/$2/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	TEARDOWN_FIELDS=$(printf ',"teardown_s":%d.%02d,"teardown_daemon_cpu_s":%d.%02d,"teardown_done":%s,"daemon_fds_after":%d' \
		$((_e_cs / 100)) $((_e_cs % 100)) $((_e_cpu / BENCH_HZ)) $((_e_cpu % BENCH_HZ)) \
		"$([ $_e_done -eq 1 ] && echo true || echo false)" "$_e_fds")
	[ $_e_done -eq 0 ] || return 0
	bench_log "$1 still had redirects (or did not answer) ${BENCH_TEARDOWN_MAX}s after the clients closed, using $((_e_cpu / BENCH_HZ)) s of CPU, $_e_fds fds: restarting it"
	bench_stop_relay "$1"
	bench_start_relay "$1" || bench_log "$1 did not restart: $(bench_mode_na "$1")"
	return 1
}

# bench_memory SCENARIO MODE COUNT: COUNT idle connections held open through MODE (direct:
# none, the baseline of the sockets themselves); daemon RSS and kernel slab before and
# after. Needs a pingpong-server on the target.
bench_memory() {
	_m_scen=$1 _m_mode=$2 _m_n=$3
	_m_pid=
	case $_m_mode in
	vsockmapd*)
		# A fresh daemon: its RSS growth is then what the redirects cost, not what the
		# earlier phases left in its heap (and one still busy from them is gone).
		bench_stop_relay "$_m_mode"
		if ! bench_start_relay "$_m_mode"; then
			bench_record memory "$_m_scen" "$_m_mode" 1 fail \
				"the daemon did not restart: $(bench_mode_na "$_m_mode")" "" ""
			return 1
		fi
		_m_pid=$(bench_daemon_pid "$_m_mode")
		;;
	esac
	sync
	sleep "$BENCH_SETTLE"
	_m_rss0=0
	[ -z "$_m_pid" ] || _m_rss0=$(bench_rss_kb "$_m_pid")
	_m_slab0=$(bench_meminfo Slab)
	_m_unrec0=$(bench_meminfo SUnreclaim)
	_m_free0=$(bench_meminfo MemAvailable)
	rm -f "$BENCH_DIR/hold.ready"
	"$BENCH_TOOL" hold "$(bench_client_addr "$_m_mode")" --count "$_m_n" --concurrency 32 \
		--conn-timeout 5 --timeout "$BENCH_HOLD_TIMEOUT" --ready-file "$BENCH_DIR/hold.ready" \
		>"$BENCH_DIR/hold.out" 2>"$BENCH_DIR/hold.err" &
	_m_hold=$!
	bench_wait_file "$BENCH_DIR/hold.ready" $((BENCH_HOLD_TIMEOUT + 30))
	# Let the daemon finish its per-redirect work (drain checks, counters) before reading.
	sleep "$BENCH_SETTLE"
	_m_rss1=0
	[ -z "$_m_pid" ] || _m_rss1=$(bench_rss_kb "$_m_pid")
	_m_slab1=$(bench_meminfo Slab)
	_m_unrec1=$(bench_meminfo SUnreclaim)
	_m_free1=$(bench_meminfo MemAvailable)
	_m_live=-1
	[ -z "$_m_pid" ] || _m_live=$(bench_live_redirects "$_m_mode")
	# What the held connections cost the daemon while nothing happens, and whether a control
	# client's flood of lists over them stalls the data (the host part only: it needs python3).
	IDLE_FIELDS='' FLOOD_FIELDS='' SWEEP_FIELDS=''
	if [ -n "$_m_pid" ]; then
		bench_idle_cpu "$_m_pid" "$BENCH_IDLE_SECONDS"
		_m_idle=$IDLE_FIELDS
		[ -z "${BENCH_FLOOD_TOOL:-}" ] || bench_flood_latency "$_m_mode" "$BENCH_FLOOD_PP" ||
			bench_log "$_m_mode: no echo figures during a list flood ($FLOOD_WHY)"
		bench_sweep_cpu "$_m_mode" "$_m_pid" "$BENCH_IDLE_SECONDS" ||
			bench_log "$_m_mode: no idle CPU with idle-timeout set (the reload did not take: $(tail -n 1 "$BENCH_DIR/$_m_mode.log"))"
		IDLE_FIELDS=$_m_idle
	fi
	kill "$_m_hold" 2>/dev/null
	wait "$_m_hold"
	_m_json=$(grep '"role":"hold"' "$BENCH_DIR/hold.out" | tail -n 1)
	_m_alive=$(bench_json_get "$BENCH_DIR/hold.out" alive)
	_m_est=$(printf '%s' "$_m_json" | sed -n 's/.*"established":\([0-9]*\).*/\1/p')
	_m_fields=$(awk -v n="${_m_est:-0}" -v r0="${_m_rss0:-0}" -v r1="${_m_rss1:-0}" \
		-v s0="$_m_slab0" -v s1="$_m_slab1" -v u0="$_m_unrec0" -v u1="$_m_unrec1" \
		-v f0="$_m_free0" -v f1="$_m_free1" -v live="$_m_live" -v alive="${_m_alive:-0}" \
		-v nofile="$(ulimit -n)" 'BEGIN {
		d = n > 0 ? n : 1
		printf ",\"rss_before_kb\":%d,\"rss_after_kb\":%d,\"rss_per_conn_kb\":%.2f", r0, r1, (r1 - r0) / d
		printf ",\"slab_before_kb\":%d,\"slab_after_kb\":%d,\"slab_per_conn_kb\":%.2f", s0, s1, (s1 - s0) / d
		printf ",\"sunreclaim_before_kb\":%d,\"sunreclaim_after_kb\":%d", u0, u1
		printf ",\"memavailable_drop_kb\":%d,\"listed_redirects\":%d,\"alive_at_end\":%d,\"nofile\":\"%s\"", f0 - f1, live, alive, nofile
	}')$IDLE_FIELDS$SWEEP_FIELDS$FLOOD_FIELDS
	# The redirects of this hold must be gone before the next measurement starts.
	if [ -n "$_m_pid" ]; then
		bench_teardown "$_m_mode" "$_m_pid"
		_m_fields="$_m_fields$TEARDOWN_FIELDS,\"fresh_daemon\":true"
	fi
	# Closed sockets leave the slab asynchronously (vsock: slowly, under TCG); the next
	# measurement's "before" must not still hold this one's.
	bench_slab_settle "$_m_unrec0" "$_m_unrec1"
	_m_fields="$_m_fields$SETTLE_FIELDS"
	if [ -z "$_m_json" ]; then
		bench_record memory "$_m_scen" "$_m_mode" 1 fail \
			"hold: $(tail -n 1 "$BENCH_DIR/hold.err")" "$_m_fields" ""
	elif [ "$_m_est" != "$_m_n" ]; then
		bench_record memory "$_m_scen" "$_m_mode" 1 partial \
			"only $_m_est of $_m_n connections fit: $(bench_json_get "$BENCH_DIR/hold.out" first_error)" \
			"$_m_fields" "$_m_json"
	else
		bench_record memory "$_m_scen" "$_m_mode" 1 ok "" "$_m_fields" "$_m_json"
	fi
}

# ---- one part ------------------------------------------------------------------------------

# bench_auto_note: which measured row the default is here. A daemon started without
# datapath= says in its listener line which path it took, and why; nothing is measured, since
# that path is the kernel's (the vsockmapd row) or the user relay's (vsockmapd-relay).
bench_auto_note() {
	case " $BENCH_MODES " in *" vsockmapd "*) ;; *) return 0 ;; esac
	_a_line=
	if bench_daemon_start auto "$(bench_stream_section vsockmapd-auto)"; then
		_a_line=$(sed -n 's/.*\[bench\] listening on .*; data path: //p' "$BENCH_DIR/auto.log")
		bench_stop_pid "$DAEMON_PID" "vsockmapd (auto)"
	fi
	_a_mode=
	case $_a_line in
	kernel)
		_a_mode=vsockmapd
		bench_log "datapath=auto, the default, takes the kernel path here: its figures are the vsockmapd (kernel) rows"
		;;
	"user space"*)
		_a_mode=vsockmapd-relay
		bench_log "datapath=auto, the default, takes the user relay here: its figures are the vsockmapd (user relay) rows; $_a_line"
		;;
	*)
		_a_line="no listener line from the daemon: $(bench_daemon_error auto)"
		bench_log "datapath=auto: $_a_line"
		;;
	esac
	# For the report (bench/report.awk): which row the default's figures are.
	bench_emit "{\"part\":\"$BENCH_PART\",\"metric\":\"default\",\"target\":\"${BENCH_TARGET_DAEMON%%:*}\",\"same_as\":\"$_a_mode\",\"reason\":\"$(bench_text "$_a_line")\"}"
}

# bench_part_start: every stream relay up, each proven by a verified 1 MiB transfer.
bench_part_start() {
	bench_auto_note
	for _p_mode in $BENCH_MODES; do
		bench_start_relay "$_p_mode" || continue
		bench_server probe sink "$BENCH_TARGET_LISTEN" --conns 1 --expect 1M --timeout 30
		_p_srv=$SRV_PID
		timeout -k 2 30 "$BENCH_TOOL" source "$(bench_client_addr "$_p_mode")" --bytes 1M \
			--timeout 20 >"$BENCH_DIR/probe-client.out" 2>"$BENCH_DIR/probe-client.err"
		_p_crc=$?
		[ $_p_crc -eq 0 ] || { sleep 1; kill "$_p_srv" 2>/dev/null; }
		wait "$_p_srv"
		if [ $_p_crc -ne 0 ] || [ "$(bench_json_get "$BENCH_DIR/probe.out" verify)" != ok ]; then
			_p_why=$(bench_why "$BENCH_DIR/probe.out" "$BENCH_DIR/probe.err" 1)
			[ $_p_crc -eq 0 ] || _p_why="client: $(tail -n 1 "$BENCH_DIR/probe-client.err")"
			bench_set_na "$_p_mode" "a verified 1 MiB transfer through it failed ($_p_why); relay log: $(tail -n 1 "$BENCH_DIR/$_p_mode.log" 2>/dev/null)"
			bench_stop_relay "$_p_mode"
		fi
	done
}

bench_part_stop() {
	bench_log "stopping the relays"
	for _p_mode in $BENCH_MODES; do
		bench_stop_relay "$_p_mode"
	done
}

# bench_na_records METRIC SCENARIO: one n/a record per mode that cannot run.
bench_na_records() {
	for _n_mode in $BENCH_MODES; do
		_n_why=$(bench_mode_na "$_n_mode") || continue
		bench_record "$1" "$2" "$_n_mode" 0 n/a "$_n_why" "" ""
	done
}

# bench_scenario SCENARIO KIND REPS BYTES PARALLEL [MODES]: REPS rounds, each mode in turn.
bench_scenario() {
	_b_modes=${6:-$BENCH_MODES}
	bench_log "$1: $3 rounds of: $_b_modes"
	bench_na_records throughput "$1"
	_b_rep=1
	while [ $_b_rep -le "$3" ]; do
		for _b_mode in $_b_modes; do
			bench_mode_na "$_b_mode" >/dev/null && continue
			bench_throughput "$1" "$2" "$_b_mode" "$_b_rep" "$4" "$5"
		done
		_b_rep=$((_b_rep + 1))
	done
}

# bench_pingpong_phase SCENARIO REPS COUNT WARMUP CONNS CONCURRENCY [CONN_REPS]: latency,
# then setup rate (CONN_REPS rounds, default REPS).
bench_pingpong_phase() {
	bench_server pp pingpong-server "$BENCH_TARGET_LISTEN"
	_q_srv=$SRV_PID
	bench_log "$1: latency and connection rate"
	bench_na_records latency "$1"
	bench_na_records connrate "$1"
	_q_rep=1
	while [ $_q_rep -le "$2" ]; do
		for _q_mode in $BENCH_MODES; do
			bench_mode_na "$_q_mode" >/dev/null && continue
			bench_latency "$1" "$_q_mode" "$_q_rep" "$3" "$4"
		done
		_q_rep=$((_q_rep + 1))
	done
	_q_rep=1
	while [ $_q_rep -le "${7:-$2}" ]; do
		for _q_mode in $BENCH_MODES; do
			bench_mode_na "$_q_mode" >/dev/null && continue
			bench_connrate "$1" "$_q_mode" "$_q_rep" "$5" "$6"
		done
		_q_rep=$((_q_rep + 1))
	done
	PINGPONG_PID=$_q_srv
}

# bench_memory_phase SCENARIO COUNTS...: the direct baseline, then each vsockmapd mode but the
# permanent fast path (the same sockets and maps as the kernel mode). Runs after
# bench_pingpong_phase, whose server is still up.
bench_memory_phase() {
	_h_scen=$1
	shift
	for _h_n in "$@"; do
		for _h_mode in $BENCH_MODES; do
			case $_h_mode in
			vsockmapd-permanent) continue ;;
			direct | vsockmapd*) ;;
			*) continue ;;
			esac
			bench_mode_na "$_h_mode" >/dev/null && continue
			bench_log "$_h_scen: $_h_n idle connections through $_h_mode"
			bench_memory "$_h_scen" "$_h_mode" "$_h_n"
		done
	done
	bench_stop_pid "$PINGPONG_PID" pingpong-server
}
