#!/usr/bin/env python3
"""Load-independent costs per request (issue #23): syscalls, heap allocations and instructions a
proxy spends per proxied request, counted over a fixed number of requests. This box is shared
and noisy; CPU time per request moves with the load, these counts do not (much: how many
requests one wake-up carries still depends on timing), so they are what a change is steered by.

    bench/passthrough/counts.py [--ferry PATH|auto] [--arm ferry|floor|floor-parse|haproxy]
        [--workload get|post1k|tls-ka|tls-hs|h2c|h2c-post1k|h2-tls|append|routed] [--requests N]
        [--connections C] [--callgrind]

The origin and the ferry configuration are run.py's (the pass-through bench's: one worker,
every default feature on: access log, request id, forwarded headers); --arm haproxy is run.py's
HAProxy, for a peer's counts beside ferry's; --arm floor-parse is the floor relay running llhttp
over both directions (HTTP/1.1 only). Load: h2load --h1, one thread, C keep-alive
connections, exactly N requests, after a warm-up of N/10 (tls-ka: the same GETs over TLS to
the arm's TLS instance, keep-alive; tls-hs: each GET on a new TLS connection with
`Connection: close`, resuming the session of the connection before it as wrk does in run.py's
tls-hs, from a Python client, C connections at a time); h2c and h2-tls: h2load over HTTP/2
(h2c prior knowledge, or TLS with ALPN h2; h2c-post1k: h2c with 1 KiB POSTs), 8 connections x 8 streams unless --connections,
against the arm's HTTP/2 instance as run.py starts it (the floor: h2c only). append and routed
(ferry only, owner forwarding and routing on): 200-byte appends to a stream the local instance
owns, or to one it answers 409 + Streams-Replay-To for, which ferry routes to that owner once
learnt (start_streams_origin: two nginx servers play the two instances).

- syscalls: `perf stat` on the syscalls:sys_enter_* tracepoints of the proxy's pid for the
  load's duration, per request; "read EAGAIN" is sys_exit_read/readv/recvfrom returning -11.
- allocations (ferry only): bench/passthrough/malloc_count.c preloaded (built here with cc),
  malloc/calloc/aligned allocations per request.
- --callgrind: a second run with the proxy under callgrind, instrumentation switched on only for
  the measured requests: instructions (Ir) per request and the top functions.

stdlib only; needs perf, h2load, cc (and valgrind for --callgrind).
"""
import argparse
import os
import re
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402  (the bench's ferry config, origin and binary lookup: one place)
import benchlib  # noqa: E402
from benchlib.peers import (  # noqa: E402
    Server, free_port, make_cert, nginx_common, recv_to_eof, start_floor, start_haproxy,
    start_origin, wait_http)
from benchlib.syscall_count import SyscallCount  # noqa: E402
from summary import FLOOR_ARMS, PARSE_FLOOR_ARM  # noqa: E402  (the floor relay's two arms)

SYSCALLS = ["read", "readv", "recvfrom", "write", "writev", "sendto", "sendmsg", "epoll_wait",
            "epoll_ctl", "ioctl", "accept4", "close", "setsockopt", "getsockopt", "connect",
            "clock_gettime", "getpid", "getrandom", "io_uring_enter"]
EAGAIN_FROM = ["read", "readv", "recvfrom"]


# The HTTP/2 workloads: run.py's instance mode and h2load's streams per connection.
H2_WORKLOADS = {"h2c": "h2c", "h2c-post1k": "h2c", "h2-tls": "h2tls"}
H2_STREAMS = 8
# The owner-forwarding workloads (ferry only): appends of APPEND_BYTES to a stream the local
# instance owns, or to one another instance owns, which ferry routes there once it learnt the
# owner from the local instance's first 409 (ROUTED_WORKLOADS: path of each).
APPEND_BYTES = 200
ROUTED_WORKLOADS = {"append": "/v1/streams/mine", "routed": "/v1/streams/theirs"}


class Workload:
    """What h2load sends: `path`, the body file (None: GET), the HTTP/2 mode (None: HTTP/1.1),
    over TLS or not (h2tls always is)."""

    def __init__(self, path, body=None, mode=None, tls=False, handshakes=False):
        self.path, self.body, self.mode = path, body, mode
        self.tls = tls or handshakes or mode == "h2tls"
        self.handshakes = handshakes  # tls-hs: one TLS connection per request


def handshake_requests(port, n, conns):
    """Exactly n GETs, each on a new TLS connection that the proxy closes after the response
    (`Connection: close`), `conns` at a time; every connection offers the session (ticket) the
    one before it on the same thread received, as wrk does."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    failures = []

    def client(count):
        session = None
        for _ in range(count):
            with socket.create_connection(("127.0.0.1", port)) as raw:
                with ctx.wrap_socket(raw, session=session) as c:
                    c.sendall(request)
                    answer = recv_to_eof(c)
                    session = c.session
            if not answer.startswith(b"HTTP/1.1 200"):
                failures.append(answer[:200])

    threads = [threading.Thread(target=client, args=(n // conns + (i < n % conns),))
               for i in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise RuntimeError(f"{len(failures)} of {n} handshake requests failed: {failures[0]!r}")


def h2load(port, n, conns, w):
    """Exactly n requests of Workload `w` over `conns` connections: HTTP/1.1 keep-alive, or
    HTTP/2 (w.mode h2c / h2tls) with H2_STREAMS streams each; tls-hs: handshake_requests."""
    if w.handshakes:
        return handshake_requests(port, n, conns)
    argv = ["h2load", "-t1", f"-c{conns}", f"-n{n}"]
    argv += ["--h1"] if w.mode is None else [f"-m{H2_STREAMS}"]
    if w.mode == "h2tls":
        argv.append("--npn-list=h2")
    if w.body:
        argv += ["-d", w.body, "-H", "content-type: application/octet-stream"]
    scheme = "https" if w.tls else "http"
    argv.append(f"{scheme}://127.0.0.1:{port}{w.path}")
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    m = re.search(r"status codes: (\d+) 2xx", out)
    if not m or int(m.group(1)) != n:
        raise RuntimeError(f"h2load did not get {n} × 2xx:\n{out[-1500:]}")


def perf_syscalls(pid, load, tmp):
    """{name: count} of the proxy's syscalls while load() runs ("EAGAIN read": reads that
    returned EAGAIN)."""
    events = {s: f"syscalls:sys_enter_{s}" for s in SYSCALLS}
    events.update({f"EAGAIN {s}": (f"syscalls:sys_exit_{s}", "ret == -11") for s in EAGAIN_FROM})
    with SyscallCount([pid], tmp, events) as count:
        load()
    return count.result


def build_malloc_count(tmp):
    so = os.path.join(tmp, "malloc_count.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", so,
                    os.path.join(HERE, "malloc_count.c"), "-ldl"], check=True)
    return so


def read_allocs(path):
    with open(path, "rb") as f:
        return struct.unpack("QQ", f.read(16))


def start_streams_origin(tmp):
    """nginx as two instances of a fleet, for the owner-forwarding workloads: the local one
    answers 200 for /v1/streams/mine and 409 + `Streams-Replay-To: other` for any other stream;
    `other` (owner_port) answers 200 to everything. Both read and drop request bodies."""
    prefix = os.path.join(tmp, "streams-origin")
    os.makedirs(prefix)
    port, owner_port = free_port(), free_port()
    main, common = nginx_common(prefix)
    ok = 'client_max_body_size 1m; return 200 "ok\\n";'
    conf = f"""{main}
    http {{
        {common}
        default_type text/plain;
        server {{
            listen 127.0.0.1:{port};
            location = {ROUTED_WORKLOADS["append"]} {{ {ok} }}
            location /v1/streams/ {{
                client_max_body_size 1m;
                add_header Streams-Replay-To other always;
                return 409 "not mine\\n";
            }}
            location / {{ {ok} }}
        }}
        server {{ listen 127.0.0.1:{owner_port}; location / {{ {ok} }} }}
    }}
    """
    path = os.path.join(prefix, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    s = Server("streams-origin", ["nginx", "-p", prefix, "-e", f"{prefix}/error.log", "-c", path],
               prefix)
    s.port, s.owner_port = port, owner_port
    wait_http(port, proc=s.proc)
    return s


def forwarding_config(origin):
    """ferry's forwarding block for start_streams_origin: the peer `other`, owner routing on."""
    return (f'forwarding: {{enabled: true, peers: {{other: "http://127.0.0.1:{origin.owner_port}"}}, '
            "allow_http_peers: true, owner_routing: {enabled: true}}")


