#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The part of systemd a restart without loss needs, for one service on the host: the notify
socket with its fd store (FDSTORE=1, FDNAME=, FDPOLL=0, FDSTOREREMOVE=1), READY=1, a restart
as the unit asks it (RestartKillSignal=SIGUSR2, wait for the exit, start again with the stored
fds as LISTEN_FDS and LISTEN_FDNAMES), a stop (SIGTERM; the store is dropped, as systemd drops
it), and Restart=on-failure with RestartSec= and no start limit. The fd store keeps what it
was given as systemd 252 does: one entry per distinct open file (a second FDSTORE of the same
socket is dropped), in the order stored, removed by name.

  fdstore-systemd.py serve --ctl SOCK --log LOG [--restart-sec S] -- vsockmapd ARGS...
  fdstore-systemd.py ctl SOCK restart|stop|status|wait-running [SECONDS]

serve runs in the foreground until a stop; ctl sends one command and prints the answer:
  restart  -> "restart exit_ms=N started=yes|no start_ms=N"  (started: READY=1 came before an exit)
  stop     -> "stop exit_ms=N status=N"
  status   -> "pid=N running=yes|no starts=N failed_starts=N stored=NAME,NAME..."
  wait-running S -> "running" once a start has succeeded, or "not running" after S seconds
"""
import argparse
import array
import ctypes
import os
import selectors
import signal
import socket
import sys
import tempfile
import time

EXIT_TIMEOUT_S = 90  # systemd's TimeoutStopSec= default
READY_TIMEOUT_S = 90


LIBC = ctypes.CDLL(None, use_errno=True)
SYS_KCMP = {"x86_64": 312, "aarch64": 272}.get(os.uname().machine)
KCMP_FILE = 0


def same_file(a, b):
    """One open file behind both descriptors, as systemd's same_fd() asks kcmp()."""
    if SYS_KCMP is None:
        return False
    pid = os.getpid()
    return LIBC.syscall(SYS_KCMP, pid, pid, KCMP_FILE, a, b) == 0


class Store:
    def __init__(self):
        self.entries = []  # [name, fd]

    def add(self, name, fd):
        for _, old in self.entries:
            if same_file(old, fd):
                os.close(fd)  # already stored (systemd: same_fd())
                return
        self.entries.append([name, fd])

    def remove(self, name):
        keep = []
        for entry in self.entries:
            if entry[0] == name:
                os.close(entry[1])
            else:
                keep.append(entry)
        self.entries = keep

    def drop_all(self):
        for _, fd in self.entries:
            os.close(fd)
        self.entries = []


