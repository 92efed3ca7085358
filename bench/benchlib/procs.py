"""Processes and ports: binaries staged, processes started in their own sessions and stopped
together (or killed with the driver), their process trees, free loopback ports, waiting for a
listener or a condition."""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

FERRY_REL = "app/ferry"
CELL_BINS = {"ferry-cell": "integration/cell/ferry-cell",
             "streams-emulator": "integration/streams_emulator/streams-emulator"}


# ---------------------------------------------------------------- binaries

def find_bin(build, rel, hint):
    """BUILD/<rel> (or rel itself when absolute); exits with `hint` when it is missing."""
    path = rel if os.path.isabs(rel) else os.path.join(build, rel)
    if not os.access(path, os.X_OK):
        sys.exit(f"run.py: {path} not found ({hint})")
    return path


def stage_binaries(build, tmp, rels, hint, ferry=None):
    """Copies each name -> BUILD/<rel> of `rels`, and the ferry binary (`ferry`, default
    BUILD/app/ferry), into tmp; returns name -> copy (names: rels' keys + "ferry")."""
    paths = {name: find_bin(build, rel, hint) for name, rel in rels.items()}
    paths["ferry"] = find_bin(build, os.path.abspath(ferry) if ferry else FERRY_REL, hint)
    return {name: shutil.copy2(p, os.path.join(tmp, name)) for name, p in paths.items()}


# ---------------------------------------------------------------- processes

def die_with_parent():
    """preexec_fn: the child gets SIGKILL when the driver dies (even by SIGKILL, e.g. a ctest
    timeout), so nothing it started outlives it. Processes are started from the main thread."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def wait_until(pred, what, timeout=60.0, error=RuntimeError):
    """Polls pred() until it is true (a condition, not a schedule); raises `error` after
    timeout seconds."""
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise error(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


class Procs:
    """Processes started in their own sessions; stop() terminates them newest first, then runs
    the callbacks given to at_stop (e.g. a Cell's stop)."""

    def __init__(self):
        self.procs = []
        self.stops = []

    def at_stop(self, fn):
        self.stops.append(fn)

    def start(self, argv, log, **kw):
        p = subprocess.Popen(argv, stdout=kw.pop("stdout", None) or open(log, "w"),
                             stderr=open(log + ".err", "w"), start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def stop(self, timeout=20):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for fn in reversed(self.stops):
            fn()


def children(pid):
    """Direct children of pid (all its threads')."""
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out.extend(int(x) for x in f.read().split())
        except OSError:
            pass
    return out


def descendants(pid):
    out, todo = [], children(pid)
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children(p))
    return out


def process_tree(root):
    """root and all its descendants (pids)."""
    return [root] + descendants(root)


def port_of(addr):
    return int(addr.rsplit(":", 1)[1])


_held_ports = []  # bound, never listening: see free_port()


def free_port():
    """A free 127.0.0.1 port for a server that cannot bind port 0 and report it, held until
    this process exits: a socket stays bound to it with SO_REUSEADDR and never listens. No
    other bind(0) and no connect() on the machine takes a port with a bound socket, so nothing
    can grab it before the server binds it; the server's bind succeeds because ferry, HAProxy,
    nginx, nghttpx, h2o and the bench tools all set SO_REUSEADDR, which shares a port with a
    bound socket that does not listen. (A port picked and released may be taken in between as
    the source port of any connection on the machine.)"""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    _held_ports.append(s)
    return s.getsockname()[1]


def wait_tcp(addr, timeout=15):
    """Returns once something accepts TCP connections at HOST:PORT; RuntimeError after timeout."""
    host, port = addr.rsplit(":", 1)
    end = time.time() + timeout
    while time.time() < end:
        try:
            with socket.create_connection((host, int(port)), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {addr}")


class Server:
    """A process we started in its own session, stderr (and stdout unless given) appended to
    WORKDIR/<name>.log; `pids()` is its current process tree."""

    def __init__(self, name, argv, workdir, stdout=None):
        self.name = name
        self.argv = argv
        self.workdir = workdir
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            argv, cwd=workdir, stdin=subprocess.DEVNULL,
            stdout=stdout if stdout is not None else self.logf, stderr=self.logf,
            start_new_session=True)
        self.port = None

    def pids(self):
        return process_tree(self.proc.pid)

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=10):
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                # Only our own process group (start_new_session made it ours).
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if not self.logf.closed:
            self.logf.close()

    def log_tail(self, n=20):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""
