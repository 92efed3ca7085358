"""One run of the pass-through bench against one arm (measure: wrk or h2load, with the CPU of the
proxy, the origin, the load generator and the rest of the box over the run), and the wrk scripts
of the HTTP/1.1 workloads.

stdlib only. See bench/README.md.
"""
import contextlib
import os
import subprocess
import time

from benchlib.peers import POST_BYTES, origin_accepts
from benchlib.sampling import CLK_TCK, cpu_ticks, machine_busy_ticks, system_ticks, vm_hwm_kib
from benchlib.wrk import WRK_DONE, load_figures, run_wrk
import h2bench
from h2bench import H2_MODE


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
    for name, text in (("get", get), ("post1k", post), ("seq", get), ("tls-ka", get),
                       ("tls-hs", close)):
        p = os.path.join(tmp, f"wrk_{name}.lua")
        with open(p, "w") as f:
            f.write(text)
        scripts[name] = p
    return scripts


def measure(arm, servers, origin, port, script, duration, connections, tls=False, load=None,
            core=None):
    """One run against `arm`. `load` (a callable returning run_wrk's fields) replaces wrk, e.g.
    h2load for the HTTP/2 scenarios. `core`: the proxy's and the origin's threads and wrk run on
    that one core for the run (their affinity is given back after it)."""
    proxy = servers.get(arm)
    ppids = proxy.pids() if proxy else []
    opids = origin.pids()
    if core is not None:
        with pinned(ppids + opids, core):
            return measure(arm, servers, origin, port, script, duration, connections, tls,
                           load=lambda: run_wrk(port, script, duration, connections, tls=tls,
                                                core=core))
    acc0 = origin_accepts(origin)
    busy0 = machine_busy_ticks()
    c0, o0, k0 = cpu_ticks(ppids), cpu_ticks(opids), system_ticks(ppids)
    t0 = time.monotonic()
    w = load() if load else run_wrk(port, script, duration, connections, tls=tls)
    wall = time.monotonic() - t0
    c1, o1, k1 = cpu_ticks(ppids), cpu_ticks(opids), system_ticks(ppids)
    busy1 = machine_busy_ticks()
    acc1 = origin_accepts(origin) - 1  # minus our own stub_status connection
    n = max(w["requests"], 1)
    proxy_cpu_s = (c1 - c0) / CLK_TCK
    origin_cpu_s = (o1 - o0) / CLK_TCK
    foreign_s = (busy1 - busy0) / CLK_TCK - proxy_cpu_s - origin_cpu_s - w["wrk_cpu_s"]
    return {
        "arm": arm,
        **load_figures(w),
        "proxy_cpu_s": proxy_cpu_s if proxy else None,
        "cpu_us_per_req": proxy_cpu_s * 1e6 / n if proxy else None,
        # Its kernel part (stime): syscalls and the network stack; the rest is user space.
        "sys_us_per_req": (k1 - k0) / CLK_TCK * 1e6 / n if proxy else None,
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


@contextlib.contextmanager
def pinned(pids, core):
    """Every thread of `pids` on `core` while the block runs, then on every core again."""
    every = f"0-{os.cpu_count() - 1}"
    for pid in pids:
        subprocess.run(["taskset", "-a", "-p", "-c", str(core), str(pid)], check=True,
                       stdout=subprocess.DEVNULL)
    try:
        yield
    finally:
        for pid in pids:
            subprocess.run(["taskset", "-a", "-p", "-c", every, str(pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def cpu_text(r):
    return f"{r['cpu_us_per_req']:.1f} µs/req" if r["cpu_us_per_req"] is not None else ""


def h2load_run(a, wl, port, tmp, post_file, duration):
    return h2bench.run_h2load(port, H2_MODE[wl], duration, a.h2_connections, a.h2_streams, tmp,
                              post_file if wl == "h2c-post1k" else None)
