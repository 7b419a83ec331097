# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-stall.sh - an investigation aid, run by hand (not in make check): the soak of
# suite-soak.sh, repeated with new seeds until the daemon logs "did not drain", with the
# vsock tracepoints and a few kprobes on the psock backlog recorded in the ftrace ring
# buffer. On the first "did not drain" tracing stops and the last STALL_WINDOW seconds of
# the trace go to the console, gzipped and base64-encoded between "TRACE-BEGIN" and
# "TRACE-END" lines (docs/kernel-notes.md, "A slow reader behind a full backlog").
#
#	tests/vm/run.sh tests/vm/suite-stall.sh --file ENV:/usr/lib/vmtest/soak.env

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"
SOAK_COUNT=5000 SOAK_LIVE=100 SOAK_MAX_SIZE=1048576 SOAK_SEED=27917568
STALL_ROUNDS=4 STALL_TRACE=1 STALL_WINDOW=14 STALL_BUF_KB=49152 STALL_ONLY=
# shellcheck disable=SC1091
[ -f /usr/lib/vmtest/soak.env ] && . /usr/lib/vmtest/soak.env

D=$VMTEST_TMP/soak
T=/sys/kernel/tracing
mkdir -p "$D"
cat >"$D/vsockmap.conf" <<CONF
[daemon]
control = $D/control.sock
log-level = info
# The kernel path, asked for: auto runs vsock sections in user space on a kernel without
# kernel/ patch 1 (docs/datapath.md).
datapath = kernel
idle-timeout = 5

[soak]
listen  = UNIX-LISTEN:$D/soak.sock,backlog=1024
connect = VSOCK-CONNECT:1:7000
CONF

ulimit -n 16384
vsmlog() { vmtest_log "$*"; }

probe() { # probe GROUP-LINE: add one dynamic event, say whether it took
	if echo "$1" >>$T/dynamic_events 2>"$D/probe.err"; then
		vsmlog "probe ok: $1"
	else
		vsmlog "probe FAILED: $1: $(cat "$D/probe.err")"
	fi
}

if [ "$STALL_TRACE" = 1 ]; then
	echo 0 >$T/tracing_on
	echo >$T/trace
	echo "$STALL_BUF_KB" >$T/buffer_size_kb
	grep -i 'btf\|->' $T/README | head -n 5 | while read -r l; do vsmlog "README: $l"; done
	# the backlog worker: each run, and each skb_send_sock() with its result
	probe 'p:st/bl sk_psock_backlog work=%di'
	probe 'p:st/ss skb_send_sock sk=%di off=%dx len=%cx'
	probe 'r:st/ssr skb_send_sock ret=$retval'
	probe 'r:st/bl_ret sk_psock_backlog'
	# vsock's side: the enqueue (sk -> port through the alloc_pkt that follows) and has_space
	probe 'p:st/enq virtio_transport_stream_enqueue vsk=%di len=%dx'
	probe 'r:st/enqr virtio_transport_stream_enqueue ret=$retval'
	probe 'p:st/wspace sk_psock_write_space sk=%di'
	probe 'r:st/vsend vsock_connectible_sendmsg ret=$retval'
	probe 'p:st/drop sk_psock_drop sk=%di psock=%si'
	probe 'p:st/redir sk_psock_skb_redirect from=%di skb=%si'
	for e in st/bl st/ss st/ssr st/bl_ret st/enq st/enqr st/wspace st/vsend st/drop; do
		[ -d $T/events/$e ] && echo 1 >$T/events/$e/enable
	done
	echo 1 >$T/events/vsock/virtio_transport_alloc_pkt/enable 2>/dev/null || vsmlog "no alloc_pkt tracepoint"
	echo 1 >$T/events/vsock/virtio_transport_recv_pkt/enable 2>/dev/null || vsmlog "no recv_pkt tracepoint"
	echo 1 >$T/tracing_on
fi

