# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# A restart's hand-over, forged on the host: vsockmapd starts with fds named as a previous
# instance stores them in systemd's fd store, and tests/host/fdstore-forge.py plays systemd
# and both peers of each pair (socketpairs). The systemd tier runs real restarts
# (tests/systemd); these are the cases a real restart cannot be made to produce there.
#
#   handover-userspace-pair    a pair carried in user space is taken back: 64 KiB each way,
#                              then the client's half-close reaches the target
#   handover-section-gone      the same pair, its section no longer in the configuration: it
#                              runs to its end under a placeholder
#   handover-without-target    only the client's socket was stored: it reads EOF, and the
#                              log names the pair
#   handover-maps-not-reused   a pair that was in the maps, no maps stored: both ends read
#                              EOF, and the log names the pair
#   handover-unknown-version   a carrier message in a format version this build does not read:
#                              both ends read EOF, the log says which version, the daemon runs
#
# A pair carried in user space has slot 65536 (REDIRECT_SLOT_USERSPACE, VSOCKMAP_MAX_REDIRECTS).

# handover_case NAME NAMES EXPECTED_LINE LOG_LINE [fdstore-forge.py OPTIONS...]
handover_case() {
	local name=$1 names=$2 expect=$3 log_line=$4 dir out
	shift 4
	dir=$(mktemp -d "/tmp/vsockmap-$name.XXXXXX")
	printf '[daemon]\ncontrol = %s/ctl.sock\nlog-level = info\n\n[fwd]\nlisten = UNIX-LISTEN:%s/in.sock\nconnect = UNIX-CONNECT:%s/srv.sock\n' \
		"$dir" "$dir" "$dir" >"$dir/c.conf"
	out=$("$PYTHON" tests/host/fdstore-forge.py "$@" --names "$names" --ready "$dir/ctl.sock" \
		--log "$dir/daemon.log" -- vsockmapd -c "$dir/c.conf" 2>&1)
	if [[ $out == "$expect" ]] && grep -qF -- "$log_line" "$dir/daemon.log"; then
		vmtest_pass "$name" "$out; $log_line"
	else
		vmtest_fail "$name" "got \"$out\" (want \"$expect\" and \"$log_line\" in the log): $(grep -v libbpf "$dir/daemon.log" | tail -n 3 | tr '\n' ' ')"
	fi
	rm -rf "$dir"
}

host_handover_cases() {
	local us=65536
	handover_case handover-userspace-pair "vsm-pair.7.$us.0.c.fwd,vsm-pair.7.$us.0.t.fwd" \
		'pair up=OK down=OK target-eof=yes' 'took back 1 of 1 redirect from the previous instance'
	handover_case handover-section-gone "vsm-pair.7.$us.0.c.gone,vsm-pair.7.$us.0.t.gone" \
		'pair up=OK down=OK target-eof=yes' '[gone] redirect 7: closing on request'
	handover_case handover-without-target "vsm-pair.8.$us.0.c.fwd" 'client-eof=yes' \
		'[fwd] redirect 8 handed over without its target socket: closed'
	handover_case handover-maps-not-reused 'vsm-pair.9.5.0.c.fwd,vsm-pair.9.5.0.t.fwd' \
		'client-eof=yes target-eof=yes' \
		'[fwd] redirect 9 handed over with maps this build cannot use: closed' --closed
	handover_case handover-unknown-version "client,target" 'client-eof=yes target-eof=yes' \
		'restart: a redirect handed over in format version 9, which this build does not read (it reads 0 and 1): closed' \
		--closed --carrier-version 9
}
