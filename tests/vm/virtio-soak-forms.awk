# SPDX-License-Identifier: GPL-2.0-only
#
# virtio-soak-forms.awk - the virtio soak's failed connections (vsm-soak's "conn" lines of
# both ends, the guest's file first), sorted into what vhost-device-vsock 0.3.0 does with no
# relay in the path (tests/vm/README.md, "What the backend loses") and what it does not:
#
#   tail   the host end got a correct prefix, then EOF, at most TXBUF bytes short (the
#          backend's tx buffer) and at least 7 s after its last byte, the guest end passing:
#          the guest's SHUTDOWN is ignored while that buffer holds bytes, and the guest's
#          RST 8 s after its close (VSOCK_CLOSE_TIMEOUT) drops them; a relay that dropped
#          bytes itself would close at once;
#   stall  the host end got a correct prefix, short of bytes, then nothing for the soak's
#          stall bound: the backend stopped flushing its tx buffer, so no credit came back;
#          the guest end either stalled too or was cut off when the host gave up.
#
#	awk -v TXBUF=32768 -f virtio-soak-forms.awk GUEST_OUT HOST_OUT
#
# Prints one line per failed connection: "backend FORM ID: what" or "other ID: the lines".
# Exit 0 when every failure is of a backend form (and there is at least one), 1 otherwise.

function field(s, name, a) {
	return match(s, " " name "=[^ ]*") ? substr(s, RSTART + length(name) + 2, RLENGTH - length(name) - 2) : ""
}

function reason(s, t) {
	t = s
	sub(/ \(replay:.*/, "", t)
	sub(/.* sndbuf=[^:]*: /, "", t)
	return t
}

/^conn [0-9]+ / {
	id = $2
	side = FILENAME == ARGV[1] ? "guest" : "host"
	if (!(id in seen))
		order[++n] = id
	seen[id] = 1
	why[id, side] = reason($0)
	line[id] = line[id] (line[id] == "" ? "" : " | ") side ": " $0
	if (field($0, "mismatch") != "-1/-1")
		bad[id] = 1
	if (side == "host") {
		split(field($0, "up"), up, "/")
		cut[id] = field($0, "cut")
		gap[id] = field($0, "server_eof_gap_ms")
		got[id] = up[1]
		want[id] = $3 == "client-kill" ? cut[id] : up[2]
	}
}

END {
	others = 0
	for (i = 1; i <= n; i++) {
		id = order[i]
		h = why[id, "host"]
		g = why[id, "guest"]
		short = want[id] - got[id]
		if (!bad[id] && (h == "server: wrong number of bytes" ||
				 h == "the server did not get every byte the killed client sent") &&
		    g == "" && short > 0 && short <= TXBUF && gap[id] != "" && gap[id] >= 7000)
			printf "backend tail %s: %d of %d bytes at the host, then EOF %d ms later\n", id, got[id], want[id], gap[id]
		else if (!bad[id] && h == "stalled" && short > 0 &&
			 (g == "" || g == "stalled" || g == "client: wrong number of bytes" ||
			  g == "an I/O error on a connection that should end cleanly"))
			printf "backend stall %s: %d of %d bytes at the host, then nothing\n", id, got[id], want[id]
		else {
			printf "other %s: %s\n", id, line[id]
			others++
		}
	}
	exit n > 0 && others == 0 ? 0 : 1
}
