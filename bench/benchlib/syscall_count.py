"""What a set of running processes asked the kernel for during one measured run.

`perf stat` with syscall and scheduler tracepoints, attached to the processes' pids (all their
threads), started with its events disabled and switched on and off through its control fifo,
whose acknowledgements bound the counted span exactly (no sleep as synchronisation). Needs perf
and the right to trace the pids (root here). Used by bench/cell/run.py --count-syscalls and
bench/passthrough/counts.py.

    with SyscallCount([pid, ...], workdir) as count:
        ... the run ...
    count.result  # {"syscalls": n, "epoll_wait": n, "read": n, "writev": n, ...}
    count.by_pid  # {pid: {"syscalls": n, ...}}: the same per process (its threads summed)

`events` (default EVENTS) names what to count: name -> perf event, or (event, filter) to count
only the calls the tracepoint filter keeps (e.g. ("syscalls:sys_exit_read", "ret == -11")).
"""

import os
import select
import signal
import subprocess
import tempfile

# Name in the result -> perf event. "syscalls" is every system call; "context_switches" counts
# each time one of the processes' threads left a CPU (a sleep in epoll_wait is one).
EVENTS = {
    "syscalls": "raw_syscalls:sys_enter",
    "epoll_wait": "syscalls:sys_enter_epoll_wait",
    "read": "syscalls:sys_enter_read",
    "recvfrom": "syscalls:sys_enter_recvfrom",
    "writev": "syscalls:sys_enter_writev",
    "sendto": "syscalls:sys_enter_sendto",
    "epoll_ctl": "syscalls:sys_enter_epoll_ctl",
    "accept4": "syscalls:sys_enter_accept4",
    "context_switches": "sched:sched_switch",
}


class SyscallCount:
    def __init__(self, pids, workdir, events=None, perf="perf"):
        if not pids:
            raise ValueError("SyscallCount: no pids to attach to")
        self.pids, self.perf = [str(p) for p in pids], perf
        self.events = events or EVENTS
        self.dir = tempfile.mkdtemp(prefix="syscalls-", dir=workdir)
        self.result = self.by_pid = None

    def __enter__(self):
        ctl, ack = os.path.join(self.dir, "ctl"), os.path.join(self.dir, "ack")
        os.mkfifo(ctl)
        os.mkfifo(ack)
        self.out = os.path.join(self.dir, "stat.csv")
        # Per thread, then summed per process: which process a thread belongs to is read
        # now (the proxies here start their threads at start-up, before any run).
        self.tids = {tid: pid for pid in self.pids for tid in os.listdir(f"/proc/{pid}/task")}
        with open(os.path.join(self.dir, "perf.err"), "w") as err:
            self.proc = subprocess.Popen(
                [self.perf, "stat", "--per-thread", "-x,", "-o", self.out, "-D", "-1",
                 "--control", f"fifo:{ctl},{ack}"] + event_args(self.events)
                + ["-p", ",".join(self.pids)],
                stdout=subprocess.DEVNULL, stderr=err)
        # Read-write opens of a fifo do not wait for the other end (Linux): a perf that fails
        # before opening them is seen in _command() instead of blocking here.
        self.ctl = os.open(ctl, os.O_RDWR)
        self.ack = os.open(ack, os.O_RDWR)
        try:
            self._command("enable")
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, kind, value, tb):
        try:
            self._command("disable")
        finally:
            self._stop()
        if kind is None:
            self.by_pid = parse(self.out, self.tids, self.events)
            self.result = {k: sum(c[k] for c in self.by_pid.values()) for k in self.events}
        return False

    def _command(self, what, timeout_s=30):
        os.write(self.ctl, (what + "\n").encode())
        got = b""
        while b"\n" not in got:
            ready, _, _ = select.select([self.ack], [], [], 1.0)
            if ready:
                got += os.read(self.ack, 64)
                continue
            timeout_s -= 1
            if self.proc.poll() is not None or timeout_s <= 0:
                raise RuntimeError(f"perf stat did not acknowledge {what!r} (exit "
                                   f"{self.proc.poll()}); see {self.dir}/perf.err")
        # perf writes "ack\n" with its C string's NUL: it reaches the next reply's start.
        if got.strip(b"\0\n ") != b"ack":
            raise RuntimeError(f"perf stat answered {got!r} to {what!r}; see {self.dir}/perf.err")

    def _stop(self):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=30)
        os.close(self.ctl)
        os.close(self.ack)


def event_args(events):
    """perf stat's -e (and --filter, which applies to the -e before it) arguments."""
    args = []
    for spec in events.values():
        event, flt = spec if isinstance(spec, tuple) else (spec, None)
        args += ["-e", event] + (["--filter", flt] if flt else [])
    return args


def parse(path, tids, events=None):
    """perf stat --per-thread -x, output (lines "comm-tid,count,unit,event,...") -> {pid:
    {name: count}}, threads summed into their process by `tids` (tid -> pid). A thread that
    never ran while counting was on reads "<not counted>": zero. Raises on an event perf could
    not count for a thread ("<not supported>": a missing tracepoint must not read as zero
    calls) and on a thread it did not report."""
    by_thread = {}
    with open(path) as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) < 4 or line.startswith("#"):
                continue
            by_thread.setdefault(parts[0].rsplit("-", 1)[-1], {})[parts[3]] = parts[1]
    events = events or EVENTS
    out = {pid: {name: 0 for name in events} for pid in set(tids.values())}
    for tid, pid in tids.items():
        counted = by_thread.get(tid, {})
        for name, spec in events.items():
            event = spec[0] if isinstance(spec, tuple) else spec
            value = counted.get(event)
            if value == "<not counted>":  # the thread never ran while counting was on
                value = "0"
            if value is None or not value.isdigit():
                raise RuntimeError(f"perf stat counted no {event} for thread {tid} "
                                   f"({value!r}) in {path}")
            out[pid][name] += int(value)
    return out
