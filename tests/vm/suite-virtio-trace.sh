# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-virtio-trace.sh - an investigation aid, run by hand (not in make check): why the
# kernel path is stall-bound over virtio-vsock (issue 31; docs/kernel-notes.md, "The kernel
# path over virtio-vsock"). One upload guest unix client -> vsockmapd (datapath=kernel) ->
# VSOCK-CONNECT:2:P -> a host unix sink, with kprobes on the psock backlog worker and the
# workqueue, and the vsock tracepoints of this connection's packets, in the ftrace ring
# buffer; the trace is summed up in the VM (the "vt:" lines) and also sent to the console,
# gzipped and base64-encoded between "TRACE-BEGIN" and "TRACE-END". Then one download on the
# same section (the host sends, the guest's unix client only reads: the daemon carries that
# direction in user space); an untraced upload comes first and last.
#
#	tests/vm/run.sh tests/vm/suite-virtio-trace.sh --virtio --name trace
#	VSOCKMAP_VIRTIO_TX_BUFFER_SIZE=16384 tests/vm/run.sh tests/vm/suite-virtio-trace.sh --virtio --name trace
#	VSOCKMAP_VM_SERIES=newest tests/vm/run.sh tests/vm/suite-virtio-trace.sh --virtio --name trace
#
# VT_UP (bytes, default 8 MiB) sizes the traced upload, VT_UP_PLAIN (32 MiB) the untraced ones
# (one before the tracing starts, one at the end), VT_DOWN (32 MiB) the download
# (a file --file ENV:/usr/lib/vmtest/vt.env may set them).

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"
# shellcheck source=tests/vm/virtio-guest.sh
. /usr/lib/vmtest/virtio.sh
VT_UP=8388608 VT_UP_PLAIN=33554432 VT_DOWN=33554432 VT_BUF_KB=32768
# shellcheck disable=SC1091
[ -f /usr/lib/vmtest/vt.env ] && . /usr/lib/vmtest/vt.env

D=$VMTEST_TMP/vt
T=/sys/kernel/tracing
PORT=5700
mkdir -p "$D"
cat >"$D/vsockmap.conf" <<CONF
[daemon]
control = $D/control.sock
connect-timeout = 5
datapath = kernel

[up]
listen  = UNIX-LISTEN:$D/up.sock
connect = VSOCK-CONNECT:2:$PORT
CONF

vt() { vmtest_log "vt: $*"; }

probe() { # probe LINE: add one dynamic event and enable it, or say why not
	if echo "$1" >>$T/dynamic_events 2>"$D/probe.err"; then
		_e=$(echo "$1" | sed 's/^[pr]:\([^ ]*\) .*/\1/')
		echo 1 >"$T/events/$_e/enable"
	else
		vt "probe FAILED: $1: $(cat "$D/probe.err")"
	fi
}

tp() { # tp EVENT FILTER: enable a tracepoint with a filter
	if [ -d "$T/events/$1" ]; then
		echo "$2" >"$T/events/$1/filter" && echo 1 >"$T/events/$1/enable"
	else
		vt "no tracepoint $1"
	fi
}

trace_setup() {
	echo 0 >$T/tracing_on
	echo >$T/trace
	echo "$VT_BUF_KB" >$T/buffer_size_kb
	# the backlog worker: each run; each skb_send_sock() and what it returned
	probe 'p:vt/bl sk_psock_backlog work=%di'
	# shellcheck disable=SC2016 # $retval is ftrace's, not the shell's
	probe 'r:vt/ssr skb_send_sock ret=$retval:s32'
	# every queueing of a delayed work with its delay (the backlog's own retry has delay=1),
	# and whether it was queued (0: the work was already pending, nothing happened)
	probe 'p:vt/qdw queue_delayed_work_on dwork=%dx delay=%cx:u64'
	# shellcheck disable=SC2016
	probe 'r:vt/qdwr queue_delayed_work_on ret=$retval:u8'
	# who hears that the vsock socket has room again
	probe 'p:vt/pws sk_psock_write_space sk=%di'
	probe 'p:vt/dws sock_def_write_space sk=%di'
	# this connection's packets: ours to the host's port, the host's to us
	tp vsock/virtio_transport_alloc_pkt "dst_port == $PORT"
	tp vsock/virtio_transport_recv_pkt "src_port == $PORT"
}

