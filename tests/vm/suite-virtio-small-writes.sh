# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-virtio-small-writes.sh - the small-write matrix over virtio-vsock (tests/vm/run.sh
# --virtio; docs/behaviour-matrix.md, "Small writes"): the clients in the guest, the servers
# on the host behind vhost-device-vsock, SMALL_SHARE percent of the connections writing in
# pieces of 64 to 512 bytes (the client, the server or both). The same SMALL_COUNT
# connections, seed for seed, run through each path:
#
#   direct   the guest's vsock client straight to the host's server: the control
#   default  vsockmapd as shipped (datapath=auto), a unix client
#   kernel   datapath=kernel (SMALL_KERNEL_ROW=1; a measurement, make check leaves it out)
#
# The host checks every up byte, the guest every down byte and each ending; the backend
# carries neither a half-close nor a reset (tests/vm/README.md), so the endings are
# client-first and server-first. The test is the default's: it fails no connection, also
# where the direct control is reset. Then the slow reader, as in suite-small-writes.sh: a host server writes
# SLOW_SIZE bytes in 300-byte pieces to a guest client reading 4 KiB every 2 ms.
#
#	tests/vm/run.sh tests/vm/suite-virtio-small-writes.sh --virtio [--file ENV:/usr/lib/vmtest/small.env]

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"
# shellcheck source=tests/vm/virtio-guest.sh
. /usr/lib/vmtest/virtio.sh
# shellcheck source=tests/vm/small-writes-lib.sh
. /usr/lib/vmtest/small-writes.sh
SMALL_COUNT=300 SMALL_SHARE=50 SMALL_LIVE=50 SMALL_MAX_SIZE=4194304 SMALL_SEED=1
SMALL_KERNEL_ROW=0 SLOW_SIZE=8388608 SLOW_RUNS=1 SLOW_WRITE=300
# shellcheck disable=SC1091
[ -f /usr/lib/vmtest/small.env ] && . /usr/lib/vmtest/small.env

D=$VMTEST_TMP/vsmall
mkdir -p "$D"
# shellcheck disable=SC3045 # busybox sh has it
ulimit -n 16384
port=7400

# row NAME [DATAPATH]: one run of the matrix; the guest's output in D/NAME.client, the host's
# in D/NAME.server.
row() {
	_name=$1 _dp=${2:-} _daemon=
	port=$((port + 1))
	_args="--count $SMALL_COUNT --live $SMALL_LIVE --max-size $SMALL_MAX_SIZE --seed $SMALL_SEED
		--small-share $SMALL_SHARE --modes client-first,server-first --end-bound-ms 10000
		--stall 60 --timeout 900"
	# shellcheck disable=SC2086 # the arguments are words
	_r=$(host_req soak "small-$_name" "$port" $_args)
	if [ "$_r" != ready ]; then
		vmtest_log "small-writes $_name: the host's server ends did not come up: ${_r:-no answer}"
		return
	fi
	_connect=vsock:2:$port
	if [ -n "$_dp" ]; then
		small_daemon "$_name" "$_dp" "VSOCK-CONNECT:2:$port"
		_daemon=$small_pid
		_connect=unix:$D/$_name.sock
	fi
	# shellcheck disable=SC2086
	vsm-soak --role client --connect "$_connect" $_args >"$D/$_name.client" 2>&1
	host_wait "small-$_name" "$D" >"$D/$_name.server"
	if [ -n "$_daemon" ]; then
		kill "$_daemon"
		wait "$_daemon"
	fi
	vmtest_log "small-writes virtio $_name: guest: $(grep '^soak ' "$D/$_name.client") | host: $(grep '^soak ' "$D/$_name.server")"
	vmtest_log "small-writes virtio $_name by direction: $(directions "$_name")"
	cat "$D/$_name.client" "$D/$_name.server" | grep '^conn ' | cut -c1-300 | while read -r _line; do
		vmtest_log "small-writes virtio $_name: $_line"
	done
}

