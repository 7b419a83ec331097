#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Control clients that load the daemon, and a probe of its data path: hostile-control-cases.sh.

hostile-control.py sink SERVER_PATH READY_FILE
    A unix server that accepts every connection and holds it, reading nothing.

hostile-control.py hold CLIENT_PATH COUNT READY_FILE RELEASE_FILE
    Opens COUNT connections to CLIENT_PATH and holds them, idle, until RELEASE_FILE exists.

hostile-control.py ping CLIENT_PATH SECONDS
    64-byte round trips through CLIENT_PATH (an echo) for SECONDS; prints
    "n=COUNT p50=MS p99=MS max=MS".

hostile-control.py flood CONTROL_PATH SECONDS PER_WRITE
    Writes PER_WRITE "list" requests at a time and reads their answers, for SECONDS or until
    SIGTERM; prints "requests=N bytes=N errors=N" (make bench's flood row uses it too).

hostile-control.py notify SOCKET_PATH READY_FILE OUT_FILE
    The systemd side of sd_notify: a datagram socket at SOCKET_PATH (the daemon's
    NOTIFY_SOCKET); appends "SECONDS" (its arrival, CLOCK_REALTIME) to OUT_FILE for each
    WATCHDOG=1, until killed.

hostile-control.py watchdog-gap OUT_FILE FROM_LINE
    The longest time between two keep-alives of OUT_FILE from line FROM_LINE (1-based) to
    now, the time since the last included: "gap_ms=MS pings=N" ("gap_ms=none pings=0 ..."
    if there was none).

hostile-control.py trickle CONTROL_PATH COUNT READY_FILE RELEASE_FILE
    COUNT connections that each ask for a list and read one byte of the answer per second;
    READY_FILE appears once each has its first byte; holds them until RELEASE_FILE exists.
"""
import os
import resource
import signal
import socket
import struct
import sys
import time


def more_fds(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))


def touch(path):
    with open(path + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(path + ".tmp", path)


def wait_release(path, limit=120):
    end = time.monotonic() + limit
    while not os.path.exists(path) and time.monotonic() < end:
        time.sleep(0.1)


def sink(path, ready):
    more_fds(20000)
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(4096)
    touch(ready)
    held = []
    while True:
        c, _ = srv.accept()
        held.append(c)


def hold(path, count, ready, release):
    more_fds(count + 64)
    held = []
    for _ in range(count):
        c = socket.socket(socket.AF_UNIX)
        c.connect(path)
        held.append(c)
    touch(ready)
    wait_release(release)


def ping(path, seconds):
    c = socket.socket(socket.AF_UNIX)
    c.connect(path)
    msg = b"p" * 64
    rtts = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.monotonic()
        c.sendall(msg)
        got = 0
        while got < len(msg):
            b = c.recv(len(msg) - got)
            if not b:
                sys.exit("ping: the echo closed")
            got += len(b)
        rtts.append(time.monotonic() - t)
    rtts.sort()
    n = len(rtts)
    print("n=%d p50=%.2f p99=%.2f max=%.2f" % (n, rtts[n // 2] * 1e3,
                                               rtts[min(n - 1, n * 99 // 100)] * 1e3,
                                               rtts[-1] * 1e3))


def flood(path, seconds, per_write):
    c = socket.socket(socket.AF_UNIX)
    c.connect(path)
    batch = b'{"command":"list"}\n' * per_write
    buf = b""
    requests = nbytes = errors = 0
    end = time.monotonic() + seconds
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    while time.monotonic() < end and not stop:
        c.sendall(batch)
        requests += per_write
        lines = 0
        while lines < per_write:
            b = c.recv(1 << 20)
            if not b:
                sys.exit("flood: the daemon closed the connection")
            nbytes += len(b)
            buf += b
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                lines += 1
                if not line.startswith(b'{"ok":true'):
                    errors += 1
    print("requests=%d bytes=%d errors=%d" % (requests, nbytes, errors))


# SCM_TIMESTAMPNS: the kernel's time of arrival (CLOCK_REALTIME), not when this helper, which
# a loaded machine may starve, got round to reading it.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def notify(path, ready, out):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    srv.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    srv.bind(path)
    os.chmod(path, 0o666)
    touch(ready)
    with open(out, "a", buffering=1) as f:
        while True:
            msg, anc, _, _ = srv.recvmsg(65536, socket.CMSG_SPACE(16))
            stamp = time.time()
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
                    sec, nsec = struct.unpack("qq", data[:16])
                    stamp = sec + nsec / 1e9
            if b"WATCHDOG=1" in msg.split(b"\n"):
                f.write("%.6f\n" % stamp)


def watchdog_gap(out, from_line):
    with open(out) as f:
        stamps = [float(x) for x in f.read().split()[from_line - 1:]]
    if not stamps:
        print("gap_ms=none pings=0 (no keep-alive at all)")
        return
    stamps.append(time.time())
    gap = max(b - a for a, b in zip(stamps, stamps[1:]))
    print("gap_ms=%d pings=%d" % (gap * 1e3, len(stamps) - 1))


def trickle(path, count, ready, release):
    conns = []
    for _ in range(count):
        c = socket.socket(socket.AF_UNIX)
        c.connect(path)
        c.sendall(b'{"command":"list"}\n')
        conns.append(c)
    for c in conns:
        c.recv(1)
    touch(ready)
    end = time.monotonic() + 120
    while not os.path.exists(release) and time.monotonic() < end:
        time.sleep(1)
        for c in conns:
            c.recv(1)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "sink":
        sink(args[0], args[1])
    elif cmd == "hold":
        hold(args[0], int(args[1]), args[2], args[3])
    elif cmd == "ping":
        ping(args[0], float(args[1]))
    elif cmd == "flood":
        flood(args[0], float(args[1]), int(args[2]))
    elif cmd == "notify":
        notify(args[0], args[1], args[2])
    elif cmd == "watchdog-gap":
        watchdog_gap(args[0], int(args[1]))
    elif cmd == "trickle":
        trickle(args[0], int(args[1]), args[2], args[3])
    else:
        sys.exit("hostile-control.py: unknown command " + cmd)


if __name__ == "__main__":
    main()