# summarise FILE: the vt: lines from one trace
summarise() {
	awk -v out="$D/vals" '
	function ts(   i) { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) return substr($i, 1, length($i) - 1) + 0; return -1 }
	function kv(k,   i) { for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
	/^#/ { next }
	{ t = ts() }
	# a send belongs to the run its task started last (a worker can sleep in lock_sock(),
	# and another psock'"'"'s run come in between)
	/ bl: / { w = kv("work"); runs[w]++; curw[$1] = w;
		if (last_bl[w] != "") print "blgap", (t - last_bl[w]) * 1000 > out; last_bl[w] = t
		if (eagain_t[w] != "") { print "eagain_to_run", (t - eagain_t[w]) * 1000 > out; eagain_t[w] = "" }
		if (credit_t != "") { print "credit_to_run", (t - credit_t) * 1000 > out; credit_t = "" }
		if (first == "") first = t; next }
	/ ssr: / { r = kv("ret"); cur = curw[$1];
		if (r + 0 > 0) { bytes[cur] += r; sends[cur]++; if (!sent_t[cur]) sent_t[cur] = 1; lastsend = t
			print "send_bytes", r > out }
		else if (r + 0 == -11) { if (!eagains[cur]) first_eagain[cur] = t; eagains[cur]++; eagain_t[cur] = t; waiting = 1; eagain_any = t }
		else other[r]++
		next }
	/ qdw: / { d = kv("delay"); qd_delay = d; qd_dwork = kv("dwork"); next }
	/ qdwr: / { r = kv("ret"); key = qd_dwork " " qd_delay " " r; qdw[key]++; next }
	/ pws: / { pws++; next }
	/ dws: / { dws++; next }
	/ virtio_transport_alloc_pkt: / { op = kv("op"); l = kv("len"); pk[op]++; if (op == "RW") { txb += l; pkrw[l]++ } next }
	/ virtio_transport_recv_pkt: / { op = kv("op"); rx[op]++; ba = kv("buf_alloc");
		if (waiting) { print "eagain_to_credit", (t - eagain_any) * 1000 > out; waiting = 0; credit_t = t }
		next }
	END {
		for (w in runs) if (bytes[w] > 0) {
			printf "worker %s: %d runs, %d sends, %d EAGAIN, %d bytes; first run to last send %.3f s; first EAGAIN at %s\n", w, runs[w], sends[w], eagains[w], bytes[w], lastsend - first, eagains[w] ? sprintf("%.3f s", first_eagain[w] - first) : "-"
		}
		for (k in qdw) { split(k, a, " "); printf "queue_delayed_work_on dwork=%s delay=%s ret=%s: %d\n", a[1], a[2], a[3], qdw[k] }
		printf "sk_psock_write_space calls: %d; sock_def_write_space calls: %d\n", pws, dws
		s = ""; for (o in pk) s = s " " o "=" pk[o]; print "packets sent to the host:" s ", RW bytes " txb
		s = ""; for (l in pkrw) s = s " " l "x" pkrw[l]; print "RW packet sizes (len x count):" s
		s = ""; for (o in rx) s = s " " o "=" rx[o]; print "packets from the host:" s ", buf_alloc " ba
		for (r in other) printf "skb_send_sock other returns %s: %d\n", r, other[r]
	}
	' "$1" | while read -r l; do vt "$l"; done
	for k in blgap send_bytes eagain_to_credit credit_to_run eagain_to_run; do
		grep "^$k " "$D/vals" | awk '{print $2}' | sort -n >"$D/v.$k"
		_n=$(wc -l <"$D/v.$k")
		[ "$_n" -gt 0 ] || continue
		awk -v n="$_n" -v k="$k" '
			{ v[NR] = $1; s += $1 }
			END { printf "%s: n=%d min %.3f p10 %.3f median %.3f p90 %.3f max %.3f mean %.3f\n", k, n,
				v[1], v[int(n * 0.1) + 1], v[int(n / 2) + 1], v[int(n * 0.9) + 1], v[n], s / n }' "$D/v.$k" |
			while read -r l; do vt "$l"; done
	done
	rm -f "$D/vals"
}

upload() { # NAME [SIZE]: one upload of SIZE (default VT_UP) bytes; its MB/s
	_n=$1
	_sz=${2:-$VT_UP}
	host_req server "$_n" "$PORT" --sink --count 1 --expect "$_sz" --timeout 240 >"$D/$_n.req"
	_t0=$(now_ms)
	vsm-peer client "unix:$D/up.sock" --send "$_sz" --timeout 240 >"$D/$_n.client" 2>&1
	_crc=$?
	host_wait "$_n" "$D" >"$D/$_n.server"
	_src=$?
	_ms=$(($(now_ms) - _t0))
	if [ $_crc -eq 0 ] && [ $_src -eq 0 ]; then
		vmtest_pass "$_n" "$_sz B in $_ms ms, $(mb_per_s "$_sz" "$_ms") MB/s | $(grep '^server total' "$D/$_n.server")"
	else
		vmtest_fail "$_n" "client rc=$_crc server rc=$_src | $(tail -n 2 "$D/$_n.client" | tr '\n' ' ') | $(tail -n 2 "$D/$_n.server" | tr '\n' ' ') $(cat "$D/$_n.req")"
	fi
}