# directions NAME: the row's losses by direction, the up bytes as the host counted them, the
# down bytes as the guest did.
directions() {
	{ grep '^conn ' "$D/$1.server" | sed 's/ down=[^ ]*//'; grep '^conn ' "$D/$1.client" | sed 's/ up=[^ ]*//'; } |
		losses_by_direction
}

# failed_ids NAME: the ids of the row's failed connections, either end, one per line, sorted.
failed_ids() {
	cat "$D/$1.client" "$D/$1.server" 2>/dev/null | sed -n 's/^conn \([0-9]*\) .*/\1/p' | sort -u
}

# field NAME SIDE KEY: a number from the summary line of one end.
field() {
	grep '^soak ' "$D/$1.$2" | tr ' ' '\n' | sed -n "s/^$3=//p"
}

# slow_run NAME SEED CONNECT: one slow-reader run; prints "BYTES END".
slow_run() {
	port=$((port + 1))
	_r=$(host_req server "slow-$1-$2" "$port" --source "$SLOW_SIZE" --write-size "$SLOW_WRITE" \
		--count 1 --seed "$2" --timeout 600)
	if [ "$_r" != ready ]; then
		echo "0 no_host_server"
		return
	fi
	_c=$3
	[ "$_c" = direct ] && _c=vsock:2:$port
	if [ "$1" = default ]; then
		sed -i "s/^connect = .*/connect = VSOCK-CONNECT:2:$port/" "$D/slow.conf"
		vsockmapctl -s "$D/slow.ctl" reload >/dev/null 2>&1
	fi
	vsm-peer client "$_c" --send 0 --expect "$SLOW_SIZE" --read-size 4096 --slow 2000 \
		--seed "$2" --timeout 600 >"$D/slow-$1-$2.client" 2>&1
	host_wait "slow-$1-$2" "$D" >/dev/null
	_bytes=$(sed -n 's/^client total conns=[0-9]* sent=[0-9]* recv=\([0-9]*\).*/\1/p' "$D/slow-$1-$2.client")
	_end=$(grep -m1 -o 'vsm-peer: .*' "$D/slow-$1-$2.client" | cut -c1-80 | tr ' ' '_')
	echo "${_bytes:-0} ${_end:-EOF}"
}

vmtest_log "small-writes virtio: $SMALL_COUNT connections, $SMALL_SHARE% small writers, seed $SMALL_SEED, kernel $(uname -r)"
row direct
row default auto
[ "$SMALL_KERNEL_ROW" = 1 ] && row kernel kernel
failed_ids direct >"$D/direct.ids"
failed_ids default >"$D/default.ids"
ours=$(grep -vxF -f "$D/direct.ids" "$D/default.ids" | tr '\n' ' ')
if [ -z "$(field default client conns)" ] || [ -z "$(field direct client conns)" ]; then
	vmtest_fail virtio-small-writes-default "a row did not finish: direct $(tail -n 1 "$D/direct.client"), default $(tail -n 1 "$D/default.client")"
elif [ -s "$D/default.ids" ]; then
	vmtest_fail virtio-small-writes-default "the default failed $(wc -l <"$D/default.ids") of $SMALL_COUNT${ours:+ (lost by it alone: $ours)} | $(cat "$D/default.client" "$D/default.server" | grep -m3 '^conn ' | tr '\n' ' ') | $(grep -m2 -i 'fail\|lost' "$D/default.log" | tr '\n' ' ')"
else
	vmtest_pass virtio-small-writes-default "$(field default client small) small writers of $SMALL_COUNT: the default failed none; the direct control failed $(wc -l <"$D/direct.ids") ($(field direct client enobufs) ENOBUFS at its guest ends)"
fi

# The slow reader: the default must deliver at least what the direct control delivers.
# Its target is set for each run (slow_run), on a port of its own.
small_daemon slow auto VSOCK-CONNECT:2:1
slow_daemon=$small_pid
slow_reader_test virtio-small-writes-slow-reader "small-writes virtio" direct "$D/slow.log"
kill "$slow_daemon"
wait "$slow_daemon"
