# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# The user-space fallback chosen by itself: a daemon without the rights to load BPF runs
# every redirect in user space (datapath=auto) and says why, and refuses to start when the
# configuration demands the kernel (datapath=kernel). The forced mode runs the foundation
# scenarios (e2e_run_userspace in tests/e2e/scenarios.sh). Sourced by tests/host/run.sh
# after tests/lib/harness.sh and daemon-cases.sh (expect_refusal).

# fallback_unprivileged: nobody, with no capability at all, serves 8 MiB echoed.
fallback_unprivileged() {
	local dir as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
	dir=$(mktemp -d /tmp/vsockmap-fallback.XXXXXX)
	# nobody's own: a directory others may write is refused (docs/security.md).
	chown 65534:65534 "$dir"
	chmod 0755 "$dir"
	printf '[daemon]\ncontrol = %s/ctl.sock\n[echo]\nlisten = UNIX-LISTEN:%s/in.sock\nconnect = UNIX-CONNECT:%s/srv.sock\n' \
		"$dir" "$dir" "$dir" >"$dir/c.conf"
	"${as_nobody[@]}" vsm-peer server "unix:$dir/srv.sock" --echo --count 1 \
		--ready-file "$dir/srv.ready" --timeout 30 >"$dir/srv.log" 2>&1 &
	local srv=$! daemon rc crc status
	wait_for_file "$dir/srv.ready" 10
	"${as_nobody[@]}" vsockmapd -c "$dir/c.conf" 2>"$dir/daemon.log" &
	daemon=$!
	wait_for_socket "$dir/ctl.sock" 10
	"${as_nobody[@]}" vsm-peer client "unix:$dir/in.sock" --send 8M --after echo --timeout 30 \
		>"$dir/client.log" 2>&1
	crc=$?
	status=$("${as_nobody[@]}" vsockmapctl -s "$dir/ctl.sock" status 2>&1)
	wait "$srv"
	kill -TERM "$daemon"
	wait "$daemon"
	rc=$?
	if ((crc == 0 && rc == 0)) &&
		grep -q 'data path: user space, for every redirect: the BPF object did not load: Operation not permitted' "$dir/daemon.log" &&
		grep -q 'listening on .*; data path: user space (the BPF object did not load' "$dir/daemon.log" &&
		[[ $status == *"user space: the BPF object did not load"* ]]; then
		vmtest_pass fallback-unprivileged "8 MiB echoed by a daemon running as nobody; vsockmapctl status: $(grep -o 'data path: .*' <<<"$status" | tr -s ' ')"
	else
		vmtest_fail fallback-unprivileged "client rc=$crc daemon rc=$rc status='$status' | $(grep -i 'data path' "$dir/daemon.log" | head -n 2 | tr '\n' ' ')"
	fi
	rm -rf "$dir"
}

# fallback_kernel_required: datapath=kernel, and the same daemon without BPF refuses to run.
fallback_kernel_required() {
	local dir out rc
	dir=$(mktemp -d /tmp/vsockmap-fallback.XXXXXX)
	# nobody's own: a directory others may write is refused (docs/security.md).
	chown 65534:65534 "$dir"
	chmod 0755 "$dir"
	printf '[daemon]\ncontrol = %s/ctl.sock\ndatapath = kernel\n[echo]\nlisten = UNIX-LISTEN:%s/in.sock\nconnect = UNIX-CONNECT:%s/srv.sock\n' \
		"$dir" "$dir" "$dir" >"$dir/c.conf"
	out=$(timeout 10 setpriv --reuid=65534 --regid=65534 --clear-groups vsockmapd -c "$dir/c.conf" 2>&1)
	rc=$?
	if ((rc == 1)) && grep -q 'not started: Operation not permitted' <<<"$out" && [[ ! -e $dir/in.sock ]]; then
		vmtest_pass fallback-kernel-required "datapath=kernel without BPF rights: exit 1, $(grep -m1 'loading the BPF object' <<<"$out")"
	else
		vmtest_fail fallback-kernel-required "exit $rc: $out"
	fi
	rm -rf "$dir"
}

fallback_cases() {
	fallback_unprivileged
	fallback_kernel_required
	expect_refusal bad-datapath 'c.conf:3: datapath "user" is not one of auto, kernel, userspace' \
		"[daemon]
control = @DIR@/ctl.sock
datapath = user
[a]
listen = UNIX-LISTEN:@DIR@/a.sock
connect = UNIX-CONNECT:@DIR@/srv.sock"
	expect_refusal bad-fastpath 'c.conf:3: fastpath "fast" is not one of counted, permanent' \
		"[daemon]
control = @DIR@/ctl.sock
fastpath = fast
[a]
listen = UNIX-LISTEN:@DIR@/a.sock
connect = UNIX-CONNECT:@DIR@/srv.sock"
	expect_refusal fastpath-idle-timeout 'c.conf:4: idle-timeout needs the byte counters, which fastpath=permanent drops' \
		"[daemon]
control = @DIR@/ctl.sock
fastpath = permanent
idle-timeout = 30
[a]
listen = UNIX-LISTEN:@DIR@/a.sock
connect = UNIX-CONNECT:@DIR@/srv.sock"
}