download() { # NAME: the host sends VT_DOWN bytes, the guest's client only reads
	_n=$1
	host_req server "$_n" "$PORT" --source "$VT_DOWN" --count 1 --timeout 240 >"$D/$_n.req"
	_t0=$(now_ms)
	vsm-peer client "unix:$D/up.sock" --send 0 --expect "$VT_DOWN" --timeout 240 >"$D/$_n.client" 2>&1
	_crc=$?
	_ms=$(($(now_ms) - _t0))
	host_wait "$_n" "$D" >"$D/$_n.server"
	_src=$?
	if [ $_crc -eq 0 ] && [ $_src -eq 0 ]; then
		vmtest_pass "$_n" "$VT_DOWN B in $_ms ms, $(mb_per_s "$VT_DOWN" "$_ms") MB/s"
	else
		vmtest_fail "$_n" "client rc=$_crc server rc=$_src | $(tail -n 2 "$D/$_n.client" | tr '\n' ' ') | $(tail -n 2 "$D/$_n.server" | tr '\n' ' ') $(cat "$D/$_n.req")"
	fi
}

# HZ, counted: jiffies and the clock from /proc/timer_list, a second apart
jiffies_now() { awk '/^now at/ { ns = $3 } /^jiffies:/ { print $2, ns; exit }' /proc/timer_list; }
_j1=$(jiffies_now)
sleep 1
_j2=$(jiffies_now)
vt "kernel $(uname -r), HZ counted: $(echo "$_j1 $_j2" | awk '{ if ($4 > $2) printf "%.1f", ($3 - $1) * 1e9 / ($4 - $2); else print "?" }') (jiffies $_j1 -> $_j2)"

trace_setup
vsockmapd -c "$D/vsockmap.conf" 2>"$D/daemon.log" &
daemon=$!
if ! wait_for_socket "$D/control.sock" 20; then
	vmtest_fail vt-start "vsockmapd did not come up: $(tail -n 3 "$D/daemon.log")"
	exit 0
fi

# ship_trace FILE MARK: the trace buffer into FILE, summarised in the log, then FILE gzipped
# and in base64 on the console between "MARK-BEGIN SIZE" and "MARK-END", for the host to keep.
ship_trace() {
	cat $T/trace >"$1"
	summarise "$1"
	gzip -9 <"$1" | base64 >"$D/trace.b64"
	vt "$2-BEGIN $(wc -c <"$D/trace.b64")"
	cat "$D/trace.b64" >"$VMTEST_CONSOLE"
	vt "$2-END"
}

# first: the worker's runs and sends only (two kprobes), then everything
if [ "${VT_LIGHT:-1}" = 1 ]; then
	echo 0 >$T/events/enable
	echo 1 >$T/events/vt/bl/enable
	echo 1 >$T/events/vt/ssr/enable
	echo 1 >$T/tracing_on
	upload up-light "$VT_UP_PLAIN"
	echo 0 >$T/tracing_on
	vt "light trace of up-light:"
	ship_trace "$D/trace.light" TRACE-LIGHT
	echo >$T/trace
fi
echo 0 >$T/events/enable
upload up-untraced-first "$VT_UP_PLAIN"
echo 1 >$T/events/vt/enable
echo 1 >$T/events/vsock/virtio_transport_alloc_pkt/enable
echo 1 >$T/events/vsock/virtio_transport_recv_pkt/enable
echo 1 >$T/tracing_on
upload up-traced
echo 0 >$T/tracing_on
vt "trace: $(grep -vc '^#' $T/trace) events, $(grep -c 'LOST' $T/trace) lost-event marks"
ship_trace "$D/trace" TRACE

echo >$T/trace
echo 1 >$T/tracing_on
download down-traced
echo 0 >$T/tracing_on
vt "download: packets from the host: $(grep -c 'virtio_transport_recv_pkt:.*op=RW' $T/trace), lengths $(grep 'virtio_transport_recv_pkt:.*op=RW' $T/trace | sed 's/.* len=\([0-9]*\) .*/\1/' | sort -n | uniq -c | sort -rn | head -n 3 | tr -s ' \n' ' '); CREDIT_UPDATE to the host: $(grep -c 'virtio_transport_alloc_pkt:.*op=CREDIT_UPDATE' $T/trace); backlog runs: $(grep -c ' bl: ' $T/trace)"

echo 0 >$T/events/vt/enable
echo 0 >$T/events/vsock/enable 2>/dev/null
upload up-untraced-last "$VT_UP_PLAIN"
grep -i 'backlog wake\|datapath' "$D/daemon.log" | head -n 3 | while read -r l; do vt "daemon: $l"; done
kill "$daemon" 2>/dev/null
wait "$daemon" 2>/dev/null
exit 0
