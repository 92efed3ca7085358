#!/usr/bin/env python3
"""Forwarded-request benchmark: what a request that ferry forwards costs, against the same
request sent to the stream's owner directly.

A 2-member cell (ferry-cell: 2 streams-emulators, a ferry beside each, forwarding on, the peer
table naming the peers' ferries) and a JSON stream owned by member 2 (inst-2). wrk (1 thread,
C keep-alive connections) appends small JSON batches (POST /v1/stream/<name>, content-type
application/json, body [{"n":1}]) through three arms, interleaved in shuffled rounds like the
pass-through bench:

  direct      wrk -> inst-2's emulator                          (the owner, no ferry)
  owner-ferry wrk -> inst-2's ferry -> inst-2's emulator        (pass-through)
  forwarded   wrk -> inst-1's ferry -> inst-1's emulator (409 not_ring_owner, body read)
                     -> inst-2's ferry (Streams-Forwarded) -> inst-2's emulator -> 204
  fwd-tls-h1  the same over https between the ferries (issue 13), HTTP/1.1 to the owner: wrk ->
              a ferry beside inst-1 (owner_protocol: http1) -> https, mTLS -> a TLS ferry
              beside inst-2 (listener offers h2 and http/1.1 by ALPN) -> inst-2's emulator
  fwd-tls-h2  the same with HTTP/2 to the owner (owner_protocol: auto, ALPN picks h2): every
              forward is a stream of one multiplexed connection

Per run: req/s, p50/p99 (wrk), CPU time (utime+stime, /proc/<pid>/stat) of both ferries summed
and of both emulators summed, per request; forward counters from both ferries' /stats. Every
run appends to a fresh stream (created with PUT at the owner before the run, deleted after).

Shares the pass-through bench's sampling and wrk runs through bench/benchlib/.
stdlib only. See bench/README.md, "Forwarded requests".
"""

import argparse
import hashlib
import os
import json
import random
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench"))
import benchlib  # noqa: E402  (bench/benchlib/)
from benchlib import request  # noqa: E402
from benchlib.cell_configs import gen_tls_files  # noqa: E402
from benchlib.sampling import (  # noqa: E402
    CLK_TCK, cpu_ticks, loadavg, machine, machine_busy_ticks, vm_hwm_kib)
from benchlib.tables import fmt, log, med  # noqa: E402
from benchlib.wrk import WRK_DONE, load_figures, run_wrk  # noqa: E402

ARMS = ["direct", "owner-ferry", "forwarded", "fwd-tls-h1", "fwd-tls-h2"]
# Issue 13: forwards over https between the ferries, HTTP/1.1 vs HTTP/2 to the owner.
TLS_ARMS = ("fwd-tls-h1", "fwd-tls-h2")
ARM_TITLES = {
    "direct": "owner direct (emulator inst-2)",
    "owner-ferry": "owner via its ferry (pass-through)",
    "forwarded": "forwarded (inst-1's ferry → 409 → inst-2's ferry)",
    "fwd-tls-h1": "forwarded over https, HTTP/1.1 to the owner",
    "fwd-tls-h2": "forwarded over https, HTTP/2 to the owner (one connection)",
}
# The TLS arms' ferries (set up by start_tls_arms): arm -> admin address, and the admins
# whose forward counters measure() reads besides the cell's.
EXTRA_ADMINS = {}
BODY = '[{"n":1}]'
FWD_COUNTERS = ("ferry_forward_attempts_total", "ferry_forward_completed_total",
                "ferry_forward_failed_total", "ferry_forward_refused_total",
                "ferry_forward_skipped_total")


# ----------------------------------------------------------------------------- the cell

def scrape(admin):
    """Forwarding counters from one ferry's admin /stats, summed over label sets."""
    out = benchlib.scrape(admin, FWD_COUNTERS)
    if out is None:
        raise RuntimeError(f"no answer from {admin}/stats")
    return out


def check_arms(cell, ports, name):
    """One append per arm: 204 from inst-2; the forwarded arm really forwards."""
    for arm, port in ports.items():
        st, h, body = request(port, "POST", f"/v1/stream/{name}", BODY,
                              {"content-type": "application/json"})
        if st not in (200, 204) or h.get("prisma-streams-origin") != "inst-2":
            raise RuntimeError(f"{arm}: append answered {st} origin "
                               f"{h.get('prisma-streams-origin')}: {body[:200]!r}")
    st, _, body = request(cell.member_port("inst-1", "emulator"), "POST",
                          f"/v1/stream/{name}",
                          BODY, {"content-type": "application/json"})
    if st != 409:
        raise RuntimeError(f"inst-1's emulator should answer 409 for {name}, got {st}")


