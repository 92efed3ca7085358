#!/usr/bin/env python3
"""Pass-through benchmark: ferry side by side with HAProxy, nginx, nghttpx and a direct connection.

One shared origin (nginx, 1 worker) on loopback; every proxy runs with ONE worker/thread and
keep-alive to the origin; wrk (1 thread, C keep-alive connections) drives each arm in turn.
Each round runs every arm once per workload, in a freshly shuffled order, so machine noise
(other builds on this shared box) falls on all arms alike. Reported: medians across rounds.

Per run we measure requests/s and p50/p99 latency (wrk), CPU time of the proxy process tree
(utime+stime from /proc/<pid>/stat, summed over the master and its workers), peak RSS
(VmHWM, summed over the same processes), the origin's new connections (stub_status; shows
whether the proxy really reuses upstream connections) and the CPU that foreign processes used
meanwhile (a noise gauge).

HTTP/2 scenarios (--h2, h2bench.py): h2load (8 connections × 8 streams) against separate h2c and
h2-over-TLS instances of HAProxy, nginx, nghttpx, h2o and ferry, measured the same way.

stdlib only. See bench/README.md.
"""

import argparse
import datetime
import hashlib
import json
import ssl
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench"))
import benchlib  # noqa: E402  (bench/benchlib.py)
from benchlib import Server, free_port  # noqa: E402
sys.path.insert(0, HERE)
import h2bench  # noqa: E402  (bench/passthrough/h2bench.py: the HTTP/2 scenarios' own parts)
from h2bench import H2_ARMS, H2_MODE, H2_WORKLOADS  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

RESPONSE_BODY = "ferry-bench-origin: hello from the upstream, 64 bytes of body..\n"
assert len(RESPONSE_BODY) == 64
POST_BYTES = 1024

ARM_ORDER = ["direct", "haproxy", "nginx", "nghttpx", "ferry"]
WORKLOADS = {
    "get": "GET / (64-byte response)",
    "post1k": "POST /post with a 1 KiB body (64-byte response)",
}
# HTTP/1.1 over TLS on the client side (the proxy terminates TLS; the origin stays plain HTTP).
# Run against separate TLS-terminating instances of the proxies, so the plain arms' figures
# (CPU, peak RSS) are those of proxies without a TLS context, as before.
TLS_WORKLOADS = {
    "tls-ka": "GET / over TLS, keep-alive (handshakes only at connect)",
    "tls-hs": "GET / over TLS with `Connection: close`: one TLS handshake per request",
}
TLS_ARMS = ["haproxy", "nginx", "ferry"]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- /proc helpers

def read_stat(pid):
    """(ppid, utime+stime ticks) or None if the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    rest = data[data.rindex(")") + 2:].split()
    # rest[0] is field 3 (state); utime/stime are fields 14/15.
    return int(rest[1]), int(rest[11]) + int(rest[12])


def cpu_ticks(pids):
    total = 0
    for p in pids:
        st = read_stat(p)
        if st:
            total += st[1]
    return total


def vm_hwm_kib(pids):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def machine_busy_ticks():
    """Busy CPU ticks of the whole machine (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice
    return v[0] + v[1] + v[2] + v[5] + v[6]


def http_get(port, path="/", timeout=2.0):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.status, r.read()


def https_get(port, path="/", timeout=2.0):
    # The bench's self-signed certificate: no verification (the peers do not verify either:
    # wrk never checks the server certificate).
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}", timeout=timeout,
                                context=ctx) as r:
        return r.status, r.read()


def wait_http(port, path="/", timeout=10.0, proc=None, tls=False):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}")
        try:
            st, body = (https_get if tls else http_get)(port, path, timeout=1.0)
            if st == 200:
                return body
            last = f"status {st}"
        except Exception as e:  # noqa: BLE001 - any failure means "not ready yet"
            last = repr(e)
        time.sleep(0.1)
    raise RuntimeError(f"127.0.0.1:{port}{path} not ready: {last}")


def tool_version(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
        return (r.stdout + r.stderr).strip().splitlines()[0]
    except Exception as e:  # noqa: BLE001
        return f"unknown ({e})"


# ----------------------------------------------------------------------------- servers

def nginx_user_line():
    # As root, nginx workers would switch to "nobody" and then fail on our 0700 temp dir.
    return "user root;" if os.geteuid() == 0 else ""


def nginx_common(prefix):
    for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(prefix, d), exist_ok=True)
    return f"""
    {nginx_user_line()}
    daemon off;
    master_process on;
    worker_processes 1;
    pid {prefix}/nginx.pid;
    error_log {prefix}/error.log warn;
    events {{ worker_connections 4096; multi_accept on; }}
    """, f"""
        access_log off;
        client_body_temp_path {prefix}/client_body;
        proxy_temp_path {prefix}/proxy;
        fastcgi_temp_path {prefix}/fastcgi;
        uwsgi_temp_path {prefix}/uwsgi;
        scgi_temp_path {prefix}/scgi;
        keepalive_timeout 300s;
        keepalive_requests 100000000;
    """


