# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-virtio-soak-trace.sh - an investigation aid, run by hand (not in make check): the
# virtio soak (suite-virtio-soak.sh, shipped beside it) traced, for an upload lost on
# datapath=kernel (issue 31; docs/kernel-notes.md, "The kernel path over virtio-vsock: an
# upload that stops, and where its EPIPE comes from").
#
#	tests/vm/run.sh tests/vm/suite-virtio-soak-trace.sh --virtio --name vst \
#		--file tests/vm/suite-virtio-soak.sh:/usr/lib/vmtest/vsoak.sh \
#		--file ENV:/usr/lib/vmtest/soak.env
#
# ENV holds the soak's variables (SOAK_DATAPATHS=kernel, SOAK_SEED, ...) and VST_ALL=1 for the
# data and credit packets too. Traced: every vsock packet that is not data or credit (REQUEST,
# RESPONSE, RST, SHUTDOWN, and the backend's op 0) both ways, with the socket that sent it
# (virtio_transport_send_pkt_info); every skb_send_sock() and backlog
# vsock_connectible_sendmsg() that returned neither bytes nor EAGAIN; sock_def_error_report()
# on vsock sockets (the backlog's sk_psock_report_error()). When a send failed, the soak
# failed or a drain gave up: the "vst:" lines name the failed sends and the sockets whose
# upload stalled, and the control packets of every connection with every packet of those
# sockets, then the daemon's log, go to the console gzipped and base64-encoded between
# "VST-TRACE-BEGIN"/"-END" and "VST-DAEMON-BEGIN"/"-END". On the host:
#	awk '/VST-TRACE-BEGIN/ { f = 1; next } /VST-TRACE-END/ { f = 0 } f' .output/vm/vst.log |
#		grep -av '^vmtest' | tr -d '\r' | base64 -d | gunzip

# shellcheck source=tests/lib/harness.sh
. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"

T=/sys/kernel/tracing
TD=$VMTEST_TMP/vst
mkdir -p "$TD"

vst() { vmtest_log "vst: $*"; }
# VST_ALL (below) may come in the soak's own file, read again by the soak
# shellcheck disable=SC1091
[ -f /usr/lib/vmtest/soak.env ] && . /usr/lib/vmtest/soak.env

vst_probe() { # LINE [FILTER]: add one dynamic event, filter and enable it
	if echo "$1" >>$T/dynamic_events 2>"$TD/probe.err"; then
		_e=$(echo "$1" | sed 's/^[pr]:\([^ ]*\) .*/\1/')
		[ -z "$2" ] || echo "$2" >"$T/events/$_e/filter"
		echo 1 >"$T/events/$_e/enable"
	else
		vst "probe FAILED: $1: $(cat "$TD/probe.err")"
	fi
}

vst_tp() { # EVENT FILTER: a tracepoint with a filter
	if [ -d "$T/events/$1" ]; then
		echo "$2" >"$T/events/$1/filter" && echo 1 >"$T/events/$1/enable"
	else
		vst "no tracepoint $1"
	fi
}

# ops: 1 REQUEST, 2 RESPONSE, 3 RST, 4 SHUTDOWN, 5 RW, 6 CREDIT_UPDATE, 7 CREDIT_REQUEST
echo 0 >$T/tracing_on
echo >$T/trace
echo 65536 >$T/buffer_size_kb
# struct virtio_vsock_pkt_info: op at 30 (remote_cid, remote_port, vsk, msg, pkt_len, type)
vst_probe 'p:vst/spi virtio_transport_send_pkt_info vsk=%di op=+30(%si):u16 flags=+32(%si):u32 len=+24(%si):u32' 'op < 5'
# shellcheck disable=SC2016 # $retval is ftrace's
vst_probe 'r:vst/ssr skb_send_sock ret=$retval:s32' 'ret < 1 && ret != -11'
# shellcheck disable=SC2016
vst_probe 'r:vst/vsr vsock_connectible_sendmsg ret=$retval:s32' 'ret < 1 && ret != -11 && comm != "vsockmapd"'
vst_probe 'p:vst/err sock_def_error_report sk=%di fam=+16(%di):u16' 'fam == 40'
vst_tp vsock/virtio_transport_alloc_pkt 'op < 5'
vst_tp vsock/virtio_transport_recv_pkt 'op < 5'
# VST_ALL=1: the data and credit packets too, in an instance of their own (about 25 MB of
# ring buffer a soak), read only when something failed: formatting it takes minutes here
R=$T/instances/vstrw
if [ "${VST_ALL:-0}" = 1 ] && mkdir $R 2>/dev/null; then
	echo 0 >$R/tracing_on
	echo 65536 >$R/buffer_size_kb
	for e in alloc recv; do
		echo 'op >= 5' >$R/events/vsock/virtio_transport_${e}_pkt/filter
		echo 1 >$R/events/vsock/virtio_transport_${e}_pkt/enable
	done
	echo 1 >$R/tracing_on