def write_script(tmp, name):
    path = os.path.join(tmp, f"wrk_{name}.lua")
    with open(path, "w") as f:
        f.write('wrk.method = "POST"\n'
                f'wrk.path = "/v1/stream/{name}"\n'
                f"wrk.body = '{BODY}'\n"
                'wrk.headers["Content-Type"] = "application/json"\n' + WRK_DONE)
    return path


# ----------------------------------------------------------------------------- TLS arms

def start_ferry(procs_dir, name, ferry_bin, yaml):
    """One ferry with `yaml`; (listener port, admin address, Server)."""
    d = os.path.join(procs_dir, name)
    os.makedirs(d)
    config = os.path.join(d, "ferry.yaml")
    with open(config, "w") as f:
        f.write(yaml)
    server = benchlib.Server(f"ferry-{name}", [ferry_bin, "--config", config], d)
    end = time.time() + 15
    while time.time() < end and server.alive():
        m = re.search(r"ferry ready listener=\S+:(\d+) admin=(\S+)", open(server.log_path).read())
        if m:
            return int(m.group(1)), m.group(2), server
        time.sleep(0.05)
    server.stop()
    raise RuntimeError(f"ferry {name} did not start:\n{server.log_tail()}")


def start_tls_arms(cell, tmp, ferry_bin, servers):
    """The ferries of the TLS arms, beside the cell's emulators: one TLS owner ferry for inst-2
    (listener mTLS, h2 and http/1.1 offered by ALPN, forwarding off: it passes the forwarded
    request to its instance) and one plain entry ferry per arm for inst-1 (wrk speaks plain
    HTTP/1.1 to it) forwarding to that owner over https with inst-1's client certificate,
    owner_protocol http1 / auto. Certificates: the cell bench's test CA
    (benchlib.cell_configs.gen_tls_files). Returns arm -> entry listener port; fills
    EXTRA_ADMINS and cell.member_pids (("ferry", name) -> pid: their CPU counts as ferry CPU)."""
    tls = os.path.join(tmp, "tls")
    owner_port = benchlib.free_port()
    gen_tls_files(tls, {"members": ["inst-1", "inst-2"],
                        "ferries": {"inst-1": "127.0.0.1:0",
                                    "inst-2": f"127.0.0.1:{owner_port}"}})
    emu = lambda m: cell.member_port(m, "emulator")
    _, admin, srv = start_ferry(tmp, "tls-owner", ferry_bin, (
        "instance_name: inst-2\n"
        f"listener: {{address: 127.0.0.1, port: {owner_port}, tls: {{cert_file: {tls}/inst-2.pem, "
        f"key_file: {tls}/inst-2.key, client_ca_file: {tls}/ca.pem, client_cert: require}}, "
        "http2: {enabled: true}}\n"
        f"local_instance: {{address: 127.0.0.1, port: {emu('inst-2')}}}\n"
        "admin: {address: 127.0.0.1, port: 0}\nworkers: 1\nforwarding: {enabled: false}\n"))
    servers.append(srv)
    cell.member_pids[("ferry", "tls-owner")] = srv.proc.pid
    urls = os.path.join(tmp, "tls-urls.json")
    with open(urls, "w") as f:
        # inst-1 is the entry itself (never a forward target).
        json.dump({"inst-1": "https://127.0.0.1:9", "inst-2": f"https://127.0.0.1:{owner_port}"},
                  f)
    ports = {}
    for arm, protocol in (("fwd-tls-h1", "http1"), ("fwd-tls-h2", "auto")):
        port, admin, srv = start_ferry(tmp, arm, ferry_bin, (
            "instance_name: inst-1\nlistener: {address: 127.0.0.1, port: 0}\n"
            f"local_instance: {{address: 127.0.0.1, port: {emu('inst-1')}}}\n"
            "admin: {address: 127.0.0.1, port: 0}\nworkers: 1\n"
            f"forwarding: {{enabled: true, fleet_file: {urls}, allow_http_peers: false, "
            f"owner_protocol: {protocol}, tls: {{ca_file: {tls}/ca.pem, "
            f"client_cert_file: {tls}/inst-1-client.pem, client_key_file: {tls}/inst-1-client.key}}}}\n"))
        servers.append(srv)
        cell.member_pids[("ferry", arm)] = srv.proc.pid
        EXTRA_ADMINS[arm] = admin
        ports[arm] = port
    return ports


