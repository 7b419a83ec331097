#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A TCP client that never stops sending and reads slowly: tcp-close-cases.sh.

tcp-slow-sender.py PORT STOP_PID STOP_AFTER_S: connects to 127.0.0.1:PORT, sends 1 KiB
pieces from a second thread until a send fails, reads 4 KiB every 2 ms until EOF or an
error, sends SIGTERM to STOP_PID STOP_AFTER_S seconds after the connect, and prints
"got=BYTES end=EOF|ERRNO_NAME".
"""
import errno
import os
import signal
import socket
import sys
import threading
import time


def send_forever(sock):
    piece = b"u" * 1024
    try:
        while True:
            sock.sendall(piece)
    except OSError:
        pass


def main():
    port, stop_pid, stop_after = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    sock = socket.create_connection(("127.0.0.1", port))
    threading.Thread(target=send_forever, args=(sock,), daemon=True).start()
    start, stopped, got, end = time.monotonic(), False, 0, "EOF"
    while True:
        if not stopped and time.monotonic() - start >= stop_after:
            os.kill(stop_pid, signal.SIGTERM)
            stopped = True
        try:
            data = sock.recv(4096)
        except OSError as e:
            end = errno.errorcode.get(e.errno, str(e.errno))
            break
        if not data:
            break
        got += len(data)
        time.sleep(0.002)
    print(f"got={got} end={end}")


main()
