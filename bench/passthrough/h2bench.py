"""HTTP/2 scenarios of the pass-through bench (bench/README.md, "HTTP/2"): the h2load driver, the
h2o arm, and the readiness check of an h2 endpoint. run.py owns the other proxies' configs (each
starter takes an `h2` mode) and the measurement loop; this file has what only h2 needs.

stdlib only; h2load and nghttp come from Debian's nghttp2-client, h2o from Debian's h2o.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import Server, free_port  # noqa: E402  (bench/benchlib/)

# Client side HTTP/2, origin side HTTP/1.1 keep-alive (the same origin as every other scenario).
H2_WORKLOADS = {
    "h2c": "GET / over h2c (prior knowledge)",
    "h2c-post1k": "POST /post with a 1 KiB body over h2c",
    "h2-tls": "GET / over h2 on TLS (ALPN h2)",
}
# floor: bench/floor's relay carrying the client's h2c bytes to the origin's h2c listener (h2c
# scenarios only; not a peer). ferry-before: --ferry-before's binary (summary.py's BEFORE_ARM).
H2_ARMS = ["floor", "haproxy", "nginx", "nghttpx", "h2o", "ferry", "ferry-before"]
# "h2c" / "h2tls": which instance of an arm a workload runs against.
H2_MODE = {"h2c": "h2c", "h2c-post1k": "h2c", "h2-tls": "h2tls"}


def h2_scheme(mode):
    return "https" if mode == "h2tls" else "http"


# ----------------------------------------------------------------------------- load

def run_h2load(port, mode, duration, connections, streams, tmp, post_file=None, timeout_s=5):
    """h2load, one thread, `connections` × `streams`, for `duration` seconds (no h2load warm-up:
    the CPU we read around this call must match its request count). Returns the fields measure()
    reads from wrk: requests (succeeded), duration_us, err_* counts, latency percentiles from
    h2load's per-request log (µs until the end of each response)."""
    log_file = os.path.join(tmp, "h2load-requests.tsv")
    argv = ["h2load", "-t1", f"-c{connections}", f"-m{streams}", f"-D{duration}",
            f"--log-file={log_file}", "-N", f"{timeout_s}s"]
    if mode == "h2tls":
        argv.append("--npn-list=h2")  # h2 or nothing: no silent fall-back to HTTP/1.1
    if post_file:
        argv += ["-d", post_file, "-H", "content-type: application/octet-stream"]
    path = "/post" if post_file else "/"
    argv.append(f"{h2_scheme(mode)}://127.0.0.1:{port}{path}")
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    r = parse_h2load(out)
    if rc != 0 or r is None:
        raise RuntimeError(f"h2load failed ({rc}):\n{out[-3000:]}")
    lat = read_latencies(log_file)
    r.update(percentiles(lat))
    r["wrk_cpu_s"] = ru.ru_utime + ru.ru_stime  # the load generator's CPU (named as wrk's)
    r["h2load_tail"] = out[-1500:] if r["errors_total"] else ""
    return r


def parse_h2load(out):
    m = re.search(r"finished in ([0-9.]+)(s|ms|us)\b", out)
    req = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                    r"(\d+) failed, (\d+) errored, (\d+) timeout", out)
    st = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    if not (m and req and st):
        return None
    total, started, done, ok, failed, errored, timeout = (int(x) for x in req.groups())
    s2, s3, s4, s5 = (int(x) for x in st.groups())
    proto = re.search(r"Application protocol: (\S+)", out)
    scale = {"s": 1e6, "ms": 1e3, "us": 1.0}[m.group(2)]
    r = {"requests": s2, "duration_us": float(m.group(1)) * scale, "bytes": 0,
         "err_failed": failed, "err_errored": errored, "err_timeout": timeout,
         "err_status": s3 + s4 + s5, "started": started, "done": done,
         "protocol": proto.group(1) if proto else None}
    # A run that negotiated something other than h2 measured the wrong thing.
    r["err_protocol"] = 0 if r["protocol"] in ("h2", "h2c") else 1
    r["errors_total"] = failed + errored + timeout + r["err_status"] + r["err_protocol"]
    return r


