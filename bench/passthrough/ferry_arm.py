"""The pass-through bench's ferry arms: a ferry instance with run.py's configuration (plain,
TLS-terminating, h2c or h2 over TLS), its /stats, and where the binaries are found. run.py starts
ferry and ferry-before (--ferry-before) with it; counts.py the one it counts.

stdlib only. See bench/README.md.
"""
import glob
import os
import re
import subprocess
import threading
import time

from benchlib import Server
from benchlib.peers import http_get, instance_dir
from benchlib.tables import log

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


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


def start_ferry(tmp, up, binary, tls=None, h2=None, name="ferry", forwarding=None):
    """A ferry instance of `binary` in front of the origin's port `up`, in tmp/<name>[-mode]/,
    with its listener and admin ports read from the ready line. `forwarding`: the config's
    forwarding block (one YAML line; default: forwarding off, as the pass-through bench runs)."""
    d = instance_dir(tmp, name, tls, h2)
    os.makedirs(d)
    listener = ("listener: {address: 127.0.0.1, port: 0}\n" if not (tls or h2) else
                "listener:\n  address: 127.0.0.1\n  port: 0\n" + ferry_listener_tls(tls, h2)
                + ferry_listener_h2(h2))
    conf = f"""instance_name: bench-1
{listener}local_instance: {{address: 127.0.0.1, port: {up}}}
admin: {{address: 127.0.0.1, port: 0}}
workers: 1
{forwarding or "forwarding: {enabled: false}"}
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


def find_floor_relay(ferry_bin):
    """bench/floor's relay from the ferry binary's build tree, else the newest build*/ one."""
    if ferry_bin:
        build = os.path.dirname(os.path.dirname(os.path.abspath(ferry_bin)))  # BUILD/app/ferry
        cand = os.path.join(build, "bench", "floor", "floor-epoll-relay")
        if os.access(cand, os.X_OK):
            return cand
    cands = sorted(glob.glob(os.path.join(REPO, "build*", "bench", "floor", "floor-epoll-relay")),
                   key=os.path.getmtime, reverse=True)
    return cands[0] if cands else None


def find_ferry_auto():
    cands = sorted(glob.glob(os.path.join(REPO, "build*", "app", "ferry")),
                   key=os.path.getmtime, reverse=True)
    return cands[0] if cands else None