def start_proxy(arm, tmp, origin, binary, wrapper_env=None, wrap=None, w=None,
                forwarding=None):
    """The arm's instance in front of the origin for Workload `w` (its HTTP/2 instance, h2c or
    h2tls, or its TLS one; forwarding: ferry's forwarding block, run.py's by default), up and
    answering."""
    mode = w.mode if w else None
    if arm in FLOOR_ARMS:
        up = origin.h2c_port if mode == "h2c" else origin.port
        s = start_floor(tmp, up, binary, h2=mode, parse=arm == PARSE_FLOOR_ARM)
        if mode is None:
            wait_http(s.port, proc=s.proc)
        else:
            benchlib.wait_tcp(f"127.0.0.1:{s.port}")
        return s
    tls = make_cert(tmp) if w and w.tls else None
    if arm == "haproxy":
        s = start_haproxy(tmp, origin.port, tls=tls, h2=mode)
        benchlib.wait_tcp(f"127.0.0.1:{s.port}")
        return s
    exe = binary
    if wrap:  # a shell wrapper that execs `wrap binary "$@"` (start_ferry takes one path)
        os.makedirs(tmp, exist_ok=True)
        exe = os.path.join(tmp, "wrapped-ferry")
        with open(exe, "w") as f:
            f.write("#!/bin/sh\nexec " + " ".join(wrap) + f" {binary} \"$@\"\n")
        os.chmod(exe, 0o755)
    old = dict(os.environ)
    os.environ.update(wrapper_env or {})
    try:
        s = run.start_ferry(tmp, origin.port, exe, tls=tls, h2=mode, forwarding=forwarding)
    finally:
        os.environ.clear()
        os.environ.update(old)
    if tls is None and mode is None:
        wait_http(s.port, proc=s.proc, timeout=60)
    else:
        benchlib.wait_tcp(f"127.0.0.1:{s.port}", timeout=60)
    return s


