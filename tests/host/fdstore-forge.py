#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Start vsockmapd as systemd would after a restart: with fds named as the previous instance
stored them (LISTEN_FDS, LISTEN_FDNAMES, LISTEN_PID), each one end of a socketpair whose other
end this script keeps and plays. No systemd and no BPF maps are involved, so only pairs
carried in user space (slot 65536) can be taken back; a pair in the maps is closed.

  fdstore-forge.py --names C[,T] [--closed] [--carrier-version N] --ready CTL_SOCK --log LOG
                   -- vsockmapd ARGS...

--names: the client's name, then its target's (leave the target out to hand the pair over
without it). --carrier-version: the pair travels in a carrier instead ("vsm-carrier.0"), as
one message whose record says version N and nothing more. Prints one line, then stops the daemon (and prints a second line if it did not
exit 0: a sanitizer's report, say):
  pair up=OK|BAD down=OK|BAD target-eof=yes|no   64 KiB each way through the pair taken
                                                 back, then the client's half-close
  client-eof=yes|no [target-eof=yes|no]          with --closed or a client alone: what each
                                                 end reads
"""
import argparse
import fcntl
import os
import signal
import struct
import socket
import sys
import time

TIMEOUT_S = 20  # generous: a loaded two-core machine
PAYLOAD = 64 * 1024


def stream(seed):
    """PAYLOAD bytes that differ from one direction to the other."""
    return bytes((i * 7 + seed) & 0xFF for i in range(PAYLOAD))


def read_exactly(sock, n):
    got = b""
    while len(got) < n:
        chunk = sock.recv(n - len(got))
        if not chunk:
            break
        got += chunk
    return got


def start_daemon(argv, passed, names, log):
    pid = os.fork()
    if pid:
        return pid
    # Out of the way first (3 + i may be another socket's), then in place: dup2() makes
    # each inheritable; everything else python opened closes on exec.
    high = [fcntl.fcntl(end.fileno(), fcntl.F_DUPFD_CLOEXEC, 100) for end in passed]
    for i, fd in enumerate(high):
        os.dup2(fd, 3 + i)
    env = dict(os.environ, LISTEN_FDS=str(len(passed)), LISTEN_PID=str(os.getpid()),
               LISTEN_FDNAMES=":".join(names))
    err = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(err, 2)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as e:
        os.write(2, ("fdstore-forge.py: %s: %s\n" % (argv[0], e.strerror)).encode())
    os._exit(127)


def wait_ready(path, pid):
    """True once path exists; False if the daemon exited first (reaped) or took too long."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return True
        if os.waitpid(pid, os.WNOHANG)[0]:
            return None
        time.sleep(0.05)
    return False


def eof(sock):
    return "yes" if sock.recv(1) == b"" else "no"


def play(apps, closed):
    client = apps[0]
    if closed or len(apps) == 1:
        return " ".join("%s-eof=%s" % (who, eof(end)) for who, end in zip(("client", "target"), apps))
    target = apps[1]
    client.sendall(stream(1))
    up = read_exactly(target, PAYLOAD) == stream(1)
    target.sendall(stream(2))
    down = read_exactly(client, PAYLOAD) == stream(2)
    client.shutdown(socket.SHUT_WR)
    return "pair up=%s down=%s target-eof=%s" % ("OK" if up else "BAD", "OK" if down else "BAD",
                                                  eof(target))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--names", required=True)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--closed", action="store_true", help="the daemon closes the pair")
    ap.add_argument("--carrier-version", type=int)
    ap.add_argument("argv", nargs="+")
    opt = ap.parse_args()
    names = opt.names.split(",")
    apps, passed = [], []
    for _ in names:
        mine, theirs = socket.socketpair()
        mine.settimeout(TIMEOUT_S)
        apps.append(mine)
        passed.append(theirs)
    if opt.carrier_version is not None:
        carrier, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        record = b"VSMP" + struct.pack("<H", opt.carrier_version) + bytes(60)
        carrier.sendmsg([record], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                    struct.pack("%di" % len(passed), *(e.fileno() for e in passed)))])
        carrier.close()
        for end in passed:
            end.close()
        passed, names = [theirs], ["vsm-carrier.0"]
    pid = start_daemon(opt.argv, passed, names, opt.log)
    for end in passed:
        end.close()
    ready = wait_ready(opt.ready, pid)
    if ready is None:
        print("the daemon exited before it was ready (see %s)" % opt.log)
        return 1
    try:
        print(play(apps, opt.closed) if ready else "the daemon was not ready in %d s" % TIMEOUT_S)
    except OSError as e:
        print("error: %s" % e)
    os.kill(pid, signal.SIGTERM)
    status = os.waitpid(pid, 0)[1]
    if status:
        print("the daemon ended with wait status %d (see %s)" % (status, opt.log))
    return 0


if __name__ == "__main__":
    sys.exit(main())