def owner_connections(admin):
    """ferry_owner_connections_active by protocol at `admin` ({} when not exported)."""
    import urllib.request
    try:
        with urllib.request.urlopen(f"http://{admin}/stats", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^ferry_owner_connections_active\{protocol="(\w+)"\} (\S+)$', text, re.M)}


# ----------------------------------------------------------------------------- one run

def measure(cell, arm, port, script, duration, connections):
    per0 = {k: cpu_ticks([p]) for k, p in cell.member_pids.items()}
    fw0 = {m: scrape(cell.members[m]["admin"]) for m in cell.members}
    fw0.update({m: scrape(a) for m, a in EXTRA_ADMINS.items()})
    busy0 = machine_busy_ticks()
    t0 = time.monotonic()
    w = run_wrk(port, script, duration, connections)
    wall = time.monotonic() - t0
    busy1 = machine_busy_ticks()
    per1 = {k: cpu_ticks([p]) for k, p in cell.member_pids.items()}
    fw1 = {m: scrape(cell.members[m]["admin"]) for m in cell.members}
    fw1.update({m: scrape(a) for m, a in EXTRA_ADMINS.items()})
    n = max(w["requests"], 1)
    cpu_s = {f"{k}-{m}": (per1[(k, m)] - per0[(k, m)]) / CLK_TCK
             for (k, m) in cell.member_pids}
    ferry_s = sum(v for k, v in cpu_s.items() if k.startswith("ferry-"))
    emu_s = sum(v for k, v in cpu_s.items() if k.startswith("emulator-"))
    foreign_s = (busy1 - busy0) / CLK_TCK - ferry_s - emu_s - w["wrk_cpu_s"]
    fw = {m: {k: fw1[m][k] - fw0[m][k] for k in FWD_COUNTERS} for m in fw1}
    return {
        "arm": arm,
        **load_figures(w),
        "ferry_cpu_us_per_req": ferry_s * 1e6 / n,
        "emulator_cpu_us_per_req": emu_s * 1e6 / n,
        "cell_cpu_us_per_req": (ferry_s + emu_s) * 1e6 / n,
        "cpu_us_per_req_by_process": {k: v * 1e6 / n for k, v in cpu_s.items()},
        "wrk_cpu_us_per_req": w["wrk_cpu_s"] * 1e6 / n,
        "forwards": sum(fw[m]["ferry_forward_attempts_total"] for m in fw),
        "forwards_completed": sum(fw[m]["ferry_forward_completed_total"] for m in fw),
        "forward_counters": fw,
        "foreign_cores": max(foreign_s, 0.0) / wall,
        "wall_s": wall,
    }


# ----------------------------------------------------------------------------- report

def summarize(runs, arms):
    by_round = {}
    for r in runs:
        by_round.setdefault(r["round"], {})[r["arm"]] = r
    summary = {}
    for arm in arms:
        rs = [r for r in runs if r["arm"] == arm]
        if not rs:
            continue
        s = {"rounds": len(rs)}
        for key in ("rps", "p50_ms", "p90_ms", "p99_ms", "ferry_cpu_us_per_req",
                    "emulator_cpu_us_per_req", "cell_cpu_us_per_req", "wrk_cpu_us_per_req",
                    "foreign_cores"):
            s[key] = med([r[key] for r in rs])
        for key in ("ferry_cpu_us_per_req", "cell_cpu_us_per_req"):
            s[key + "_min"] = min(r[key] for r in rs)
            s[key + "_max"] = max(r[key] for r in rs)
        s["cpu_us_per_req_by_process"] = {
            k: med([r["cpu_us_per_req_by_process"][k] for r in rs])
            for k in rs[0]["cpu_us_per_req_by_process"]}
        s["requests"] = sum(r["requests"] for r in rs)
        s["errors"] = sum(r["errors"] for r in rs)
        s["forwards"] = sum(r["forwards"] for r in rs)
        s["forwards_completed"] = sum(r["forwards_completed"] for r in rs)
        s["forwards_per_req"] = s["forwards"] / max(s["requests"], 1)
        # Paired per-round ratios to "owner direct", median over rounds.
        for key in ("rps", "p50_ms", "p99_ms", "cell_cpu_us_per_req"):
            vals = [rr[arm][key] / rr["direct"][key] for rr in by_round.values()
                    if arm in rr and "direct" in rr and rr["direct"][key]]
            s[f"{key}_vs_direct"] = med(vals)
        summary[arm] = s
    h1, h2 = summary.get("fwd-tls-h1"), summary.get("fwd-tls-h2")
    if h1 and h2:
        # Paired per round: h2 owners ÷ HTTP/1.1 owners, both ferries' CPU per request.
        vals = [rr["fwd-tls-h2"]["ferry_cpu_us_per_req"] / rr["fwd-tls-h1"]["ferry_cpu_us_per_req"]
                for rr in by_round.values() if "fwd-tls-h1" in rr and "fwd-tls-h2" in rr
                and rr["fwd-tls-h1"]["ferry_cpu_us_per_req"]]
        h2["ferry_cpu_vs_tls_h1"] = med(vals)
        h2["ferry_cpu_vs_tls_h1_rounds"] = vals
    return summary


def table_row(name, s):
    return (f"| {name} | {s['rps']:,.0f} | {s['p50_ms']:.2f} | {s['p99_ms']:.2f} "
            f"| {s['ferry_cpu_us_per_req']:.1f} ({s['ferry_cpu_us_per_req_min']:.1f}–"
            f"{s['ferry_cpu_us_per_req_max']:.1f}) | {s['emulator_cpu_us_per_req']:.1f} "
            f"| {s['cell_cpu_us_per_req']:.1f} | {fmt(s['rps_vs_direct'], '.2f')} "
            f"| {fmt(s['p50_ms_vs_direct'], '.2f')} | {fmt(s['p99_ms_vs_direct'], '.2f')} "
            f"| {fmt(s['cell_cpu_us_per_req_vs_direct'], '.2f')} | {s['forwards_per_req']:.2f} "
            f"| {s['errors']} |")


def render_markdown(meta, summary, arms):
    L = [f"## Forwarded requests — {meta['date']}", ""]
    L.append(
        f"2-member cell (ferry-cell: inst-1, inst-2, a ferry beside each, `workers: 1`, "
        f"forwarding on, peers = the ferries); a JSON stream owned by inst-2; wrk 1 thread, "
        f"{meta['connections']} keep-alive connections, `POST /v1/stream/<name>` with "
        f"`{BODY}` (application/json); {meta['duration_s']} s per run, {meta['rounds']} "
        f"interleaved rounds (median shown). Machine: {meta['cores']} cores "
        f"({meta['cpu_model']}), kernel {meta['kernel']}; load average "
        f"{meta['loadavg_start']} → {meta['loadavg_end']}.")
    L.append("")
    L.append(f"**ferry:** {meta['ferry_note']}")
    L.append("")
    L.append("| arm | req/s | p50 ms | p99 ms | ferry CPU µs/req (both, min–max) "
             "| emulator CPU µs/req (both) | cell CPU µs/req | req/s ÷ direct | p50 ÷ direct "
             "| p99 ÷ direct | cell CPU ÷ direct | forwards/req | errors |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for arm in arms:
        s = summary.get(arm)
        if not s:
            continue
        name = (f"**{ARM_TITLES[arm]}**" if arm in ("forwarded", "fwd-tls-h2")
                else ARM_TITLES[arm])
        L.append(table_row(name, s))
    L.append("")
    f, o, d = summary.get("forwarded"), summary.get("owner-ferry"), summary.get("direct")
    if f and o:
        L.append(
            "Per process (µs/req, median): forwarded — "
            + ", ".join(f"{k} {v:.1f}" for k, v in sorted(f["cpu_us_per_req_by_process"].items()))
            + "; owner via its ferry — "
            + ", ".join(f"{k} {v:.1f}" for k, v in sorted(o["cpu_us_per_req_by_process"].items()))
            + ".")
        L.append("")
        L.append(
            f"**Cost of forwarding** (forwarded − owner via its ferry): ferry CPU "
            f"+{f['ferry_cpu_us_per_req'] - o['ferry_cpu_us_per_req']:.1f} µs/req, emulator CPU "
            f"+{f['emulator_cpu_us_per_req'] - o['emulator_cpu_us_per_req']:.1f} µs/req (the "
            f"non-owner's 409), p50 +{f['p50_ms'] - o['p50_ms']:.2f} ms; "
            f"forwarded req/s ÷ owner direct = {fmt(f['rps_vs_direct'], '.2f')}, "
            f"cell CPU ÷ owner direct = {fmt(f['cell_cpu_us_per_req_vs_direct'], '.2f')}.")
    h1, h2 = summary.get("fwd-tls-h1"), summary.get("fwd-tls-h2")
    if h1 and h2 and h2.get("ferry_cpu_vs_tls_h1") is not None:
        L.append("")
        L.append(
            f"**Forwards over https: HTTP/2 ÷ HTTP/1.1 to the owner, ferry CPU per forwarded "
            f"request (both ferries) = {h2['ferry_cpu_vs_tls_h1']:.2f}** (paired per round: "
            + ", ".join(f"{x:.2f}" for x in h2["ferry_cpu_vs_tls_h1_rounds"])
            + f"); {h2['ferry_cpu_us_per_req']:.1f} vs {h1['ferry_cpu_us_per_req']:.1f} µs/req. "
            f"Owner connections at the end: {meta.get('owner_connections', {})}.")
    if d:
        L.append("")
        L.append(f"wrk: {d['wrk_cpu_us_per_req']:.1f} µs CPU/req on the direct arm. Foreign CPU "
                 f"during runs (other jobs on the box): median "
                 f"{med([s['foreign_cores'] for s in summary.values()]):.2f} cores.")
    return "\n".join(L) + "\n"


# ----------------------------------------------------------------------------- main

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(REPO, "build-benchall"),
                    help="build dir with ferry-cell and streams-emulator (default build-benchall)")
    ap.add_argument("--ferry", help="ferry binary (default: BUILD/app/ferry)")
    ap.add_argument("--duration", type=int, default=10, help="whole seconds per run (10)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (5)")
    ap.add_argument("--connections", type=int, default=32, help="wrk connections (32)")
    ap.add_argument("--warmup", type=int, default=2, help="discarded seconds per arm (2)")
    ap.add_argument("--quick", action="store_true", help="3 rounds × 3 s, 1 s warm-up")
    ap.add_argument("--arms", default=",".join(ARMS), help="comma list: %(default)s")
    ap.add_argument("--seed", type=int, default=None, help="shuffle seed (default: time)")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    ap.add_argument("--keep-tmp", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.duration, a.rounds, a.warmup = 3, 3, 1
    return a


def check_arms_and_tools(a):
    """--arms as a list, after checking it, wrk and the binaries; exits on what is missing.
    Also the ferry binary's path and the build hint."""
    arms = [x for x in a.arms.split(",") if x]
    for x in arms:
        if x not in ARMS:
            sys.exit(f"unknown arm {x} (known: {', '.join(ARMS)})")
    if not shutil.which("wrk"):
        sys.exit("missing wrk: apt-get install wrk")
    ferry_src = os.path.abspath(a.ferry or os.path.join(a.build, benchlib.FERRY_REL))
    hint = (f"build: cmake --build {a.build} --target ferry streams-emulator ferry-cell")
    for rel in list(benchlib.CELL_BINS.values()) + [ferry_src]:
        benchlib.find_bin(a.build, rel, hint)
    return arms, ferry_src, hint


def main():
    a = parse_args()
    arms, ferry_src, hint = check_arms_and_tools(a)
    seed = a.seed if a.seed is not None else int(time.time())
    rng = random.Random(seed)

    tmp = tempfile.mkdtemp(prefix="ferry-bench-fwd-")
    os.chmod(tmp, 0o755)
    st = os.stat(ferry_src)
    meta = {
        **machine(),
        "connections": a.connections, "duration_s": a.duration, "rounds": a.rounds,
        "warmup_s": a.warmup, "seed": seed, "body": BODY,
        "mode": "quick" if a.quick else "full",
        "loadavg_start": loadavg(),
    }
    cell, runs, extra_servers = None, [], []
    started = time.time()
    try:
        # Others rebuild the tree while we run: bench private copies of the binaries.
        bins = benchlib.stage_binaries(a.build, tmp, benchlib.CELL_BINS, hint, a.ferry)
        meta["ferry_sha256"] = hashlib.sha256(open(bins["ferry"], "rb").read()).hexdigest()[:16]
        meta["ferry_note"] = (f"{ferry_src} (built "
                              f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(st.st_mtime))}), "
                              f"sha256 {meta['ferry_sha256']}…")
        cell = benchlib.Cell(tmp, bins["ferry-cell"], bins["ferry"], bins["streams-emulator"],
                             members=2)
        log(f"cell: {cell.members}, pids {cell.member_pids}")
        ports = arm_ports(cell, tmp, bins["ferry"], arms, extra_servers)
        # Fresh streams owned by inst-2: found by PUT at its emulator (a non-owner answers 409
        # not_ring_owner), so no ownership math is duplicated here.
        streams = benchlib.OwnedStreams(cell.members["inst-2"]["emulator"], f"fwdbench-{seed}")
        warm_up(a, cell, tmp, arms, ports, streams)
        runs = run_rounds(a, rng, arms, cell, tmp, ports, streams)
        meta["peak_rss_mib"] = {f"{k}-{m}": vm_hwm_kib([p]) / 1024
                                for (k, m), p in cell.member_pids.items()}
        meta["owner_connections"] = {arm: owner_connections(a) for arm, a in EXTRA_ADMINS.items()
                                     if arm in arms}
    finally:
        for srv in extra_servers:
            srv.stop()
        if cell:
            cell.stop()
        if a.keep_tmp:
            log(f"configs and logs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    meta["loadavg_end"] = loadavg()
    meta["elapsed_s"] = round(time.time() - started, 1)
    meta["arms"] = arms
    summary = summarize(runs, arms)
    benchlib.write_results(a.out, "forwarded", render_markdown(meta, summary, arms),
                           {"meta": meta, "summary": summary, "runs": runs}, indent=1)
    return verdict(meta, summary, arms)


def arm_ports(cell, tmp, ferry_bin, arms, extra_servers):
    """arm -> the port wrk drives, the TLS arms' ferries started (into extra_servers)."""
    ports = {"direct": cell.member_port("inst-2", "emulator"),
             "owner-ferry": cell.member_port("inst-2", "ferry"),
             "forwarded": cell.member_port("inst-1", "ferry")}
    if any(a in TLS_ARMS for a in arms):
        ports.update(start_tls_arms(cell, tmp, ferry_bin, extra_servers))
    return {k: v for k, v in ports.items() if k in arms}


def warm_up(a, cell, tmp, arms, ports, streams):
    """Checks every arm on one stream, then a.warmup discarded seconds per arm on it."""
    name = streams.create()
    check_arms(cell, ports, name)
    if a.warmup > 0:
        script = write_script(tmp, name)
        for arm in arms:
            run_wrk(ports[arm], script, a.warmup, a.connections)
        log(f"warm-up done ({a.warmup} s per arm)")
    streams.delete(name)


def run_rounds(a, rng, arms, cell, tmp, ports, streams):
    """a.rounds rounds of every arm, in a freshly shuffled order each; the measured runs."""
    runs = []
    for rnd in range(1, a.rounds + 1):
        order = arms[:]
        rng.shuffle(order)
        for arm in order:
            runs.append(run_once(a, rnd, arm, cell, tmp, ports[arm], streams))
    return runs


def run_once(a, rnd, arm, cell, tmp, port, streams):
    """One measured run of `arm` on a fresh stream."""
    if not cell.alive():
        raise RuntimeError(f"ferry-cell exited; log:\n{cell.log_tail()}")
    name = streams.create()
    script = write_script(tmp, name)
    r = measure(cell, arm, port, script, a.duration, a.connections)
    streams.delete(name)
    r.update(round=rnd, stream=name)
    log(f"round {rnd}/{a.rounds} {arm:11s} {r['rps']:9,.0f} req/s "
        f"p50 {r['p50_ms']:5.2f} p99 {r['p99_ms']:6.2f} ms ferry "
        f"{r['ferry_cpu_us_per_req']:5.1f} emu {r['emulator_cpu_us_per_req']:5.1f} "
        f"µs/req forwards/req {r['forwards'] / max(r['requests'], 1):.2f}"
        + (f" ERRORS {r['errors']}" if r["errors"] else ""))
    return r


def verdict(meta, summary, arms):
    """1 when the h2 arm did not forward over HTTP/2, or any arm had errors; else 0."""
    # The h2 arm must really have forwarded over HTTP/2.
    h2_used = meta.get("owner_connections", {}).get("fwd-tls-h2", {}).get("h2", 0) > 0
    if "fwd-tls-h2" in arms and not h2_used:
        log(f"fwd-tls-h2: no HTTP/2 owner connection open at the end: "
            f"{meta.get('owner_connections')}")
        return 1
    return 1 if any(s["errors"] for s in summary.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
