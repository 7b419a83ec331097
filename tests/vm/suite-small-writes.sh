# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-small-writes.sh - the small-write matrix on this VM's kernel (docs/behaviour-matrix.md,
# "Small writes"). Since Linux 6.12.92 a virtio-vsock receiver resets a connection whose
# queue holds more packets than its buffer's worth of empty ones (the packet ceiling), which
# a writer of pieces smaller than about 600 bytes reaches with credit to spare. vsm-soak
# draws SMALL_SHARE percent of its connections as small writers (the client, the server or
# both, in pieces of 64 to 512 bytes; half of those with a small-writing server read 4 KiB
# every 2 ms on the client), and runs the same SMALL_COUNT connections, seed for seed,
# through each path:
#
#   direct   the vsock client straight to the vsock server, no daemon: the control, what the
#            kernel keeps and loses on its own
#   default  vsockmapd as shipped (datapath=auto), a unix client to the vsock server
#   kernel   vsockmapd with datapath=kernel
#
# Each row's connections failed, reset with ENOBUFS and bytes lost (by direction) are logged.
# The test is the default's: it fails no connection, also where the direct control is reset
# (the kernel's limit, which the daemon must not pass on: kernel-notes.md, "The vsock packet
# ceiling").
#
#	tests/vm/run.sh tests/vm/suite-small-writes.sh --file ENV:/usr/lib/vmtest/small.env

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"
# shellcheck source=tests/vm/small-writes-lib.sh
. /usr/lib/vmtest/small-writes.sh
SMALL_COUNT=300 SMALL_SHARE=50 SMALL_LIVE=50 SMALL_MAX_SIZE=8388608 SMALL_SEED=1
# Run the kernel path's row too (it is a measurement: make check leaves it out).
SMALL_KERNEL_ROW=0
# Measurement rows of the default with the target's vsock buffer set (rcvbuf=BYTES), e.g. "1048576".
SMALL_RCVBUF_ROWS=
# Target options for the default row, to replay a "before" (",rcvbuf=262144": the kernel's own
# vsock buffer, as the daemon had it before it set VSOCK_RECV_BUFFER).
SMALL_DEFAULT_OPTS=
# The slow reader: a vsock server writes SLOW_SIZE bytes in 300-byte pieces to a client that
# reads 4 KiB every 2 ms, SLOW_RUNS times direct and through the default daemon.
SLOW_SIZE=8388608 SLOW_RUNS=1 SLOW_WRITE=300
# shellcheck disable=SC1091
[ -f /usr/lib/vmtest/small.env ] && . /usr/lib/vmtest/small.env

D=$VMTEST_TMP/small
mkdir -p "$D"
MODES=client-first,server-first,half-client,half-server
# shellcheck disable=SC3045 # busybox sh has it
ulimit -n 16384

# row NAME CONNECT [DATAPATH [TARGET_OPTIONS]]: one run of the matrix; its output in D/NAME.out.
row() {
	_name=$1 _connect=$2 _dp=${3:-} _opts=${4:-}
	_daemon=
	if [ -n "$_dp" ]; then
		small_daemon "$_name" "$_dp" "VSOCK-CONNECT:1:7100$_opts"
		_daemon=$small_pid
	fi
	vsm-soak --connect "$_connect" --listen vsock:any:7100 --count "$SMALL_COUNT" \
		--live "$SMALL_LIVE" --max-size "$SMALL_MAX_SIZE" --seed "$SMALL_SEED" \
		--small-share "$SMALL_SHARE" --modes "$MODES" --end-bound-ms 10000 --stall 60 \
		--timeout 900 >"$D/$_name.out" 2>&1
	if [ -n "$_daemon" ]; then
		kill "$_daemon"
		wait "$_daemon"
	fi
	_sum=$(grep '^soak ' "$D/$_name.out")
	vmtest_log "small-writes $_name: ${_sum:-no summary: $(tail -n 2 "$D/$_name.out" | tr '\n' ' ')}"
	vmtest_log "small-writes $_name by direction: $(directions "$_name")"
	# The failed connections, for the record (the matrix in docs/behaviour-matrix.md).
	grep '^conn ' "$D/$_name.out" | cut -c1-300 | while read -r _line; do
		vmtest_log "small-writes $_name: $_line"
	done
	[ -z "$_daemon" ] || grep -i 'failed\|lost\|reset' "$D/$_name.log" | cut -c1-300 | head -n 40 |
		while read -r _line; do vmtest_log "small-writes $_name daemon: $_line"; done
}

