# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# suite-demo.sh - `make demo`: vsockmapd with the shipped config/vsockmap.conf, a vsock echo
# service and a log sink on CID 1, a few clients through the unix sockets, then
# `vsockmapctl list` and one throughput comparison with socat. Lines for the reader start
# with "DEMO|"; tests/vm/demo.sh prints them.

. "${VMTEST_LIB:-/usr/lib/vmtest/lib.sh}"

D=$VMTEST_TMP/demo
mkdir -p "$D" /etc/vsockmap
cp /usr/lib/vmtest/vsockmap.conf /etc/vsockmap/vsockmap.conf

say() {
	printf 'DEMO| %s\n' "$*" >"$VMTEST_CONSOLE"
}

# The host side of the example config: an echo service and a log sink, on vsock.
socat VSOCK-LISTEN:5000,fork EXEC:cat 2>"$D/echo.err" &
socat -u VSOCK-LISTEN:5001,fork OPEN:"$D/logs.txt",creat,append 2>"$D/logs.err" &
sleep 0.3

vsockmapd -c /etc/vsockmap/vsockmap.conf 2>"$D/daemon.log" &
DAEMON=$!
if ! wait_for_socket /run/vsockmap/control.sock 10; then
	vmtest_fail demo-daemon "vsockmapd did not start: $(tail -n 3 "$D/daemon.log")"
	exit 1
fi
say "vsockmapd is running with /etc/vsockmap/vsockmap.conf (the shipped example):"
grep -v '^[#;]' /etc/vsockmap/vsockmap.conf | grep . | while read -r l; do say "    $l"; done

# Three echo clients that stay connected for a few seconds, and a few log lines.
for i in 1 2 3; do
	head -c $((i * 1048576)) /dev/urandom >"$D/in$i"
	(cat "$D/in$i"; sleep 4) | socat -t 5 - UNIX-CONNECT:/run/vsockmap/echo.sock >"$D/out$i" &
done
for i in 1 2 3 4 5; do
	echo "<14>demo: log line $i" | socat -u - UNIX-SENDTO:/run/vsockmap/logs.sock
done
sleep 2
say ""
say "\$ vsockmapctl list"
vsockmapctl list | while IFS= read -r l; do say "$l"; done
say ""
say "\$ vsockmapctl list -j"
vsockmapctl list -j | while IFS= read -r l; do say "$l"; done
wait_clients=0
for i in 1 2 3; do
	while ! [ -s "$D/out$i" ] || [ "$(wc -c <"$D/out$i")" -lt $((i * 1048576)) ]; do
		wait_clients=$((wait_clients + 1))
		[ $wait_clients -lt 100 ] || break
		sleep 0.1
	done
done
sleep 3
ok=0
for i in 1 2 3; do
	cmp -s "$D/in$i" "$D/out$i" && ok=$((ok + 1))
done
say ""
say "echo clients whose bytes came back intact: $ok of 3; log lines at the sink: $(grep -c 'demo: log line' "$D/logs.txt")"
if [ $ok -eq 3 ]; then
	vmtest_pass demo-echo "3 echo clients, bytes intact"
else
	vmtest_fail demo-echo "only $ok of 3 echo clients got their bytes back"
fi

# One throughput comparison, same boot: 64 MiB UDS -> vsock through vsockmapd and socat.
cat >"$D/bench.conf" <<CONF
[daemon]
control = $D/bench-control.sock
[sink]
listen  = UNIX-LISTEN:$D/via-vsockmapd.sock
connect = VSOCK-CONNECT:1:5100
CONF
vsockmapd -c "$D/bench.conf" 2>"$D/bench-daemon.log" &
BENCH=$!
socat -b 65536 UNIX-LISTEN:"$D/via-socat.sock",fork VSOCK-CONNECT:1:5100 2>"$D/socat.err" &
SOCAT=$!
wait_for_socket "$D/via-vsockmapd.sock" 10
wait_for_socket "$D/via-socat.sock" 10
measure() { # ADDR: MB/s of 64 MiB from a unix client to a vsock sink, verified
	rm -f "$D/ready"
	vsm-peer server vsock:any:5100 --sink --count 1 --expect 64M --ready-file "$D/ready" \
		>"$D/sink.out" 2>&1 &
	wait_for_file "$D/ready" 10
	vsm-peer client "unix:$1" --send 64M >"$D/client.out" 2>&1
	wait $!
	sed -n 's/^client total.*MBps=\([0-9.]*\).*/\1/p' "$D/client.out"
}
k1=$(measure "$D/via-vsockmapd.sock")
s1=$(measure "$D/via-socat.sock")
k2=$(measure "$D/via-vsockmapd.sock")
s2=$(measure "$D/via-socat.sock")
say ""
say "64 MiB UDS -> vsock, same boot, two runs each: vsockmapd $k1 / $k2 MB/s, socat -b 65536 $s1 / $s2 MB/s"
# The default (datapath=auto) chooses per kernel: say which path it took here, and why.
say "the default, datapath=auto, for [sink] on $(uname -r): $(sed -n 's/.*\[sink\] listening on [^;]*; //p' "$D/bench-daemon.log")"
if [ -n "$k1" ] && [ -n "$s1" ]; then
	vmtest_pass demo-throughput "vsockmapd $k1/$k2 MB/s, socat -b 65536 $s1/$s2 MB/s"
else
	vmtest_fail demo-throughput "a transfer failed: $(tail -n 1 "$D/client.out")"
fi
kill $SOCAT $BENCH $DAEMON 2>/dev/null
wait $DAEMON 2>/dev/null