fi
echo 1 >$T/tracing_on

# shellcheck source=tests/vm/suite-virtio-soak.sh
. /usr/lib/vmtest/vsoak.sh

echo 0 >$T/tracing_on
[ ! -d $R ] || echo 0 >$R/tracing_on
cat $T/trace >"$TD/trace"
_fails=$(grep -c ' ssr: \| vsr: \| err: ' "$TD/trace")
vst "trace: $(grep -vc '^#' "$TD/trace") events, $_fails failed sends or error reports"
# Each failed send, and every traced packet of the socket whose error was reported.
grep ' ssr: \| vsr: \| err: ' "$TD/trace" | head -n 20 | while read -r l; do vst "$l"; done
for sk in $(sed -n 's/.* err: .*sk=\(0x[0-9a-f]*\).*/\1/p' "$TD/trace" | sort -u | head -n 5); do
	# its port: the packet allocated right after one of its spi lines
	_port=$(awk -v sk="$sk" '/ spi: / { want = (index($0, "vsk=" sk) > 0); next }
		want && /virtio_transport_alloc_pkt:/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+:[0-9]+$/) { port = $i; want = 0; break } } / err: / && index($0, "sk=" sk) { print port; exit }' "$TD/trace")
	vst "socket $sk: ${_port:-port not found}"
	[ -n "$_port" ] || continue
	_p=${_port##*:}
	grep -e "vsk=$sk" -e " [0-9]*:$_p -> " -e "-> [0-9]*:$_p " -e ' ssr: ' -e ' vsr: ' -e ' err: ' \
		"$TD/trace" | grep -v "^#" | head -n 40 | while read -r l; do vst "  $l"; done
done
if [ "$_fails" -gt 0 ] || grep -q '^soak .*\(failed\|lost\)=[1-9]' "$D"/soak-virtio-*.client \
	"$D"/soak-virtio-*.server 2>/dev/null || grep -q 'did not drain' "$D"/daemon-*.log; then
	# the control packets of every connection, and every packet of the sockets with errors
	_pat=' spi: \| ssr: \| vsr: \| err: \|op=REQUEST\|op=RESPONSE\|op=RST\|op=SHUTDOWN\|op=INVALID'
	_ports=
	for sk in $(sed -n 's/.* err: .*sk=\(0x[0-9a-f]*\).*/\1/p' "$TD/trace" | sort -u | head -n 5); do
		_p=$(awk -v sk="$sk" '/ spi: / { want = (index($0, "vsk=" sk) > 0); next }
			want && /virtio_transport_alloc_pkt:/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+:[0-9]+$/) { sub(/.*:/, "", $i); port = $i; want = 0; break } } / err: / && index($0, "sk=" sk) { print port; exit }' "$TD/trace")
		[ -z "$_p" ] || _ports="${_ports:+$_ports\\|}:$_p "
	done
	# and of the uploads that stalled: bytes sent that the host had not acknowledged, and no
	# data for 9 s or more before the guest's SHUTDOWN (a drain that gave up)
	if [ -d $R ]; then
		cat $R/trace >"$TD/rw"
		for _p in $(awk '/alloc_pkt:/ { split($6, a, ":"); p = a[2]; t = $4 + 0
				if (/op=RW/) { l = $0; sub(/.* len=/, "", l); sub(/ .*/, "", l); tx[p] += l; rw[p] = t }
				if (/op=SHUTDOWN/ && !(p in sd)) sd[p] = t }
			/recv_pkt:/ && !/op=RST/ && !/op=SHUTDOWN/ { split($8, a, ":"); f = $0; sub(/.* fwd_cnt=/, "", f); fw[a[2]] = f + 0 }
			END { for (p in sd) if ((p in rw) && tx[p] - fw[p] >= 4096 && sd[p] - rw[p] > 9) print p }' \
			"$TD/trace" "$TD/rw" | head -n 5); do
			vst "port $_p: its upload stalled"
			_ports="${_ports:+$_ports\\|}:$_p "
		done
	fi
	{
		grep "$_pat${_ports:+\\|$_ports}" "$TD/trace"
		# the data and credit packets of those sockets (none when no socket had an error)
		[ ! -d $R ] || [ -z "$_ports" ] || grep "$_ports" "$TD/rw"
	} | gzip -9 | base64 >"$TD/trace.b64"
	vst "VST-TRACE-BEGIN $(wc -c <"$TD/trace.b64")"
	cat "$TD/trace.b64" >"$VMTEST_CONSOLE"
	vst "VST-TRACE-END"
	cat "$D"/daemon-*.log | gzip -9 | base64 >"$TD/daemon.b64"
	vst "VST-DAEMON-BEGIN $(wc -c <"$TD/daemon.b64")"
	cat "$TD/daemon.b64" >"$VMTEST_CONSOLE"
	vst "VST-DAEMON-END"
fi
exit 0