def start_origin(tmp):
    """nginx, 1 worker: GET / -> 200 + 64 bytes; POST /post reads (discards) the body -> 200."""
    prefix = os.path.join(tmp, "origin")
    os.makedirs(prefix)
    port, status_port = free_port(), free_port()
    main, http_common = nginx_common(prefix)
    conf = f"""{main}
    http {{
        {http_common}
        default_type text/plain;
        server {{
            listen 127.0.0.1:{port} backlog=4096;
            # `return` answers via ngx_http_send_response(), which first calls
            # ngx_http_discard_request_body(): the 1 KiB body is read off the socket and
            # dropped, so keep-alive continues. run.py verifies this at start-up.
            location / {{ return 200 "{RESPONSE_BODY.rstrip()}\\n"; }}
            location = /post {{ client_max_body_size 1m; return 200 "{RESPONSE_BODY.rstrip()}\\n"; }}
        }}
        server {{
            listen 127.0.0.1:{status_port};
            location = /status {{ stub_status; }}
        }}
    }}
    """
    path = os.path.join(prefix, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    s = Server("origin", ["nginx", "-p", prefix, "-e", f"{prefix}/error.log", "-c", path], prefix)
    s.port = port
    s.status_port = status_port
    wait_http(port, proc=s.proc)
    body = wait_http(port, "/post", proc=s.proc)
    assert body.decode() == RESPONSE_BODY, body
    verify_post_keepalive(port)
    return s


def origin_accepts(origin):
    _, body = http_get(origin.status_port, "/status")
    m = re.search(r"\n\s*(\d+)\s+(\d+)\s+(\d+)", body.decode())
    return int(m.group(1))  # accepted connections since start


def verify_post_keepalive(port):
    """Two 1 KiB POSTs on one connection must both get 200: proves the origin consumes bodies."""
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    body = b"x" * POST_BYTES
    req = (f"POST /post HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
           "Content-Type: application/octet-stream\r\n\r\n").encode() + body
    s.sendall(req + req)
    data = b""
    deadline = time.time() + 3
    while data.count(b"HTTP/1.1 200") < 2 and time.time() < deadline:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    if data.count(b"HTTP/1.1 200") != 2:
        raise RuntimeError(f"origin did not answer two pipelined POSTs: {data[:300]!r}")


def make_cert(tmp):
    """Self-signed ECDSA P-256 certificate for 127.0.0.1/localhost, made with the openssl CLI.

    Returns {"cert", "key", "pem"} (pem = chain + key in one file, as HAProxy's `crt` wants)."""
    d = os.path.join(tmp, "tls")
    os.makedirs(d, exist_ok=True)
    cert, key, pem = (os.path.join(d, n) for n in ("bench.crt", "bench.key", "bench.pem"))
    if os.path.exists(pem):  # made already for the other TLS scenarios: one certificate for all
        return {"cert": cert, "key": key, "pem": pem}
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    with open(pem, "w") as f:
        f.write(open(cert).read() + open(key).read())
    return {"cert": cert, "key": key, "pem": pem}


def instance_dir(tmp, arm, tls, h2):
    """tmp/<arm>[-tls|-h2c|-h2tls]: one directory per proxy instance."""
    return os.path.join(tmp, f"{arm}-{h2}" if h2 else (f"{arm}-tls" if tls else arm))


def start_haproxy(tmp, up, tls=None, h2=None):
    d = instance_dir(tmp, "haproxy", tls, h2)
    os.makedirs(d)
    port = free_port()
    conf = f"""
global
    nbthread 1
    maxconn 4096{haproxy_stats_socket(d, tls and not h2)}

defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 300s
    timeout server 300s
    timeout http-keep-alive 300s

frontend fe
    bind 127.0.0.1:{port}{haproxy_bind_tls(tls, h2)}
    default_backend be

backend be
    server origin 127.0.0.1:{up}
"""
    path = os.path.join(d, "haproxy.cfg")
    with open(path, "w") as f:
        f.write(conf)
    # -db: foreground, no master-worker: one process, one thread.
    s = Server("haproxy", ["haproxy", "-db", "-f", path], d)
    s.port = port
    return s


def haproxy_stats_socket(d, tls):
    # TLS instance only: `show info` gives SslFrontendSessionReuse_pct (resumption rate).
    return f"\n    stats socket {d}/admin.sock" if tls else ""


def haproxy_reuse_pct(server):
    """HAProxy's SslFrontendSessionReuse_pct (over its last second) from the stats socket."""
    try:
        c = socket.socket(socket.AF_UNIX)
        c.settimeout(2)
        c.connect(os.path.join(server.workdir, "admin.sock"))
        c.sendall(b"show info\n")
        data = b""
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        c.close()
        m = re.search(rb"SslFrontendSessionReuse_pct: (\d+)", data)
        return int(m.group(1)) if m else None
    except OSError:
        return None


def haproxy_bind_tls(tls, h2=None):
    # Session tickets are on by default in HAProxy (and its session-id cache for TLS 1.2).
    # h2c: `proto h2` (HTTP/2 with prior knowledge only on that bind); h2 over TLS by ALPN.
    if h2 == "h2c":
        return " proto h2"
    alpn = "h2,http/1.1" if h2 else "http/1.1"
    return (f" ssl crt {tls['pem']} alpn {alpn} ssl-min-ver TLSv1.2" if tls else "")


def nginx_listen_tls(tls):
    if not tls:
        return ""
    # nginx: tickets on (its default); no shared session cache, like ferry (tickets only).
    return f"""
            ssl_certificate {tls['cert']};
            ssl_certificate_key {tls['key']};
            ssl_protocols TLSv1.2 TLSv1.3;
            ssl_session_tickets on;"""


def start_nginx_proxy(tmp, up, tls=None, h2=None):
    prefix = instance_dir(tmp, "nginx", tls, h2)
    os.makedirs(prefix)
    port = free_port()
    main, http_common = nginx_common(prefix)
    conf = f"""{main}
    http {{
        {http_common}
        upstream origin {{
            server 127.0.0.1:{up};
            keepalive 64;
            keepalive_requests 100000000;
            keepalive_timeout 300s;
        }}
        server {{
            listen 127.0.0.1:{port}{" ssl" if tls else ""}{" http2" if h2 else ""} backlog=4096;{nginx_listen_tls(tls)}
            location / {{
                proxy_pass http://origin;
                proxy_http_version 1.1;
                proxy_set_header Connection "";
            }}
        }}
    }}
    """
    path = os.path.join(prefix, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    s = Server("nginx", ["nginx", "-p", prefix, "-e", f"{prefix}/error.log", "-c", path], prefix)
    s.port = port
    return s


def start_nghttpx(tmp, up, tls=None, h2=None):
    d = instance_dir(tmp, "nghttpx", tls, h2)
    os.makedirs(d)
    port = free_port()
    # Cleartext frontend: HTTP/1.1 and h2c with prior knowledge on the same port; TLS frontend:
    # ALPN h2 (its default list), key and certificate as the two positional arguments.
    argv = ["nghttpx", "--conf=/dev/null", "--workers=1",
            f"--frontend=127.0.0.1,{port}" + ("" if tls else ";no-tls"),
            f"--backend=127.0.0.1,{up};;proto=http/1.1",
            "--backend-keep-alive-timeout=300s", "--frontend-keep-alive-timeout=300s",
            f"--pid-file={d}/nghttpx.pid", f"--errorlog-file={d}/error.log"]
    if tls:
        argv += [tls["key"], tls["cert"]]
    s = Server("nghttpx", argv, d)
    s.port = port
    return s


def ferry_listener_tls(tls, h2=None):
    if not tls:
        return ""
    # ferry's defaults spelled out: TLS 1.2 at least, ALPN http/1.1 (h2 instance: h2 first),
    # session tickets on.
    return f"""  tls:
    cert_file: {tls['cert']}
    key_file: {tls['key']}
    min_version: "1.2"
    alpn: [{"h2, " if h2 else ""}http/1.1]
    session_tickets: true
"""


def ferry_listener_h2(h2):
    # HTTP/2 on the listener: h2c by its preface on cleartext, h2 by ALPN on TLS; the other
    # listener.http2 keys (max_concurrent_streams, initial_stream_window_bytes) at their defaults.
    return "  http2: {enabled: true}\n" if h2 else ""


def start_ferry(tmp, up, binary, tls=None, h2=None):
    d = instance_dir(tmp, "ferry", tls, h2)
    os.makedirs(d)
    listener = ("listener: {address: 127.0.0.1, port: 0}\n" if not (tls or h2) else
                "listener:\n  address: 127.0.0.1\n  port: 0\n" + ferry_listener_tls(tls, h2)
                + ferry_listener_h2(h2))
    conf = f"""instance_name: bench-1
{listener}local_instance: {{address: 127.0.0.1, port: {up}}}
admin: {{address: 127.0.0.1, port: 0}}
workers: 1
forwarding: {{enabled: false}}
"""
    path = os.path.join(d, "ferry.yaml")
    with open(path, "w") as f:
        f.write(conf)
    s = Server("ferry", [binary, "--config", path], d, stdout=subprocess.PIPE)
    ready = {}

    def reader():
        out = open(os.path.join(d, "ferry.stdout"), "wb")
        for line in s.proc.stdout:
            out.write(line)
            out.flush()
            m = re.search(rb"ferry ready listener=[^:\s]+:(\d+) admin=[^:\s]+:(\d+)", line)
            if m and not ready:
                ready["listener"], ready["admin"] = int(m.group(1)), int(m.group(2))
        out.close()

    threading.Thread(target=reader, daemon=True).start()
    deadline = time.time() + 15
    while not ready and time.time() < deadline and s.alive():
        time.sleep(0.05)
    if not ready:
        s.stop()
        raise RuntimeError(f"no ready line from ferry; log:\n{s.log_tail()}")
    s.port = ready["listener"]
    s.admin_port = ready["admin"]
    return s


# ----------------------------------------------------------------------------- load

WRK_DONE = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"err_connect":%d,"err_read":%d,' ..
    '"err_write":%d,"err_status":%d,"err_timeout":%d,"p50_us":%.1f,"p90_us":%.1f,' ..
    '"p99_us":%.1f,"p999_us":%.1f,"max_us":%.1f,"mean_us":%.2f}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean))
end
"""


def write_wrk_scripts(tmp):
    scripts = {}
    get = 'wrk.method = "GET"\nwrk.path = "/"\n' + WRK_DONE
    post = ('wrk.method = "POST"\nwrk.path = "/post"\n'
            f'wrk.body = string.rep("x", {POST_BYTES})\n'
            'wrk.headers["Content-Type"] = "application/octet-stream"\n' + WRK_DONE)
    # Connection: close makes every proxy close after the response (RFC 9112 §9.6), so wrk
    # reconnects: one TCP connect and one TLS handshake per request. wrk keeps the SSL object's
    # session across reconnects (SSL_clear), so it offers resumption when the server sent a ticket.
    close = ('wrk.method = "GET"\nwrk.path = "/"\nwrk.headers["Connection"] = "close"\n'
             + WRK_DONE)
    for name, text in (("get", get), ("post1k", post), ("tls-ka", get), ("tls-hs", close)):
        p = os.path.join(tmp, f"wrk_{name}.lua")
        with open(p, "w") as f:
            f.write(text)
        scripts[name] = p
    return scripts


def run_wrk(port, script, duration, connections, timeout_s=5, tls=False):
    scheme = "https" if tls else "http"
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", f"--timeout={timeout_s}s",
            "--latency", "-s", script, f"{scheme}://127.0.0.1:{port}/"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    m = re.search(r"WRKJSON (\{.*\})", out)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"wrk failed ({p.returncode}):\n{out}")
    r = json.loads(m.group(1))
    r["wrk_cpu_s"] = ru.ru_utime + ru.ru_stime
    return r


def measure(arm, servers, origin, port, script, duration, connections, tls=False, load=None):
    """One run against `arm`. `load` (a callable returning run_wrk's fields) replaces wrk, e.g.
    h2load for the HTTP/2 scenarios."""
    proxy = servers.get(arm)
    ppids = proxy.pids() if proxy else []
    opids = origin.pids()
    acc0 = origin_accepts(origin)
    busy0 = machine_busy_ticks()
    c0, o0 = cpu_ticks(ppids), cpu_ticks(opids)
    t0 = time.monotonic()
    w = load() if load else run_wrk(port, script, duration, connections, tls=tls)
    wall = time.monotonic() - t0
    c1, o1 = cpu_ticks(ppids), cpu_ticks(opids)
    busy1 = machine_busy_ticks()
    acc1 = origin_accepts(origin) - 1  # minus our own stub_status connection
    n = max(w["requests"], 1)
    proxy_cpu_s = (c1 - c0) / CLK_TCK
    origin_cpu_s = (o1 - o0) / CLK_TCK
    foreign_s = (busy1 - busy0) / CLK_TCK - proxy_cpu_s - origin_cpu_s - w["wrk_cpu_s"]
    errors = sum(v for k, v in w.items() if k.startswith("err_"))
    return {
        "arm": arm,
        "requests": w["requests"],
        "rps": w["requests"] / (w["duration_us"] / 1e6),
        "p50_ms": w["p50_us"] / 1000, "p90_ms": w["p90_us"] / 1000,
        "p99_ms": w["p99_us"] / 1000, "p999_ms": w["p999_us"] / 1000,
        "max_ms": w["max_us"] / 1000,
        "errors": errors,
        "error_detail": {k: w[k] for k in w if k.startswith("err_")},
        "proxy_cpu_s": proxy_cpu_s if proxy else None,
        "cpu_us_per_req": proxy_cpu_s * 1e6 / n if proxy else None,
        "proxy_rss_kib": vm_hwm_kib(ppids) if proxy else None,
        "proxy_pids": ppids,
        "origin_cpu_us_per_req": origin_cpu_s * 1e6 / n,
        "wrk_cpu_us_per_req": w["wrk_cpu_s"] * 1e6 / n,
        "origin_new_conns": acc1 - acc0,
        **({"h2load_tail": w["h2load_tail"]} if w.get("h2load_tail") else {}),
        **({"protocol": w["protocol"]} if "protocol" in w else {}),
        "foreign_cores": max(foreign_s, 0.0) / wall,
        "wall_s": wall,
    }


# ----------------------------------------------------------------------------- report

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize(runs, arms, workloads):
    """Medians per (workload, arm) plus paired per-round ratios vs haproxy and direct."""
    summary = {}
    for wl in workloads:
        summary[wl] = {}
        by_round = {}
        for r in runs:
            if r["workload"] == wl:
                by_round.setdefault(r["round"], {})[r["arm"]] = r
        for arm in arms:
            rs = [r for r in runs if r["workload"] == wl and r["arm"] == arm]
            if not rs:
                continue
            s = {
                "rounds": len(rs),
                "rps": med([r["rps"] for r in rs]),
                "p50_ms": med([r["p50_ms"] for r in rs]),
                "p99_ms": med([r["p99_ms"] for r in rs]),
                "cpu_us_per_req": med([r["cpu_us_per_req"] for r in rs]),
                "cpu_us_per_req_min": min((r["cpu_us_per_req"] for r in rs
                                           if r["cpu_us_per_req"] is not None), default=None),
                "cpu_us_per_req_max": max((r["cpu_us_per_req"] for r in rs
                                           if r["cpu_us_per_req"] is not None), default=None),
                "peak_rss_mib": (max(r["proxy_rss_kib"] for r in rs) / 1024
                                 if rs[0]["proxy_rss_kib"] is not None else None),
                "origin_cpu_us_per_req": med([r["origin_cpu_us_per_req"] for r in rs]),
                "wrk_cpu_us_per_req": med([r["wrk_cpu_us_per_req"] for r in rs]),
                "origin_new_conns": med([r["origin_new_conns"] for r in rs]),
                "errors": sum(r["errors"] for r in rs),
                "foreign_cores": med([r["foreign_cores"] for r in rs]),
            }
            # Paired ratios: same round, so the same machine weather; median over rounds.
            for base in ("haproxy", "direct"):
                for key in ("rps", "p99_ms", "cpu_us_per_req"):
                    vals = []
                    for rnd, arms_in_round in by_round.items():
                        a, b = arms_in_round.get(arm), arms_in_round.get(base)
                        if a and b and a[key] is not None and b[key]:
                            vals.append(a[key] / b[key])
                    s[f"{key}_vs_{base}"] = med(vals)
            if wl in TLS_WORKLOADS or wl in H2_WORKLOADS:
                # ferry ÷ the best (lowest CPU/req) of the other proxies in the same round.
                vals = []
                for arms_in_round in by_round.values():
                    a = arms_in_round.get(arm)
                    peers = [r["cpu_us_per_req"] for p, r in arms_in_round.items()
                             if p != arm and p != "direct" and r["cpu_us_per_req"]]
                    if a and a["cpu_us_per_req"] is not None and peers:
                        vals.append(a["cpu_us_per_req"] / min(peers))
                s["cpu_us_per_req_vs_best_peer"] = med(vals)
            summary[wl][arm] = s
    return summary


def fmt(v, spec):
    return "–" if v is None else format(v, spec)


def render_markdown(meta, summary, arms):
    lines = []
    lines.append(f"## Pass-through results — {meta['date']}")
    lines.append("")
    lines.append(
        f"Machine: {meta['cores']} cores ({meta['cpu_model']}), kernel {meta['kernel']}; "
        f"wrk 1 thread, {meta['connections']} keep-alive connections, "
        f"{meta['duration_s']} s per run, {meta['rounds']} interleaved rounds "
        f"(median shown); load average {meta['loadavg_start']} → {meta['loadavg_end']}.")
    if meta.get("ferry_note"):
        lines.append("")
        lines.append(f"**ferry:** {meta['ferry_note']}")
    for wl, desc in WORKLOADS.items():
        if wl not in summary:
            continue
        lines.append("")
        lines.append(f"### {wl}: {desc}")
        lines.append("")
        lines.append("| arm | req/s | p50 ms | p99 ms | proxy CPU µs/req (min–max) | peak RSS MiB "
                     "| CPU/req ÷ HAProxy | req/s ÷ HAProxy | req/s ÷ direct | p99 ÷ direct "
                     "| origin conns/run | errors |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for arm in arms:
            s = summary[wl].get(arm)
            if not s:
                continue
            name, cpu = arm_cells(arm, s)
            lines.append(
                f"| {name} | {s['rps']:,.0f} | {s['p50_ms']:.2f} | {s['p99_ms']:.2f} | {cpu} "
                f"| {fmt(s['peak_rss_mib'], '.1f')} | {fmt(s['cpu_us_per_req_vs_haproxy'], '.2f')} "
                f"| {fmt(s['rps_vs_haproxy'], '.2f')} | {fmt(s['rps_vs_direct'], '.2f')} "
                f"| {fmt(s['p99_ms_vs_direct'], '.2f')} | {s['origin_new_conns']:.0f} "
                f"| {s['errors']} |")
        d = summary[wl].get("direct")
        fc = med([s["foreign_cores"] for s in summary[wl].values()])
        if d:
            lines.append("")
            lines.append(
                f"Load generator: wrk spent {d['wrk_cpu_us_per_req']:.1f} µs CPU/req on the "
                f"direct arm (its own ceiling ≈ {1e6 / d['wrk_cpu_us_per_req']:,.0f} req/s on "
                f"one core); origin {d['origin_cpu_us_per_req']:.1f} µs/req. "
                f"Foreign CPU during runs (other jobs on the box): median {fc:.2f} cores.")
    lines.extend(render_tls_markdown(meta, summary, arms))
    lines.extend(render_h2_markdown(meta, summary))
    for name, why in meta.get("arm_failures", {}).items():
        lines.append("")
        lines.append(f"**{name} did not start:** `{why[:600]}`")
    head = []
    for wl in summary:
        if wl in TLS_WORKLOADS or wl in H2_WORKLOADS:
            continue
        f, h = summary[wl].get("ferry"), summary[wl].get("haproxy")
        if f and h and f.get("cpu_us_per_req_vs_haproxy") is not None:
            head.append(f"{wl} {f['cpu_us_per_req_vs_haproxy']:.2f}")
    lines.append("")
    if head:
        lines.append("**Headline — ferry CPU µs/req ÷ HAProxy (goal < 1.0): "
                     + ", ".join(head) + "**")
    elif not any(wl in summary for wl in WORKLOADS):
        pass  # --tls only / --h2 only: no plain workloads ran
    else:
        lines.append("**Headline — ferry CPU µs/req ÷ HAProxy: not measured (no ferry arm).**")
    lines.append("")
    lines.append("Versions: " + "; ".join(f"{k}: {v}" for k, v in meta["versions"].items()))
    return "\n".join(lines) + "\n"


def arm_cells(arm, s):
    """The arm's name (ferry in bold) and its "CPU µs/req (min–max)" cell, for both tables."""
    cpu = (f"{s['cpu_us_per_req']:.1f} ({s['cpu_us_per_req_min']:.1f}–"
           f"{s['cpu_us_per_req_max']:.1f})" if s["cpu_us_per_req"] is not None else "–")
    return (f"**{arm}**" if arm == "ferry" else arm), cpu


def peer_table(arms, rows, mark_errors=False):
    """The TLS and HTTP/2 scenarios' table (markdown lines): one row per arm of `arms` that ran,
    with CPU per request against HAProxy and against the best other peer. `mark_errors`: a row
    whose run had errors says it is invalid."""
    lines = ["| arm | req/s | p50 ms | p99 ms | proxy CPU µs/req (min–max) | peak RSS MiB "
             "| CPU/req ÷ HAProxy | CPU/req ÷ best other | origin conns/run | errors |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for arm in arms:
        s = rows.get(arm)
        if not s:
            continue
        name, cpu = arm_cells(arm, s)
        err = f"**{s['errors']} (row invalid)**" if mark_errors and s["errors"] else s["errors"]
        lines.append(
            f"| {name} | {s['rps']:,.0f} | {s['p50_ms']:.2f} | {s['p99_ms']:.2f} | {cpu} "
            f"| {fmt(s['peak_rss_mib'], '.1f')} | {fmt(s['cpu_us_per_req_vs_haproxy'], '.2f')} "
            f"| {fmt(s.get('cpu_us_per_req_vs_best_peer'), '.2f')} "
            f"| {s['origin_new_conns']:.0f} | {err} |")
    return lines


def ferry_vs_best_peer(summary, workloads):
    """["<workload> <ferry CPU/req ÷ best peer>", ...] for the headline lines."""
    head = []
    for wl in workloads:
        f = summary[wl].get("ferry")
        if f and f.get("cpu_us_per_req_vs_best_peer") is not None:
            head.append(f"{wl} {f['cpu_us_per_req_vs_best_peer']:.2f}")
    return head


def render_h2_markdown(meta, summary):
    wls = [wl for wl in H2_WORKLOADS if wl in summary]
    if not wls:
        return []
    lines = ["", "### HTTP/2 on the client side (origin HTTP/1.1 keep-alive)", "",
             f"h2load (1 thread, {meta['h2_connections']} connections × {meta['h2_streams']} "
             f"concurrent streams, {meta['duration_s']} s per run, no h2load warm-up) against a "
             f"separate h2c instance and h2-over-TLS instance of each proxy (one worker each); "
             f"h2-tls uses the TLS scenarios' certificate and negotiates h2 by ALPN (h2load "
             f"offers only h2). Latency: h2load's per-request log (request sent → response end)."]
    for wl in wls:
        lines.append("")
        lines.append(f"#### {wl}: {H2_WORKLOADS[wl]}")
        lines.append("")
        lines.extend(peer_table(H2_ARMS, summary[wl], mark_errors=True))
        fc = med([s["foreign_cores"] for s in summary[wl].values()])
        lg = med([s["wrk_cpu_us_per_req"] for s in summary[wl].values()])
        lines.append("")
        lines.append(f"h2load's own CPU: median {fmt(lg, '.1f')} µs/req. Foreign CPU during runs "
                     f"(other jobs on the box): median {fmt(fc, '.2f')} cores.")
    head = ferry_vs_best_peer(summary, wls)
    lines.append("")
    lines.append("**HTTP/2 headline — ferry CPU µs/req ÷ best of HAProxy/nginx/nghttpx/h2o "
                 "(goal ≤ 1.0): " + (", ".join(head) if head else "not measured (no ferry "
                                     "HTTP/2 arm)") + "**")
    return lines


def render_tls_markdown(meta, summary, arms):
    tls_wls = [wl for wl in TLS_WORKLOADS if wl in summary]
    if not tls_wls:
        return []
    lines = ["", "### HTTP/1.1 over TLS (client side; origin plain HTTP)", "",
             f"Each proxy terminates TLS with the same self-signed ECDSA P-256 certificate "
             f"(openssl CLI), TLS 1.2 minimum, TLS 1.3 negotiated (wrk's OpenSSL default), session "
             f"tickets on in all three (their default; no server-side session cache in nginx or "
             f"ferry; HAProxy keeps its default one). Separate TLS-only instances of each proxy "
             f"(one worker each), so the plain-HTTP arms' figures are unaffected."]
    for wl in tls_wls:
        lines.append("")
        lines.append(f"#### {wl}: {TLS_WORKLOADS[wl]}")
        lines.append("")
        lines.extend(peer_table(TLS_ARMS, summary[wl]))
        fc = med([s["foreign_cores"] for s in summary[wl].values()])
        lines.append("")
        lines.append(f"Foreign CPU during runs (other jobs on the box): median {fc:.2f} cores.")
        res = meta.get("ferry_tls_handshakes", {}).get(wl)
        if res:
            lines.append(f"ferry's TLS handshakes in these runs: {res}.")
        hp = meta.get("haproxy_reuse_pct", {}).get(wl)
        if hp is not None:
            lines.append(f"HAProxy's SslFrontendSessionReuse_pct at the end of its runs "
                         f"(median): {hp:.0f} %.")
    head = ferry_vs_best_peer(summary, tls_wls)
    lines.append("")
    if head:
        lines.append("**TLS headline — ferry CPU µs/req ÷ best of HAProxy/nginx (goal ≤ 1.0): "
                     + ", ".join(head) + "**")
    return lines


# ----------------------------------------------------------------------------- main

def save_ferry_stats(server, out_dir, name):
    """Keeps a ferry instance's final /stats as out_dir/name (nothing when it did not run)."""
    if server is None:
        return
    try:
        _, stats = http_get(server.admin_port, "/stats")
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(stats)
    except Exception as e:  # noqa: BLE001
        log(f"ferry /stats for {name}: {e}")


def ferry_tls_counts(server):
    """ferry's listener handshake counters (completed, resumed) from its admin /stats."""
    _, body = http_get(server.admin_port, "/stats")
    text = body.decode(errors="replace")

    def val(pattern):
        m = re.search(pattern + r"\s+([0-9.e+]+)", text)
        return int(float(m.group(1))) if m else 0
    return {"ok": val(r'ferry_downstream_tls_handshakes_total\{outcome="ok"\}'),
            "resumed": val(r"ferry_downstream_tls_resumed_handshakes_total")}


def find_ferry_auto():
    import glob
    cands = sorted(glob.glob(os.path.join(REPO, "build*", "proxy", "server", "ferry")),
                   key=os.path.getmtime, reverse=True)
    return cands[0] if cands else None


def serve_origin(arm=None):
    """Start the origin (and optionally one of the reference proxies) and wait for a signal."""
    tmp = tempfile.mkdtemp(prefix="ferry-bench-origin-")
    os.chmod(tmp, 0o755)
    origin, proxy = None, None
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        origin = start_origin(tmp)
        print(f"origin ready port={origin.port}", flush=True)
        if arm:
            starter = {"haproxy": start_haproxy, "nginx": start_nginx_proxy,
                       "nghttpx": start_nghttpx}[arm]
            proxy = starter(tmp, origin.port)
            wait_http(proxy.port, proc=proxy.proc)
            time.sleep(0.3)
            pids = ",".join(str(p) for p in proxy.pids())
            print(f"proxy ready arm={arm} port={proxy.port} pids={pids}", flush=True)
        while not stop.is_set() and origin.alive():
            stop.wait(0.5)
    finally:
        if proxy:
            proxy.stop()
        if origin:
            origin.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ferry", help="path to the ferry binary, or 'auto' to pick the newest "
                    "build*/proxy/server/ferry; without it the ferry arm is skipped")
    ap.add_argument("--duration", type=int, default=10,
                    help="whole seconds per run (wrk takes whole seconds; default 10)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--connections", type=int, default=32, help="wrk keep-alive connections")
    ap.add_argument("--warmup", type=int, default=2, help="seconds of discarded warm-up per "
                    "arm and workload before round 1 (default 2)")
    ap.add_argument("--quick", action="store_true",
                    help="short run (~1.5 min): 3 rounds of 3 s, 1 s warm-up")
    ap.add_argument("--arms", default=",".join(ARM_ORDER + ["h2o"]),
                    help="comma list of arms (default all: %(default)s; h2o runs only in the "
                    "HTTP/2 scenarios)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma list: get,post1k")
    ap.add_argument("--tls", choices=("on", "off", "only"), default="on",
                    help="HTTP/1.1 over TLS scenarios tls-ka (keep-alive) and tls-hs (one "
                    "handshake per request) against TLS-terminating HAProxy, nginx and ferry: "
                    "on (default, after the plain workloads), off, or only")
    ap.add_argument("--h2", choices=("on", "off", "only"), default="on",
                    help="HTTP/2 scenarios (h2c, h2c-post1k, h2-tls: h2load against h2-"
                    "terminating HAProxy, nginx, nghttpx, h2o and ferry, HTTP/1.1 to the "
                    "origin): on (default, after the others), off, or only. `--tls only` "
                    "without `--h2 only` leaves them out, as `--h2 only` leaves out the "
                    "HTTP/1.1 ones")
    ap.add_argument("--h2-workloads", default=None,
                    help="comma list of HTTP/2 scenarios (default: " + ",".join(H2_WORKLOADS)
                    + "; with --quick: h2c only, so that bench/run.sh --quick stays short)")
    ap.add_argument("--h2-connections", type=int, default=8,
                    help="h2load connections (default 8)")
    ap.add_argument("--h2-streams", type=int, default=8,
                    help="h2load concurrent streams per connection (default 8)")
    ap.add_argument("--require-h2-arms", default="",
                    help="comma list of arms whose HTTP/2 instances must start and run without "
                    "errors, or run.py exits 1 (the ctest smoke uses it)")
    ap.add_argument("--seed", type=int, default=None, help="shuffle seed (default: time)")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"),
                    help="output dir (default bench/results/)")
    ap.add_argument("--keep-tmp", action="store_true", help="keep configs and logs")
    ap.add_argument("--serve-origin", action="store_true",
                    help="only start the origin (and, with --arms haproxy|nginx|nghttpx, that "
                    "proxy), print ready lines and wait for SIGTERM/SIGINT (for profile.sh)")
    a = ap.parse_args()
    if a.serve_origin:
        arm = a.arms if a.arms in ("haproxy", "nginx", "nghttpx") else None
        return serve_origin(arm)
    if a.quick:
        a.duration, a.rounds, a.warmup = 3, 3, 1
    seed = a.seed if a.seed is not None else int(time.time())
    rng = random.Random(seed)

    for tool in ("wrk", "nginx", "haproxy", "nghttpx"):
        if not shutil.which(tool):
            sys.exit(f"missing {tool}: apt-get install wrk nginx-light haproxy nghttp2-proxy")

    arms = [x for x in a.arms.split(",") if x]
    # Families: plain HTTP/1.1, HTTP/1.1 over TLS, HTTP/2. An `only` keeps its own family
    # (both `only`: both families).
    only = {f for f, v in (("tls", a.tls), ("h2", a.h2)) if v == "only"}
    workloads = [x for x in a.workloads.split(",") if x] if not only else []
    tls_workloads = (list(TLS_WORKLOADS) if a.tls != "off" and (not only or "tls" in only)
                     else [])
    if a.h2_workloads is None:
        a.h2_workloads = "h2c" if a.quick else ",".join(H2_WORKLOADS)
    h2_workloads = ([x for x in a.h2_workloads.split(",") if x]
                    if a.h2 != "off" and (not only or "h2" in only) else [])
    for wl in h2_workloads:
        if wl not in H2_WORKLOADS:
            sys.exit(f"--h2-workloads: unknown {wl} (known: {', '.join(H2_WORKLOADS)})")
    if h2_workloads:
        for tool in ("h2load", "nghttp", "h2o"):
            if not shutil.which(tool):
                sys.exit(f"missing {tool} (HTTP/2 scenarios): apt-get install nghttp2-client "
                         "h2o, or --h2 off")
    if any(H2_MODE[wl] == "h2tls" for wl in h2_workloads) and not shutil.which("openssl"):
        sys.exit("missing openssl (h2-tls makes its certificate with it): apt-get install "
                 "openssl, or --h2-workloads h2c,h2c-post1k")
    if tls_workloads and not shutil.which("openssl"):
        sys.exit("missing openssl (the TLS scenarios make their certificate with it): "
                 "apt-get install openssl, or --tls off")
    ferry_note = None
    ferry_bin = a.ferry
    if ferry_bin == "auto":
        ferry_bin = find_ferry_auto()
        if not ferry_bin:
            ferry_note = "no build*/proxy/server/ferry found; ferry arm skipped."
    if "ferry" in arms and not ferry_bin:
        arms.remove("ferry")
        ferry_note = ferry_note or "no --ferry given; ferry arm skipped."
    elif ferry_bin:
        if not os.access(ferry_bin, os.X_OK):
            sys.exit(f"--ferry {ferry_bin}: not an executable")
        ferry_bin = os.path.abspath(ferry_bin)
        st = os.stat(ferry_bin)
        ferry_note = (f"{ferry_bin} (built {time.strftime('%Y-%m-%d %H:%M', time.localtime(st.st_mtime))})")
    if ferry_note and "skipped" in ferry_note:
        log(ferry_note)
    tls_arms = [x for x in TLS_ARMS if x in arms] if tls_workloads else []
    if not tls_arms:
        tls_workloads = []
    # h2o runs only in the HTTP/2 scenarios; --arms may name it.
    h2_arms = [x for x in H2_ARMS if x in arms] if h2_workloads else []
    arms = [x for x in arms if x != "h2o"]
    required_h2 = [x for x in a.require_h2_arms.split(",") if x]
    if not h2_arms:
        h2_workloads = []
    if not workloads:
        arms = []

    tmp = tempfile.mkdtemp(prefix="ferry-bench-")
    os.chmod(tmp, 0o755)
    servers, tls_servers, origin = {}, {}, None
    h2_servers = {"h2c": {}, "h2tls": {}}  # mode -> arm -> Server
    started = time.time()
    meta = {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "cores": os.cpu_count(),
        "cpu_model": next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                           if ln.startswith("model name")), platform.machine()),
        "kernel": platform.release(),
        "connections": a.connections, "duration_s": a.duration, "rounds": a.rounds,
        "warmup_s": a.warmup, "seed": seed,
        "loadavg_start": " ".join(open("/proc/loadavg").read().split()[:3]),
        "ferry_note": ferry_note,
        "versions": {
            "wrk": tool_version(["wrk", "-v"]),
            "nginx": tool_version(["nginx", "-v"]),
            "haproxy": tool_version(["haproxy", "-v"]),
            "nghttpx": tool_version(["nghttpx", "--version"]),
            **({"h2load": tool_version(["h2load", "--version"]),
                "h2o": tool_version(["h2o", "--version"])} if h2_workloads else {}),
        },
        "h2_connections": a.h2_connections, "h2_streams": a.h2_streams,
    }
    runs = []
    try:
        if ferry_bin:
            # Others rebuild the tree while we run: bench a private copy of the binary.
            snap = os.path.join(tmp, "ferry-under-test")
            shutil.copy2(ferry_bin, snap)
            meta["ferry_sha256"] = hashlib.sha256(open(snap, "rb").read()).hexdigest()[:16]
            meta["ferry_note"] = f"{ferry_note}, sha256 {meta['ferry_sha256']}…"
            ferry_bin = snap
        origin = start_origin(tmp)
        log(f"origin nginx on 127.0.0.1:{origin.port} (pids {origin.pids()})")
        scripts = write_wrk_scripts(tmp)
        starters = {"haproxy": start_haproxy, "nginx": start_nginx_proxy,
                    "nghttpx": start_nghttpx}
        for arm in list(arms):
            if arm == "direct":
                continue
            try:
                if arm == "ferry":
                    s = start_ferry(tmp, origin.port, ferry_bin)
                else:
                    s = starters[arm](tmp, origin.port)
                servers[arm] = s
                wait_http(s.port, proc=s.proc)
                body = wait_http(s.port, "/post", proc=s.proc)
                if body.decode() != RESPONSE_BODY:
                    raise RuntimeError(f"unexpected body via {arm}: {body!r}")
                time.sleep(0.3)  # let forked workers settle before listing pids
                log(f"{arm} on 127.0.0.1:{s.port} (pids {s.pids()})")
            except Exception as e:  # noqa: BLE001 - report and carry on with the other arms
                log(f"{arm}: failed to start: {e}")
                if arm in servers:
                    log(servers[arm].log_tail())
                    servers.pop(arm).stop()
                arms.remove(arm)
                meta.setdefault("arm_failures", {})[arm] = str(e)
        ports = {arm: (servers[arm].port if arm != "direct" else origin.port) for arm in arms}
        if tls_workloads:
            tls = make_cert(tmp)
            for arm in list(tls_arms):
                try:
                    if arm == "ferry":
                        s = start_ferry(tmp, origin.port, ferry_bin, tls=tls)
                    else:
                        s = starters[arm](tmp, origin.port, tls=tls)
                    tls_servers[arm] = s
                    wait_http(s.port, proc=s.proc, tls=True)
                    body = wait_http(s.port, "/post", proc=s.proc, tls=True)
                    if body.decode() != RESPONSE_BODY:
                        raise RuntimeError(f"unexpected body via {arm} (TLS): {body!r}")
                    time.sleep(0.3)
                    log(f"{arm} (TLS) on 127.0.0.1:{s.port} (pids {s.pids()})")
                except Exception as e:  # noqa: BLE001 - report and carry on
                    log(f"{arm} (TLS): failed to start: {e}")
                    if arm in tls_servers:
                        log(tls_servers[arm].log_tail())
                        tls_servers.pop(arm).stop()
                    tls_arms.remove(arm)
                    meta.setdefault("arm_failures", {})[f"{arm}-tls"] = str(e)
        tls_ports = {arm: tls_servers[arm].port for arm in tls_arms}
        h2_modes = sorted({H2_MODE[wl] for wl in h2_workloads})
        h2_ports = {m: {} for m in h2_modes}
        post_file = os.path.join(tmp, "post1k.bin")
        if h2_workloads:
            with open(post_file, "wb") as f:
                f.write(b"x" * POST_BYTES)
            tls = make_cert(tmp) if "h2tls" in h2_modes else None
            h2_starters = {**starters, "h2o": lambda t, up, tls=None, h2=None:
                           h2bench.start_h2o(t, up, h2, tls)}
            for mode in h2_modes:
                for arm in h2_arms:
                    try:
                        mtls = tls if mode == "h2tls" else None
                        if arm == "ferry":
                            s = start_ferry(tmp, origin.port, ferry_bin, tls=mtls, h2=mode)
                        else:
                            s = h2_starters[arm](tmp, origin.port, tls=mtls, h2=mode)
                        h2_servers[mode][arm] = s
                        benchlib.wait_tcp(f"127.0.0.1:{s.port}")
                        h2bench.check_h2(s.port, mode, RESPONSE_BODY, post_file, proc=s.proc)
                        time.sleep(0.3)
                        h2_ports[mode][arm] = s.port
                        log(f"{arm} ({mode}) on 127.0.0.1:{s.port} (pids {s.pids()})")
                    except Exception as e:  # noqa: BLE001 - report and carry on
                        log(f"{arm} ({mode}): failed to start: {e}")
                        if arm in h2_servers[mode]:
                            log(h2_servers[mode][arm].log_tail())
                            h2_servers[mode].pop(arm).stop()
                        meta.setdefault("arm_failures", {})[f"{arm}-{mode}"] = str(e)[:3000]
        if "ferry" in servers:
            meta["ferry_version_hint"] = ferry_note

        if a.warmup > 0:
            for wl in workloads:
                for arm in arms:
                    run_wrk(ports[arm], scripts[wl], a.warmup, a.connections)
            for wl in tls_workloads:
                for arm in tls_arms:
                    run_wrk(tls_ports[arm], scripts[wl], a.warmup, a.connections, tls=True)
            for wl in h2_workloads:
                for arm in h2_ports[H2_MODE[wl]]:
                    h2load_run(a, wl, h2_ports[H2_MODE[wl]][arm], tmp, post_file, a.warmup)
            log(f"warm-up done ({a.warmup:g} s per arm and workload)")

        hs_counts = {}
        for rnd in range(1, a.rounds + 1):
            # Plain workloads first in each round (their shuffles as before), then TLS ones.
            plan = [(wl, arms, False) for wl in workloads]
            plan += [(wl, tls_arms, True) for wl in tls_workloads]
            plan += [(wl, list(h2_ports[H2_MODE[wl]]), None) for wl in h2_workloads]
            for wl, wl_arms, is_tls in plan:
                if is_tls is None:  # HTTP/2: h2load against the arm's h2c or h2-TLS instance
                    mode = H2_MODE[wl]
                    order = wl_arms[:]
                    rng.shuffle(order)
                    for arm in order:
                        s = h2_servers[mode][arm]
                        if not s.alive():
                            raise RuntimeError(f"{arm} ({mode}) died; log:\n{s.log_tail()}")
                        port = h2_ports[mode][arm]
                        r = measure(arm, h2_servers[mode], origin, port, None, a.duration,
                                    a.h2_connections, load=lambda p=port, w=wl: h2load_run(
                                        a, w, p, tmp, post_file, a.duration))
                        r.update(round=rnd, workload=wl)
                        runs.append(r)
                        cpu = (f"{r['cpu_us_per_req']:.1f} µs/req" if r["cpu_us_per_req"]
                               is not None else "")
                        log(f"round {rnd}/{a.rounds} {wl:10s} {arm:8s} {r['rps']:9,.0f} req/s "
                            f"p99 {r['p99_ms']:6.2f} ms {cpu}"
                            + (f" ERRORS {r['errors']} {r['error_detail']}" if r["errors"]
                               else ""))
                    continue
                order = wl_arms[:]
                rng.shuffle(order)
                for arm in order:
                    for name, s in list(servers.items()) + list(tls_servers.items()):
                        if not s.alive():
                            raise RuntimeError(f"{name} died; log:\n{s.log_tail()}")
                    hs0 = (ferry_tls_counts(tls_servers["ferry"]) if is_tls and arm == "ferry"
                           else None)
                    r = measure(arm, tls_servers if is_tls else servers, origin,
                                (tls_ports if is_tls else ports)[arm], scripts[wl], a.duration,
                                a.connections, tls=is_tls)
                    r.update(round=rnd, workload=wl)
                    if is_tls and arm == "haproxy" and wl == "tls-hs":
                        r["haproxy_reuse_pct"] = haproxy_reuse_pct(tls_servers["haproxy"])
                    if hs0 is not None:
                        hs1 = ferry_tls_counts(tls_servers["ferry"])
                        r["ferry_tls"] = {k: hs1[k] - hs0[k] for k in hs1}
                        acc = hs_counts.setdefault(wl, {"requests": 0, "ok": 0, "resumed": 0})
                        acc["requests"] += r["requests"]
                        for k in ("ok", "resumed"):
                            acc[k] += r["ferry_tls"][k]
                    runs.append(r)
                    cpu = (f"{r['cpu_us_per_req']:.1f} µs/req" if r["cpu_us_per_req"]
                           is not None else "")
                    log(f"round {rnd}/{a.rounds} {wl:6s} {arm:8s} {r['rps']:9,.0f} req/s "
                        f"p99 {r['p99_ms']:6.2f} ms {cpu}"
                        + (f" ERRORS {r['errors']}" if r["errors"] else ""))

        save_ferry_stats(servers.get("ferry"), a.out, "ferry_stats.txt")
        meta["ferry_tls_handshakes"] = {
            wl: (f"{c['ok']:,} completed ({c['ok'] / max(c['requests'], 1):.3f} per request), "
                 f"{c['resumed']:,} of them resumed ({c['resumed'] / max(c['ok'], 1):.0%})")
            for wl, c in hs_counts.items()}
        save_ferry_stats(tls_servers.get("ferry"), a.out, "ferry_tls_stats.txt")
        for mode, by_arm in h2_servers.items():
            save_ferry_stats(by_arm.get("ferry"), a.out, f"ferry_{mode}_stats.txt")
    finally:
        for s in (list(servers.values()) + list(tls_servers.values())
                  + [x for m in h2_servers.values() for x in m.values()]):
            s.stop()
        if origin:
            origin.stop()
        if a.keep_tmp:
            log(f"configs and logs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    meta["loadavg_end"] = " ".join(open("/proc/loadavg").read().split()[:3])
    meta["elapsed_s"] = round(time.time() - started, 1)
    meta["arms"] = arms
    meta["tls_arms"] = tls_arms
    meta["h2_arms"] = h2_arms
    hp = [r["haproxy_reuse_pct"] for r in runs if r.get("haproxy_reuse_pct") is not None]
    if hp:
        meta["haproxy_reuse_pct"] = {"tls-hs": med(hp)}
    summary = summarize(runs, arms, workloads)
    summary.update(summarize(runs, tls_arms, tls_workloads))
    summary.update(summarize(runs, h2_arms, h2_workloads))
    benchlib.write_results(a.out, "passthrough", render_markdown(meta, summary, arms),
                           {"meta": meta, "summary": summary, "runs": runs}, indent=1)
    # --require-h2-arms: each named arm ran every HTTP/2 scenario, every run without errors.
    bad = []
    for arm in required_h2:
        for wl in h2_workloads:
            s = summary.get(wl, {}).get(arm)
            if not s:
                bad.append(f"{arm} {wl}: not run "
                           f"({meta.get('arm_failures', {}).get(arm + '-' + H2_MODE[wl], '?')})")
            elif s["errors"]:
                bad.append(f"{arm} {wl}: {s['errors']} errors")
    if bad:
        log("required HTTP/2 arms failed: " + "; ".join(bad))
        sys.exit(1)


def h2load_run(a, wl, port, tmp, post_file, duration):
    return h2bench.run_h2load(port, H2_MODE[wl], duration, a.h2_connections, a.h2_streams, tmp,
                              post_file if wl == "h2c-post1k" else None)


if __name__ == "__main__":
    main()