def read_latencies(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split("\t")
                if len(parts) >= 3 and parts[1].startswith("2"):
                    out.append(int(parts[2]))
        os.unlink(path)
    except OSError:
        pass
    out.sort()
    return out


def percentiles(lat):
    def q(x):
        return float(lat[min(int(x * len(lat)), len(lat) - 1)]) if lat else 0.0
    return {"p50_us": q(0.5), "p90_us": q(0.9), "p99_us": q(0.99), "p999_us": q(0.999),
            "max_us": float(lat[-1]) if lat else 0.0,
            "mean_us": sum(lat) / len(lat) if lat else 0.0}


# ----------------------------------------------------------------------------- readiness

def check_h2(port, mode, expected_body, post_file, timeout=10.0, proc=None):
    """Waits until GET / and POST /post over h2 (nghttp: h2 only, prior knowledge on cleartext,
    ALPN h2 on TLS) both return the origin's body, then requires h2load to get 64 × 2xx over
    2 connections × 8 streams. RuntimeError with the tools' output otherwise."""
    base = f"{h2_scheme(mode)}://127.0.0.1:{port}"
    deadline = time.time() + timeout
    last = ""
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}")
        g = subprocess.run(["nghttp", "-t", "2", base + "/"], capture_output=True, timeout=10)
        p = subprocess.run(["nghttp", "-t", "2", "-d", post_file, base + "/post"],
                           capture_output=True, timeout=10)
        if g.stdout.decode(errors="replace") == expected_body and \
                p.stdout.decode(errors="replace") == expected_body:
            break
        last = (f"nghttp GET: rc {g.returncode} {g.stdout[:200]!r} {g.stderr[-300:]!r}; "
                f"POST: rc {p.returncode} {p.stdout[:200]!r} {p.stderr[-300:]!r}")
        time.sleep(0.2)
    else:
        raise RuntimeError(f"{base} does not answer over h2: {last}")
    argv = ["h2load", "-n64", "-c2", "-m8"] + (["--npn-list=h2"] if mode == "h2tls" else [])
    out = subprocess.run(argv + [base + "/"], capture_output=True, text=True, timeout=30).stdout
    r = parse_h2load(out)
    if r is None or r["requests"] != 64 or r["errors_total"]:
        raise RuntimeError(f"h2load -n64 -c2 -m8 against {base}:\n{out[-2000:]}")


# ----------------------------------------------------------------------------- h2o

def start_h2o(tmp, up, mode, tls=None):
    """h2o 2.2 (Debian), one thread, reverse proxy to the origin with keep-alive. Cleartext: h2c
    with prior knowledge (and HTTP/1.1) on the same port; TLS: ALPN h2, http/1.1."""
    d = os.path.join(tmp, f"h2o-{mode}")
    os.makedirs(d)
    port = free_port()
    listen = f"listen:\n  host: 127.0.0.1\n  port: {port}\n"
    if mode == "h2tls":
        # Session tickets are on by default in h2o (its internal ticket keys).
        listen += (f"  ssl:\n    certificate-file: {tls['cert']}\n"
                   f"    key-file: {tls['key']}\n    minimum-version: TLSv1.2\n"
                   # no OCSP stapling: h2o would fork fetch-ocsp-response helpers (a
                   # self-signed certificate has no responder; their CPU is no proxying)
                   "    ocsp-update-interval: 0\n")
    conf = f"""{listen}num-threads: 1
{"user: root" if os.geteuid() == 0 else ""}
pid-file: {d}/h2o.pid
error-log: {d}/error.log
# keepalive to the origin (default 2 s), like the other arms' pools
proxy.timeout.keepalive: 300000
http2-idle-timeout: 300
http1-request-timeout: 300
hosts:
  default:
    paths:
      /:
        proxy.reverse.url: http://127.0.0.1:{up}/
"""
    path = os.path.join(d, "h2o.conf")
    with open(path, "w") as f:
        f.write(conf)
    s = Server("h2o", ["h2o", "-c", path], d)
    s.port = port
    return s
