# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# small-writes-lib.sh - what the two small-write suites share (suite-small-writes.sh over
# vsock_loopback, suite-virtio-small-writes.sh over virtio-vsock), at
# /usr/lib/vmtest/small-writes.sh in the VM. Each suite defines slow_run and sets D,
# SLOW_RUNS, SLOW_SIZE and SLOW_WRITE.

# small_daemon NAME DATAPATH CONNECT: vsockmapd with one section, UNIX-LISTEN:D/NAME.sock to
# CONNECT, configured in D/NAME.conf and logging to D/NAME.log; its pid in small_pid once its
# control socket (D/NAME.ctl) is up.
small_daemon() {
	cat >"$D/$1.conf" <<CONF
[daemon]
control = $D/$1.ctl
log-level = notice
datapath = $2

[small]
listen  = UNIX-LISTEN:$D/$1.sock,backlog=1024
connect = $3
CONF
	vsockmapd -c "$D/$1.conf" 2>"$D/$1.log" &
	# shellcheck disable=SC2034 # read by the suites
	small_pid=$!
	wait_for_socket "$D/$1.ctl" 20
}

# losses_by_direction: from vsm-soak's failed-connection lines on stdin (up=GOT/WANT,
# down=GOT/WANT), "up: N conns, B bytes lost; down: N conns, B bytes lost".
losses_by_direction() {
	awk '/^conn / {
		for (i = 1; i <= NF; i++) {
			if ($i !~ /^(up|down)=[0-9]+\/[0-9]+$/) continue
			split($i, kv, "="); split(kv[2], gw, "/")
			if (gw[1] + 0 < gw[2] + 0) { n[kv[1]]++; b[kv[1]] += gw[2] - gw[1] }
		}
	}
	END { printf "up: %d conns, %d bytes lost; down: %d conns, %d bytes lost\n",
		n["up"], b["up"], n["down"], b["down"] }'
}

# slow_reader_test TEST LABEL DIRECT DEFAULT_LOG: SLOW_RUNS runs of the slow reader, each
# direct (slow_run direct I DIRECT) and through the running default daemon (slow_run default
# I unix:D/slow.sock), the same seed; TEST passes if the default delivered at least what
# direct did, and something, in every run. DEFAULT_LOG: the daemon's log, quoted on a failure.
slow_reader_test() {
	_bad='' _rows='' _i=1
	while [ "$_i" -le "$SLOW_RUNS" ]; do
		# shellcheck disable=SC2046 # two words: BYTES END
		set -- "$1" "$2" "$3" "$4" $(slow_run direct "$_i" "$3")
		_d_bytes=$5 _d_end=$6
		# shellcheck disable=SC2046
		set -- "$1" "$2" "$3" "$4" $(slow_run default "$_i" "unix:$D/slow.sock")
		_u_bytes=$5 _u_end=$6
		vmtest_log "$2 slow reader run $_i: direct $_d_bytes bytes then $_d_end; default $_u_bytes bytes then $_u_end"
		_rows="$_rows run $_i: direct $_d_bytes, default $_u_bytes;"
		# 0 and 0 is no run at all (a server that did not come up), not a pass
		[ "$_u_bytes" -ge "$_d_bytes" ] && [ "$_u_bytes" -gt 0 ] ||
			_bad="$_bad run $_i ($_u_bytes, direct $_d_bytes)"
		_i=$((_i + 1))
	done
	if [ "$SLOW_RUNS" -le 0 ]; then
		vmtest_skip "$1" "SLOW_RUNS=0 in small.env"
	elif [ -n "$_bad" ]; then
		vmtest_fail "$1" "the default delivered less than direct:$_bad |$_rows $(grep -m2 -i 'fail\|lost' "$4" | tr '\n' ' ')"
	else
		vmtest_pass "$1" "$SLOW_SIZE bytes in $SLOW_WRITE-byte writes to a client reading 4 KiB every 2 ms:$_rows"
	fi
}
