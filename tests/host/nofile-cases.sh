# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Descriptors for max-redirects: the daemon raises its soft RLIMIT_NOFILE at start to what
# max-redirects needs, within the hard limit (systemd's default soft limit of 1024 held about
# 500 redirects), and says so when the hard limit is too low. Sourced by tests/host/run.sh
# after tests/lib/harness.sh.

# nofile_dir DATAPATH MAX_REDIRECTS: a scratch directory (NF_DIR) with one [hold] section to
# an echo server on srv.sock.
nofile_dir() {
	NF_DIR=$(mktemp -d /tmp/vsockmap-nofile.XXXXXX)
	printf '[daemon]\ncontrol = %s/ctl.sock\ndatapath = %s\nmax-redirects = %s\n[hold]\nlisten = UNIX-LISTEN:%s/in.sock\nconnect = UNIX-CONNECT:%s/srv.sock\n' \
		"$NF_DIR" "$1" "$2" "$NF_DIR" "$NF_DIR" >"$NF_DIR/c.conf"
}

# nofile_soft PID: the soft "Max open files" of a process.
nofile_soft() { awk '/^Max open files/ {print $4}' "/proc/$1/limits"; }

# nofile_daemon SOFT:HARD: vsockmapd on NF_DIR/c.conf under that RLIMIT_NOFILE (NF_PID), its
# control socket up.
nofile_daemon() {
	prlimit "--nofile=$1" vsockmapd -c "$NF_DIR/c.conf" 2>"$NF_DIR/daemon.log" &
	NF_PID=$!
	wait_for_socket "$NF_DIR/ctl.sock" 10
}

# nofile_stop PID...: the daemon (and a server) go, and the directory.
nofile_stop() {
	kill -TERM "$@" 2>/dev/null
	wait "$@" 2>/dev/null
	rm -rf "$NF_DIR"
}

# nofile_hold NAME DATAPATH: under a soft limit of 256 (hard 8192), 300 redirects at once,
# each proven by a byte echoed through it, all still open when the holder lets go.
nofile_hold() {
	local name=$1 datapath=$2 pid srv hold soft rc held end
	nofile_dir "$datapath" 1000
	vsm-bench pingpong-server "unix:$NF_DIR/srv.sock" --ready-file "$NF_DIR/srv.ready" \
		>"$NF_DIR/srv.log" 2>&1 &
	srv=$!
	wait_for_file "$NF_DIR/srv.ready" 10
	nofile_daemon 256:8192
	pid=$NF_PID
	soft=$(nofile_soft "$pid")
	vsm-bench hold "unix:$NF_DIR/in.sock" --count 300 --ready-file "$NF_DIR/hold.ready" \
		--timeout 60 >"$NF_DIR/hold.log" 2>&1 &
	hold=$!
	wait_for_file "$NF_DIR/hold.ready" 60
	held=$(vsockmapctl -s "$NF_DIR/ctl.sock" --json list | grep -o '"id":' | wc -l)
	kill -TERM "$hold" 2>/dev/null
	wait "$hold"
	rc=$?
	end=$(grep -h '"role":"hold' "$NF_DIR/hold.log" | tr '\n' ' ')
	if ((rc == 0 && held == 300)) && kill -0 "$pid" 2>/dev/null &&
		grep -q '"established":300,"failures":0' "$NF_DIR/hold.log" &&
		grep -q '"alive":300' "$NF_DIR/hold.log"; then
		vmtest_pass "$name" "300 redirects held under nofile 256:8192 (soft now $soft), each echoed a byte; vsockmapctl list: $held; $(grep -o 'file descriptors: .*' "$NF_DIR/daemon.log" | head -n 1)"
	else
		vmtest_fail "$name" "hold rc=$rc, listed $held, soft $soft: $end| $(grep -v 'refused a connection' "$NF_DIR/daemon.log" | tail -n 2 | tr '\n' ' ') $(grep -m1 'refused a connection' "$NF_DIR/daemon.log")"
	fi
	nofile_stop "$pid" "$srv"
}

# nofile_hard_low: hard limit 256, max-redirects=1000: one warning names what is needed,
# the limit and how many redirects fit; the daemon serves anyway.
nofile_hard_low() {
	local pid line soft
	nofile_dir userspace 1000
	nofile_daemon 128:256
	pid=$NF_PID
	soft=$(nofile_soft "$pid")
	line=$(grep 'max-redirects=1000 needs [0-9]* file descriptors' "$NF_DIR/daemon.log")
	if [[ $(grep -c 'needs [0-9]* file descriptors' "$NF_DIR/daemon.log") == 1 && $soft == 256 ]] &&
		[[ $line =~ needs\ [0-9]+\ file\ descriptors,\ and\ the\ hard\ limit\ \(RLIMIT_NOFILE\)\ is\ 256:\ [0-9]+\ redirects\ fit ]] &&
		kill -0 "$pid" 2>/dev/null; then
		vmtest_pass nofile-hard-low "soft raised to the hard 256; ${line#*vsockmapd: }"
	else
		vmtest_fail nofile-hard-low "soft $soft; warning: '$line'; $(tail -n 2 "$NF_DIR/daemon.log" | tr '\n' ' ')"
	fi
	nofile_stop "$pid"
}

# nofile_reload: max-redirects=10 fits in a soft limit of 256, which stays; a reload to
# max-redirects=1000 raises it, as the start would have.
nofile_reload() {
	local pid before after out
	nofile_dir userspace 10
	nofile_daemon 256:8192
	pid=$NF_PID
	before=$(nofile_soft "$pid")
	sed -i 's/^max-redirects = 10$/max-redirects = 1000/' "$NF_DIR/c.conf"
	out=$(vsockmapctl -s "$NF_DIR/ctl.sock" reload 2>&1)
	after=$(nofile_soft "$pid")
	if [[ $before == 256 ]] && ((after >= 6000)) && kill -0 "$pid" 2>/dev/null; then
		vmtest_pass nofile-reload-raises "soft $before at max-redirects=10, $after after a reload to 1000"
	else
		vmtest_fail nofile-reload-raises "soft $before, then $after; reload: $out; $(tail -n 2 "$NF_DIR/daemon.log" | tr '\n' ' ')"
	fi
	nofile_stop "$pid"
}

host_nofile_cases() {
	nofile_hold nofile-raise-kernel kernel
	nofile_hold nofile-raise-userspace userspace
	nofile_hard_low
	nofile_reload
}