class Service:
    def __init__(self, argv, log, restart_sec):
        self.argv, self.log, self.restart_sec = argv, log, restart_sec
        self.store = Store()
        self.dir = tempfile.mkdtemp(prefix="vsm-fdstore.")
        self.notify_path = os.path.join(self.dir, "notify")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        self.notify.setblocking(False)
        self.pid = 0
        self.ready = False
        self.starts = self.failed_starts = 0
        self.restart_at = None  # Restart=on-failure: when to start again
        self.exit_status = None
        self.in_job = False  # a restart or stop asked for: its exit is expected

    def start(self):
        self.ready = False
        self.exit_status = None
        self.starts += 1
        fds = [fd for _, fd in self.store.entries]
        names = [name for name, _ in self.store.entries]
        pid = os.fork()
        if pid:
            self.pid = pid
            return
        try:
            high = [os.dup(fd) for fd in fds]
            high = [fcntl_dupfd(fd) for fd in high]
            for i, fd in enumerate(high):
                os.dup2(fd, 3 + i)
            os.closerange(3 + len(high), 65536)
            env = dict(os.environ, NOTIFY_SOCKET=self.notify_path)
            if fds:
                env.update(LISTEN_FDS=str(len(fds)), LISTEN_PID=str(os.getpid()),
                           LISTEN_FDNAMES=":".join(names))
            err = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(err, 2)
            os.execvpe(self.argv[0], self.argv, env)
        except OSError as e:
            os.write(2, ("fdstore-systemd.py: %s: %s\n" % (self.argv[0], e)).encode())
        os._exit(127)

    def read_notify(self):
        while True:
            fds = array.array("i")
            try:
                msg, anc, _, _ = self.notify.recvmsg(4096, socket.CMSG_SPACE(253 * 4))
            except BlockingIOError:
                return
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.frombytes(data[:len(data) - len(data) % 4])
            fields = dict(line.split("=", 1) for line in msg.decode(errors="replace").split("\n")
                          if "=" in line)
            if fields.get("FDSTORE") == "1":
                for fd in fds:
                    self.store.add(fields.get("FDNAME", "stored"), fd)
            else:
                for fd in fds:
                    os.close(fd)
            if fields.get("FDSTOREREMOVE") == "1" and "FDNAME" in fields:
                self.store.remove(fields["FDNAME"])
            if fields.get("READY") == "1":
                self.ready = True

    def reap(self):
        """The main process's exit, if it came. Outside a job: Restart=on-failure, and
        RestartForceExitStatus=75 (a hand-over); an exit 0 leaves the unit inactive, and
        systemd then drops its fd store."""
        if not self.pid:
            return False
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if not pid:
            return False
        self.read_notify()
        self.pid = 0
        self.exit_status = status
        if not self.ready:
            self.failed_starts += 1
        if status:
            self.restart_at = time.monotonic() + self.restart_sec
        elif not self.in_job:
            self.store.drop_all()
        return True

    def tick(self):
        self.read_notify()
        self.reap()
        if not self.pid and self.restart_at is not None and time.monotonic() >= self.restart_at:
            self.restart_at = None
            self.start()

    def wait(self, cond, timeout):
        deadline = time.monotonic() + timeout
        while not cond() and time.monotonic() < deadline:
            self.tick()
            time.sleep(0.005)
        return cond()

    def kill_and_wait(self, sig):
        """Signal the main process, wait for its exit: milliseconds taken."""
        t0 = time.monotonic()
        if self.pid:
            os.kill(self.pid, sig)
            if not self.wait(lambda: not self.pid, EXIT_TIMEOUT_S):
                os.kill(self.pid, signal.SIGKILL)
                self.wait(lambda: not self.pid, 10)
        return int((time.monotonic() - t0) * 1000)

    def start_and_wait(self):
        t0 = time.monotonic()
        self.restart_at = None
        self.start()
        self.wait(lambda: self.ready or not self.pid, READY_TIMEOUT_S)
        return self.ready and bool(self.pid), int((time.monotonic() - t0) * 1000)

    def command(self, line):
        words = line.split()
        if not words:
            return "?"
        if words[0] == "restart":
            self.in_job = True
            exit_ms = self.kill_and_wait(signal.SIGUSR2)
            started, start_ms = self.start_and_wait()
            self.in_job = False
            return "restart exit_ms=%d started=%s start_ms=%d" % (
                exit_ms, "yes" if started else "no", start_ms)
        if words[0] == "stop":
            self.restart_at = None
            self.in_job = True
            exit_ms = self.kill_and_wait(signal.SIGTERM)
            self.in_job = False
            self.restart_at = None
            self.store.drop_all()
            return "stop exit_ms=%d status=%s" % (exit_ms, self.exit_status)
        if words[0] == "status":
            return "pid=%d running=%s starts=%d failed_starts=%d stored=%s" % (
                self.pid, "yes" if self.pid and self.ready else "no", self.starts,
                self.failed_starts, ",".join(name for name, _ in self.store.entries))
        if words[0] == "wait-running":
            ok = self.wait(lambda: self.pid and self.ready, float(words[1]) if len(words) > 1 else 60)
            return "running" if ok else "not running"
        return "unknown command " + words[0]


def fcntl_dupfd(fd):
    import fcntl
    new = fcntl.fcntl(fd, fcntl.F_DUPFD, 100)
    os.close(fd)
    return new


def serve(opt):
    svc = Service(opt.argv, opt.log, opt.restart_sec)
    ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(opt.ctl):
        os.unlink(opt.ctl)
    ctl.bind(opt.ctl)
    ctl.listen(16)
    ctl.setblocking(False)
    svc.start()
    sel = selectors.DefaultSelector()
    sel.register(ctl, selectors.EVENT_READ)
    sel.register(svc.notify, selectors.EVENT_READ)
    stopped = False
    while not stopped:
        for key, _ in sel.select(0.02):
            if key.fileobj is ctl:
                conn, _ = ctl.accept()
                conn.settimeout(30)
                try:
                    line = conn.makefile().readline()
                    answer = svc.command(line)
                    conn.sendall((answer + "\n").encode())
                    stopped = line.startswith("stop")
                except OSError:
                    pass
                conn.close()
        svc.tick()
    os.unlink(opt.ctl)
    return 0


def ctl_command(opt):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(300)
    s.connect(opt.sock)
    s.sendall((" ".join(opt.words) + "\n").encode())
    answer = s.makefile().readline().strip()
    print(answer)
    if opt.words[0] == "restart" and "started=yes" not in answer:
        return 1
    return 0 if answer not in ("not running", "") else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--ctl", required=True)
    s.add_argument("--log", required=True)
    s.add_argument("--restart-sec", type=float, default=1.0)
    s.add_argument("argv", nargs="+")
    c = sub.add_parser("ctl")
    c.add_argument("sock")
    c.add_argument("words", nargs="+")
    opt = ap.parse_args()
    return serve(opt) if opt.mode == "serve" else ctl_command(opt)


if __name__ == "__main__":
    sys.exit(main())
