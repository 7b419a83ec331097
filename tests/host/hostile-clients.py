#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Clients that cost the daemon: tests/host/hostile-client-cases.sh.

hostile-clients.py unread CLIENT_PATH SERVER_PATH COUNT
    Listens at SERVER_PATH, connects COUNT clients to CLIENT_PATH (the server itself for a
    direct run, or a vsockmapd section that connects to SERVER_PATH), and never reads on
    them; the server writes to every connection until each blocks and none has moved for
    2 s. Everything written then sits in kernel buffers between the two. Prints
    "queued_per_conn=BYTES kernel_per_conn=BYTES in_pipes_per_conn=BYTES": the bytes written
    per connection; the kernel memory holding them: the skbs' truesize (the senders'
    wmem_alloc summed over every unix socket, `ss -xm`) plus the bytes no socket queue holds
    (in the daemon's splice pipes, whole pages); and those pipe bytes.

hostile-clients.py flood CLIENT_PATH SECONDS
    Connects to CLIENT_PATH and closes at once, again and again, for SECONDS (a client at
    its max-redirects-per-uid, refused each time); prints "connects=N".

hostile-clients.py conns CLIENT_PATH COUNT HOLD_FILE
    Opens COUNT connections to CLIENT_PATH one after another, each proven by one byte echoed
    back within 5 s; prints one word per connection, "ok" or "refused" (EOF, a reset or no
    echo), keeps the open ones while HOLD_FILE exists, then closes the first and tries one
    more, printing "again=ok" or "again=refused".
"""
import os
import re
import socket
import subprocess
import sys
import time


def unix_queues():
    """(bytes queued in unix stream receive queues, their skbs' truesize), system-wide."""
    out = subprocess.run(["ss", "-xmH"], capture_output=True, text=True, check=True).stdout
    recvq = sum(int(m) for m in re.findall(r"^u_str\s+\S+\s+(\d+)", out, re.M))
    return recvq, sum(int(t) for t in re.findall(r"skmem:\(r\d+,rb\d+,t(\d+),", out))


def unread(client_path, server_path, count):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(server_path)
    except FileNotFoundError:
        pass
    srv.bind(server_path)
    srv.listen(4096)
    base_q, base_t = unix_queues()
    clients = []
    for _ in range(count):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(client_path)
        clients.append(c)
    srv.settimeout(10)
    conns = []
    while len(conns) < count:
        s, _ = srv.accept()
        s.setblocking(False)
        conns.append(s)
    piece, total, quiet_since = b"x" * 65536, 0, time.monotonic()
    while time.monotonic() - quiet_since < 2.0:
        moved = False
        for s in conns:
            try:
                total += s.send(piece)
                moved = True
            except BlockingIOError:
                pass
        if moved:
            quiet_since = time.monotonic()
        else:
            time.sleep(0.05)
    q, t = unix_queues()
    for s in clients + conns:
        s.close()
    # What no socket queue holds is in the daemon's splice pipes: their pages count too.
    in_pipes = max(0, total - (q - base_q))
    kernel = (t - base_t) + in_pipes
    print(f"queued_per_conn={total // count} kernel_per_conn={kernel // count} "
          f"in_pipes_per_conn={in_pipes // count}")


def try_conn(path):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.settimeout(5)
    try:
        c.connect(path)
        c.sendall(b"e")
        if c.recv(1) == b"e":
            return c
    except OSError:
        pass
    c.close()
    return None


def conns(path, count, hold_file):
    held, words = [], []
    for _ in range(count):
        c = try_conn(path)
        words.append("ok" if c else "refused")
        if c:
            held.append(c)
    print(" ".join(words), flush=True)
    while os.path.exists(hold_file):
        time.sleep(0.05)
    if held:
        held.pop(0).close()
    # The daemon counts the redirect out once it has closed the pair: try for up to 10 s.
    c, deadline = None, time.monotonic() + 10
    while not c and time.monotonic() < deadline:
        c = try_conn(path)
        if not c:
            time.sleep(0.1)
    print("again=" + ("ok" if c else "refused"), flush=True)


def flood(path, seconds):
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            c.connect(path)
            n += 1
        except OSError:
            pass
        c.close()
    print(f"connects={n}")


def main():
    if sys.argv[1] == "unread":
        unread(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "flood":
        flood(sys.argv[2], float(sys.argv[3]))
    elif sys.argv[1] == "conns":
        conns(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(f"hostile-clients.py: unknown command {sys.argv[1]}")


if __name__ == "__main__":
    main()