vsockmapd -c "$D/vsockmap.conf" 2>"$D/daemon.log" &
daemon=$!
if ! wait_for_socket "$D/control.sock" 20; then
	vmtest_fail stall-start "vsockmapd did not come up: $(tail -n 3 "$D/daemon.log")"
	exit 0
fi

dump_trace() {
	echo 0 >$T/tracing_on
	_now=$(awk '{print $1}' /proc/uptime)
	vsmlog "trace stopped at uptime $_now; $(grep -c . $T/trace 2>/dev/null) lines"
	cat $T/trace | awk -v now="$_now" -v w="$STALL_WINDOW" '
		/^#/ { next }
		{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { t = substr($i, 1, length($i) - 1); break } }
		t + 0 >= now - w { print }' >"$D/trace.win"
	vsmlog "window: $(wc -l <"$D/trace.win") lines"
	grep -i 'did not drain\|error\|fail' "$D/daemon.log" | head -n 20 | while read -r l; do vsmlog "daemon: $l"; done
	gzip -9 <"$D/trace.win" | base64 >"$D/trace.b64"
	vsmlog "TRACE-BEGIN $(wc -c <"$D/trace.b64")"
	cat "$D/trace.b64" >"$VMTEST_CONSOLE"
	vsmlog "TRACE-END"
	gzip -9 <"$D/daemon.log" | base64 >"$D/daemon.b64"
	vsmlog "DAEMONLOG-BEGIN $(wc -c <"$D/daemon.b64")"
	cat "$D/daemon.b64" >"$VMTEST_CONSOLE"
	vsmlog "DAEMONLOG-END"
}

round=0
seed=$SOAK_SEED
found=0
while [ $round -lt "$STALL_ROUNDS" ] && [ $found -eq 0 ]; do
	round=$((round + 1))
	vsmlog "round $round: seed $seed, $SOAK_COUNT connections, $SOAK_LIVE live, up to $SOAK_MAX_SIZE B ${STALL_ONLY:+only $STALL_ONLY}"
	# shellcheck disable=SC2086
	vsm-soak --connect "unix:$D/soak.sock" --listen vsock:any:7000 --count "$SOAK_COUNT" \
		--live "$SOAK_LIVE" --max-size "$SOAK_MAX_SIZE" --seed "$seed" \
		--end-bound-ms 10000 ${STALL_ONLY:+--only $STALL_ONLY} \
		--hup-pid "$daemon" --ctl "$D/control.sock" --idle-ms 5000 >"$D/soak.$round.out" 2>&1 &
	soak=$!
	while kill -0 $soak 2>/dev/null; do
		if [ $found -eq 0 ] && grep -q 'did not drain' "$D/daemon.log"; then
			found=1
			[ "$STALL_TRACE" = 1 ] && dump_trace
		fi
		sleep 0.5
	done
	wait $soak
	rc=$?
	grep '^conn ' "$D/soak.$round.out" | head -n 20 | while read -r l; do vsmlog "  $l"; done
	vsmlog "  $(grep '^soak ' "$D/soak.$round.out")"
	if [ $found -eq 0 ] && grep -q 'did not drain' "$D/daemon.log"; then
		found=1
		[ "$STALL_TRACE" = 1 ] && dump_trace
	fi
	if [ $rc -eq 0 ] && [ $found -eq 0 ]; then
		vmtest_pass "stall-round-$round" "seed $seed: $(grep '^soak ' "$D/soak.$round.out" | cut -c1-60)"
	else
		vmtest_fail "stall-round-$round" "seed $seed rc=$rc drained-late=$found"
	fi
	seed=$((seed + 1))
done
grep -i 'did not drain\|never became' "$D/daemon.log" | head -n 20 | while read -r l; do vsmlog "daemon: $l"; done
vsmlog "daemon log: $(grep -c 'did not drain' "$D/daemon.log") 'did not drain' lines"
dmesg | grep -i -A4 'warn\|bug\|rx_queue' | head -n 20 | while read -r l; do vsmlog "dmesg: $l"; done
kill "$daemon" 2>/dev/null
wait "$daemon" 2>/dev/null
exit 0