# failed_ids NAME: the ids of the row's failed connections, one per line, sorted.
failed_ids() {
	sed -n 's/^conn \([0-9]*\) .*/\1/p' "$D/$1.out" | sort
}

# directions NAME: the row's losses by direction (losses_by_direction).
directions() {
	losses_by_direction <"$D/$1.out"
}

# field NAME KEY: a number from the row's summary line.
field() {
	grep '^soak ' "$D/$1.out" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# slow_run NAME SEED CONNECT: one slow-reader run; prints "BYTES END", the bytes the client
# read and how its stream ended (EOF, or the error it read).
slow_run() {
	vsm-peer server vsock:any:7200 --source "$SLOW_SIZE" --write-size "$SLOW_WRITE" --count 1 \
		--seed "$2" --timeout 600 --ready-file "$D/slow.ready" >"$D/slow-$1-$2.server" 2>&1 &
	_srv=$!
	wait_for_file "$D/slow.ready" 20
	vsm-peer client "$3" --send 0 --expect "$SLOW_SIZE" --read-size 4096 --slow 2000 \
		--seed "$2" --timeout 600 >"$D/slow-$1-$2.client" 2>&1
	wait "$_srv"
	rm -f "$D/slow.ready"
	_bytes=$(sed -n 's/^client total conns=[0-9]* sent=[0-9]* recv=\([0-9]*\).*/\1/p' "$D/slow-$1-$2.client")
	_end=$(grep -m1 -o 'vsm-peer: .*' "$D/slow-$1-$2.client" | cut -c1-80 | tr ' ' '_')
	echo "${_bytes:-0} ${_end:-EOF}"
}

if [ "$SMALL_COUNT" -gt 0 ]; then
	vmtest_log "small-writes: $SMALL_COUNT connections, $SMALL_SHARE% small writers, seed $SMALL_SEED, kernel $(uname -r)"
	row direct vsock:1:7100
	row default "unix:$D/default.sock" auto "$SMALL_DEFAULT_OPTS"
	[ "$SMALL_KERNEL_ROW" = 1 ] && row kernel "unix:$D/kernel.sock" kernel
	for _b in $SMALL_RCVBUF_ROWS; do
		row "default-rcvbuf-$_b" "unix:$D/default-rcvbuf-$_b.sock" auto ",rcvbuf=$_b"
	done

	failed_ids direct >"$D/direct.ids"
	failed_ids default >"$D/default.ids"
	# The default's failures that the control did not have: ours.
	ours=$(grep -vxF -f "$D/direct.ids" "$D/default.ids" | tr '\n' ' ')
	both=$(grep -cxF -f "$D/default.ids" "$D/direct.ids")
	if [ -z "$(field default conns)" ] || [ -z "$(field direct conns)" ]; then
		vmtest_fail small-writes-default "a row did not finish: direct $(tail -n 1 "$D/direct.out"), default $(tail -n 1 "$D/default.out")"
	elif [ "$(field default failed)" != 0 ]; then
		vmtest_fail small-writes-default "the default failed $(field default failed) of $SMALL_COUNT (${ours:+lost by it alone: $ours}$both also lost by the direct control) | $(grep -m3 '^conn ' "$D/default.out" | tr '\n' ' ') | $(grep -m2 -i 'fail\|lost' "$D/default.log" | tr '\n' ' ')"
	else
		vmtest_pass small-writes-default "$(field default small) small writers of $SMALL_COUNT: the default failed none; the direct control failed $(field direct failed) ($(field direct enobufs) ENOBUFS)"
	fi
fi

# The slow reader (docs/behaviour-matrix.md, "Small writes"): the default must deliver at least
# what the direct control delivers, run by run (the same seed).
small_daemon slow auto "VSOCK-CONNECT:1:7200${SLOW_RCVBUF:+,rcvbuf=$SLOW_RCVBUF}"
slow_daemon=$small_pid
slow_reader_test small-writes-slow-reader small-writes vsock:1:7200 "$D/slow.log"
kill "$slow_daemon"
wait "$slow_daemon"