def proxy_pid(s):
    """The process that serves: the deepest of the tree (valgrind execs in place; sh too)."""
    return s.pids()[-1]


def measure_counts(a, tmp, origin, binary, w):
    env, mc = {}, None
    if a.arm == "ferry":
        mc = os.path.join(tmp, "malloc-counts")
        env = {"LD_PRELOAD": build_malloc_count(tmp), "MALLOC_COUNT_FILE": mc}
    s = start_proxy(a.arm, os.path.join(tmp, "c"), origin, binary, env, w=w,
                    forwarding=a.forwarding)
    try:
        h2load(s.port, max(a.requests // 10, 100), a.connections, w)
        m0 = read_allocs(mc) if mc else None
        sc = perf_syscalls(proxy_pid(s), lambda: h2load(s.port, a.requests, a.connections, w),
                           tmp)
        m1 = read_allocs(mc) if mc else None
    finally:
        s.stop()
    n = a.requests
    print(f"{a.arm} {a.workload}: {n} requests, {a.connections} connections")
    total = sum(v for k, v in sc.items() if not k.startswith("EAGAIN") and k != "clock_gettime")
    print(f"  syscalls/req {total / n:.3f}")
    for k, v in sorted(sc.items(), key=lambda kv: -kv[1]):
        if v:
            print(f"    {k:14s} {v / n:.3f}")
    if mc:
        print(f"  allocations/req {(m1[0] - m0[0]) / n:.2f}  frees/req {(m1[1] - m0[1]) / n:.2f}")


def measure_callgrind(a, tmp, origin, binary, w):
    out = os.path.join(a.out, f"callgrind.{a.arm}.{a.workload}")
    wrap = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    if a.arm in FLOOR_ARMS:
        os.makedirs(os.path.join(tmp, "g"), exist_ok=True)
        wrap_bin = os.path.join(tmp, "wrapped-floor")
        with open(wrap_bin, "w") as f:
            f.write("#!/bin/sh\nexec " + " ".join(wrap) + f" {binary} \"$@\"\n")
        os.chmod(wrap_bin, 0o755)
        s = start_floor(os.path.join(tmp, "g"), origin.port, wrap_bin,
                        parse=a.arm == PARSE_FLOOR_ARM)
        wait_http(s.port, proc=s.proc, timeout=60)
    elif a.arm == "haproxy":
        sys.exit("--callgrind: ferry or the floors (HAProxy under valgrind: not set up here)")
    else:
        s = start_proxy(a.arm, os.path.join(tmp, "g"), origin, binary, wrap=wrap, w=w,
                        forwarding=a.forwarding)
    try:
        n = max(a.requests // 10, 1000)
        h2load(s.port, 200, a.connections, w)
        pid = str(proxy_pid(s))
        subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
        h2load(s.port, n, a.connections, w)
        subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
    finally:
        s.stop(timeout=60)
    files = [f for f in os.listdir(a.out) if f.startswith(os.path.basename(out))]
    path = os.path.join(a.out, sorted(files)[-1])
    ann = subprocess.run(["callgrind_annotate", path], capture_output=True, text=True).stdout
    m = re.search(r"([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", ann) or \
        re.search(r"([\d,]+)\s+PROGRAM TOTALS", ann)
    total = int(m.group(1).replace(",", "")) if m else 0
    print(f"  instructions/req {total / n:,.0f} (callgrind, {n} requests; {path})")
    top = [ln for ln in ann.splitlines() if re.match(r"\s*[\d,]+ \(", ln)][1:16]
    for ln in top:
        print("    " + ln.strip()[:150])


def workload(a, tmp):
    """The Workload of --workload (its body file written in tmp)."""
    def body(size):
        path = os.path.join(tmp, f"body{size}.bin")
        with open(path, "wb") as f:
            f.write(b"x" * size)
        return path
    if a.workload in ROUTED_WORKLOADS:
        return Workload(ROUTED_WORKLOADS[a.workload], body(APPEND_BYTES))
    if a.workload in ("post1k", "h2c-post1k"):
        return Workload("/post", body(1024), a.mode)
    return Workload("/", None, a.mode, tls=a.workload == "tls-ka",
                    handshakes=a.workload == "tls-hs")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ferry", default="auto", help="ferry binary (default: run.py's lookup)")
    ap.add_argument("--arm", choices=("ferry", "haproxy") + FLOOR_ARMS, default="ferry")
    ap.add_argument("--workload", default="get",
                    choices=("get", "post1k", "tls-ka", "tls-hs") + tuple(H2_WORKLOADS)
                    + tuple(ROUTED_WORKLOADS))
    ap.add_argument("--requests", type=int, default=50000)
    ap.add_argument("--connections", type=int,
                    help="keep-alive connections (default 64; HTTP/2: 8)")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--out", default=os.path.join(run.REPO, "bench", "results", "counts"))
    a = ap.parse_args()
    a.mode = H2_WORKLOADS.get(a.workload)
    if a.connections is None:
        a.connections = 8 if a.mode else 64
    if a.workload in ROUTED_WORKLOADS and a.arm != "ferry":
        sys.exit(f"--workload {a.workload}: ferry only (owner forwarding and routing)")
    if a.arm in FLOOR_ARMS and a.workload in ("h2-tls", "tls-ka", "tls-hs"):
        sys.exit("the floor relay terminates no TLS")
    if a.arm == PARSE_FLOOR_ARM and a.mode:
        sys.exit(f"{PARSE_FLOOR_ARM} parses HTTP/1.1 only")
    for tool in ("perf", "h2load", "cc", "nginx") + (("haproxy",) if a.arm == "haproxy" else ()):
        if not shutil.which(tool):
            sys.exit(f"missing {tool}")
    ferry = run.find_ferry_auto() if a.ferry == "auto" else os.path.abspath(a.ferry)
    binary = ("haproxy" if a.arm == "haproxy" else
              run.find_floor_relay(ferry) if a.arm in FLOOR_ARMS else ferry)
    if not binary:
        sys.exit(f"no {a.arm} binary found")
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="ferry-counts-")
    os.chmod(tmp, 0o755)
    origin = None
    try:
        a.forwarding = None
        if a.workload in ROUTED_WORKLOADS:
            origin = start_streams_origin(tmp)
            a.forwarding = forwarding_config(origin)
        else:
            origin = start_origin(tmp)
        w = workload(a, tmp)
        print(f"binary: {binary}")
        measure_counts(a, tmp, origin, binary, w)
        if a.callgrind:
            measure_callgrind(a, tmp, origin, binary, w)
    finally:
        if origin:
            origin.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
