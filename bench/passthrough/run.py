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
import hashlib
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench"))
import benchlib  # noqa: E402  (bench/benchlib/)
from benchlib.peers import (  # noqa: E402  (the origin and the peers)
    POST_BYTES, RESPONSE_BODY, haproxy_reuse_pct, make_cert, start_floor,
    start_haproxy, start_nghttpx, start_nginx_proxy, start_origin, tool_version, wait_http)
from benchlib.sampling import loadavg, machine  # noqa: E402
from benchlib.tables import log, med  # noqa: E402
from benchlib.wrk import run_wrk  # noqa: E402
sys.path.insert(0, HERE)
from ferry_arm import (  # noqa: E402  (bench/passthrough/ferry_arm.py: the ferry instances)
    ferry_tls_counts, find_ferry_auto, find_floor_relay, save_ferry_stats, start_ferry)
import h2bench  # noqa: E402  (bench/passthrough/h2bench.py: the HTTP/2 scenarios' own parts)
from measure import cpu_text, h2load_run, measure, write_wrk_scripts  # noqa: E402
from h2bench import H2_ARMS, H2_MODE, H2_WORKLOADS  # noqa: E402
from summary import (  # noqa: E402  (bench/passthrough/summary.py: scenarios, report tables)
    ARM_ORDER, BEFORE_ARM, FLOOR_ARMS, PARSE_FLOOR_ARM, SEQ_CONNECTIONS, SEQ_CORE, SEQ_WORKLOAD,
    TLS_ARMS, TLS_WORKLOADS, WORKLOADS, render_markdown, summarize)


# ----------------------------------------------------------------------------- main

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


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ferry", help="path to the ferry binary, or 'auto' to pick the newest "
                    "build*/app/ferry; without it the ferry arm is skipped")
    ap.add_argument("--ferry-before", metavar="PATH",
                    help="a second ferry binary (e.g. one built before a change), run as arm "
                    f"{BEFORE_ARM} wherever ferry runs, in the same interleaved rounds; the "
                    "tables add ferry's CPU/req ÷ its (column 'CPU/req ÷ before')")
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
                    f"HTTP/2 scenarios; {PARSE_FLOOR_ARM}, the floor relay running llhttp over "
                    "both directions, only when named, in the plain HTTP/1.1 workloads)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma list: get,post1k,seq (seq: one connection, "
                    "sequential requests, everything on one core: the latency a hop adds)")
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
    return ap.parse_args()


def main():
    a = parse_args()
    if a.serve_origin:
        arm = a.arms if a.arms in ("haproxy", "nginx", "nghttpx") else None
        return serve_origin(arm)
    if a.quick:
        a.duration, a.rounds, a.warmup = 3, 3, 1
    seed = a.seed if a.seed is not None else int(time.time())
    bench = Bench(a, seed)
    try:
        bench.start_all()
        bench.warm_up()
        for rnd in range(1, a.rounds + 1):
            bench.run_round(rnd)
        bench.save_stats()
    finally:
        bench.stop_all()
    bench.report()
    bench.check_required_h2_arms()


class Bench:
    """One run of the pass-through bench, in the order main() takes its steps: choose the arms
    and scenarios, start the origin and every proxy instance, warm up, interleaved rounds, ferry's
    counters, stop everything, the report and the --require-h2-arms verdict."""

    def __init__(self, a, seed):
        self.a, self.seed, self.rng = a, seed, random.Random(seed)
        self.choose_scenarios()
        self.choose_ferry()
        self.tmp = tempfile.mkdtemp(prefix="ferry-bench-")
        os.chmod(self.tmp, 0o755)
        self.servers, self.tls_servers, self.origin = {}, {}, None
        self.h2_servers = {"h2c": {}, "h2tls": {}}  # mode -> arm -> Server
        self.started = time.time()
        self.meta = self.describe_machine()
        self.runs, self.hs_counts = [], {}

    # ------------------------------------------------------------------------- what runs

    def choose_scenarios(self):
        """The arms and workloads of each family (plain HTTP/1.1, HTTP/1.1 over TLS, HTTP/2),
        after the tools each needs were found."""
        a = self.a
        for tool in ("wrk", "nginx", "haproxy", "nghttpx"):
            if not shutil.which(tool):
                sys.exit(f"missing {tool}: apt-get install wrk nginx-light haproxy nghttp2-proxy")
        self.arms = [x for x in a.arms.split(",") if x]
        # Families: plain HTTP/1.1, HTTP/1.1 over TLS, HTTP/2. An `only` keeps its own family
        # (both `only`: both families).
        only = {f for f, v in (("tls", a.tls), ("h2", a.h2)) if v == "only"}
        self.workloads = [x for x in a.workloads.split(",") if x] if not only else []
        self.tls_workloads = (list(TLS_WORKLOADS) if a.tls != "off" and (not only or "tls" in only)
                              else [])
        if a.h2_workloads is None:
            a.h2_workloads = "h2c" if a.quick else ",".join(H2_WORKLOADS)
        self.h2_workloads = ([x for x in a.h2_workloads.split(",") if x]
                             if a.h2 != "off" and (not only or "h2" in only) else [])
        for wl in self.h2_workloads:
            if wl not in H2_WORKLOADS:
                sys.exit(f"--h2-workloads: unknown {wl} (known: {', '.join(H2_WORKLOADS)})")
        if self.h2_workloads:
            for tool in ("h2load", "nghttp", "h2o"):
                if not shutil.which(tool):
                    sys.exit(f"missing {tool} (HTTP/2 scenarios): apt-get install nghttp2-client "
                             "h2o, or --h2 off")
        if (any(H2_MODE[wl] == "h2tls" for wl in self.h2_workloads)
                and not shutil.which("openssl")):
            sys.exit("missing openssl (h2-tls makes its certificate with it): apt-get install "
                     "openssl, or --h2-workloads h2c,h2c-post1k")
        if self.tls_workloads and not shutil.which("openssl"):
            sys.exit("missing openssl (the TLS scenarios make their certificate with it): "
                     "apt-get install openssl, or --tls off")

    def choose_ferry(self):
        """The ferry binaries (or their arms skipped, with a note), then each family's arms."""
        a = self.a
        self.ferry_bin, self.ferry_note = self.choose_ferry_binary(
            "ferry", a.ferry, "--ferry")
        self.before_bin, self.before_note = None, None
        if a.ferry_before:
            if BEFORE_ARM not in self.arms:
                at = self.arms.index("ferry") + 1 if "ferry" in self.arms else len(self.arms)
                self.arms.insert(at, BEFORE_ARM)
            self.before_bin, self.before_note = self.choose_ferry_binary(
                BEFORE_ARM, a.ferry_before, "--ferry-before")
        elif BEFORE_ARM in self.arms:
            self.arms.remove(BEFORE_ARM)
            log(f"no --ferry-before given; {BEFORE_ARM} arm skipped.")
        self.floor_bin = find_floor_relay(self.ferry_bin)
        for arm in FLOOR_ARMS:
            if arm in self.arms and not self.floor_bin:
                self.arms.remove(arm)
                log(f"no build*/bench/floor/floor-epoll-relay found; {arm} arm skipped.")
        self.choose_family_arms()

    def choose_ferry_binary(self, arm, path, flag):
        """(absolute path or None, note) of the binary `arm` runs; without one the arm is
        dropped from --arms and the note says so."""
        note = None
        if path == "auto":
            path = find_ferry_auto()
            if not path:
                note = "no build*/app/ferry found; ferry arm skipped."
        if arm in self.arms and not path:
            self.arms.remove(arm)
            note = note or f"no {flag} given; {arm} arm skipped."
        elif path:
            if not os.access(path, os.X_OK):
                sys.exit(f"{flag} {path}: not an executable")
            path = os.path.abspath(path)
            built = time.strftime('%Y-%m-%d %H:%M', time.localtime(os.stat(path).st_mtime))
            note = f"{path} (built {built})"
        if note and "skipped" in note:
            log(note)
        return path, note

    def choose_family_arms(self):
        """The TLS and HTTP/2 families' arms: those of --arms that the family has (h2o runs
        only in the HTTP/2 scenarios); a family without arms runs no workloads."""
        a = self.a
        self.tls_arms = ([x for x in TLS_ARMS if x in self.arms] if self.tls_workloads
                         else [])
        if not self.tls_arms:
            self.tls_workloads = []
        self.h2_arms = [x for x in H2_ARMS if x in self.arms] if self.h2_workloads else []
        self.arms = [x for x in self.arms if x != "h2o"]
        self.required_h2 = [x for x in a.require_h2_arms.split(",") if x]
        if not self.h2_arms:
            self.h2_workloads = []
        if not self.workloads:
            self.arms = []

    def describe_machine(self):
        a = self.a
        return {
            **machine(),
            "connections": a.connections, "duration_s": a.duration, "rounds": a.rounds,
            "warmup_s": a.warmup, "seed": self.seed,
            "loadavg_start": loadavg(),
            "ferry_note": self.ferry_note,
            **({"ferry_before_note": self.before_note} if self.before_bin else {}),
            "versions": {
                "wrk": tool_version(["wrk", "-v"]),
                "nginx": tool_version(["nginx", "-v"]),
                "haproxy": tool_version(["haproxy", "-v"]),
                "nghttpx": tool_version(["nghttpx", "--version"]),
                **({"h2load": tool_version(["h2load", "--version"]),
                    "h2o": tool_version(["h2o", "--version"])} if self.h2_workloads else {}),
            },
            "h2_connections": a.h2_connections, "h2_streams": a.h2_streams,
        }

    # ------------------------------------------------------------------------- start and stop

    def start_all(self):
        if self.ferry_bin:
            self.ferry_bin = self.snapshot(self.ferry_bin, "ferry")
        if self.before_bin:
            self.before_bin = self.snapshot(self.before_bin, "ferry_before")
        self.origin = start_origin(self.tmp)
        log(f"origin nginx on 127.0.0.1:{self.origin.port} (pids {self.origin.pids()})")
        self.scripts = write_wrk_scripts(self.tmp)
        self.start_plain_arms()
        self.start_tls_arms()
        self.start_h2_arms()
        if "ferry" in self.servers:
            self.meta["ferry_version_hint"] = self.ferry_note

    def snapshot(self, binary, key):
        """Others rebuild the tree while we run: bench a private copy of the binary. Its sha256
        prefix goes into meta[key + "_sha256"] and the note of its arm."""
        snap = os.path.join(self.tmp, key.replace("_", "-") + "-under-test")
        shutil.copy2(binary, snap)
        with open(snap, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()[:16]
        self.meta[key + "_sha256"] = sha
        self.meta[key + "_note"] = f"{self.meta[key + '_note']}, sha256 {sha}…"
        return snap

    def start_proxy(self, arm, tls=None, h2=None):
        if arm in ("ferry", BEFORE_ARM):
            binary = self.ferry_bin if arm == "ferry" else self.before_bin
            return start_ferry(self.tmp, self.origin.port, binary, tls=tls, h2=h2, name=arm)
        if arm == "floor":  # h2c: the relay in front of the origin's h2c listener
            up = self.origin.h2c_port if h2 == "h2c" else self.origin.port
            return start_floor(self.tmp, up, self.floor_bin, h2=h2)
        if arm == PARSE_FLOOR_ARM:
            return start_floor(self.tmp, self.origin.port, self.floor_bin, parse=True)
        starters = {"haproxy": start_haproxy, "nginx": start_nginx_proxy,
                    "nghttpx": start_nghttpx,
                    "h2o": lambda t, up, tls=None, h2=None: h2bench.start_h2o(t, up, h2, tls)}
        return starters[arm](self.tmp, self.origin.port, tls=tls, h2=h2)

    def start_instance(self, arm, label, group, start, ready, failure_key, failure_len=None):
        """Starts `arm` into group[arm] and waits until `ready(server)` passed; on a failure
        logs it, stops what started and records it in meta["arm_failures"][failure_key]. True
        when it runs."""
        try:
            s = start()
            group[arm] = s
            ready(s)
            time.sleep(0.3)  # let forked workers settle before listing pids
            log(f"{label} on 127.0.0.1:{s.port} (pids {s.pids()})")
            return True
        except Exception as e:  # noqa: BLE001 - report and carry on with the other arms
            log(f"{label}: failed to start: {e}")
            if arm in group:
                log(group[arm].log_tail())
                group.pop(arm).stop()
            self.meta.setdefault("arm_failures", {})[failure_key] = str(e)[:failure_len]
            return False

    def answers_http(self, label, tls=False):
        def ready(s):
            wait_http(s.port, proc=s.proc, tls=tls)
            body = wait_http(s.port, "/post", proc=s.proc, tls=tls)
            if body.decode() != RESPONSE_BODY:
                raise RuntimeError(f"unexpected body via {label}: {body!r}")
        return ready

    def start_plain_arms(self):
        for arm in list(self.arms):
            if arm != "direct" and not self.start_instance(
                    arm, arm, self.servers, lambda: self.start_proxy(arm),
                    self.answers_http(arm), arm):
                self.arms.remove(arm)
        self.ports = {arm: (self.servers[arm].port if arm != "direct" else self.origin.port)
                      for arm in self.arms}

    def start_tls_arms(self):
        if self.tls_workloads:
            tls = make_cert(self.tmp)
            for arm in list(self.tls_arms):
                label = f"{arm} (TLS)"
                if not self.start_instance(arm, label, self.tls_servers,
                                           lambda: self.start_proxy(arm, tls=tls),
                                           self.answers_http(label, tls=True), f"{arm}-tls"):
                    self.tls_arms.remove(arm)
        self.tls_ports = {arm: self.tls_servers[arm].port for arm in self.tls_arms}

    def start_h2_arms(self):
        h2_modes = sorted({H2_MODE[wl] for wl in self.h2_workloads})
        self.h2_ports = {m: {} for m in h2_modes}
        self.post_file = os.path.join(self.tmp, "post1k.bin")
        if not self.h2_workloads:
            return
        with open(self.post_file, "wb") as f:
            f.write(b"x" * POST_BYTES)
        tls = make_cert(self.tmp) if "h2tls" in h2_modes else None
        for mode in h2_modes:
            mtls = tls if mode == "h2tls" else None
            for arm in self.h2_arms:
                if arm == "floor" and mode != "h2c":
                    continue  # a byte relay terminates no TLS: the h2 floor is h2c only
                def ready(s, mode=mode):
                    benchlib.wait_tcp(f"127.0.0.1:{s.port}")
                    h2bench.check_h2(s.port, mode, RESPONSE_BODY, self.post_file, proc=s.proc)
                if self.start_instance(arm, f"{arm} ({mode})", self.h2_servers[mode],
                                       lambda: self.start_proxy(arm, tls=mtls, h2=mode), ready,
                                       f"{arm}-{mode}", failure_len=3000):
                    self.h2_ports[mode][arm] = self.h2_servers[mode][arm].port

    def stop_all(self):
        for s in (list(self.servers.values()) + list(self.tls_servers.values())
                  + [x for m in self.h2_servers.values() for x in m.values()]):
            s.stop()
        if self.origin:
            self.origin.stop()
        if self.a.keep_tmp:
            log(f"configs and logs kept in {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # ------------------------------------------------------------------------- load

    def h2load(self, wl, port, duration):
        return h2load_run(self.a, wl, port, self.tmp, self.post_file, duration)

    def warm_up(self):
        a = self.a
        if a.warmup <= 0:
            return
        for wl in self.workloads:
            for arm in self.arms:
                run_wrk(self.ports[arm], self.scripts[wl], a.warmup, self.connections_of(wl))
        for wl in self.tls_workloads:
            for arm in self.tls_arms:
                run_wrk(self.tls_ports[arm], self.scripts[wl], a.warmup, a.connections, tls=True)
        for wl in self.h2_workloads:
            for arm in self.h2_ports[H2_MODE[wl]]:
                self.h2load(wl, self.h2_ports[H2_MODE[wl]][arm], a.warmup)
        log(f"warm-up done ({a.warmup:g} s per arm and workload)")

    def run_round(self, rnd):
        # Plain workloads first in each round (their shuffles as before), then TLS ones.
        plan = [(wl, self.arms, False) for wl in self.workloads]
        plan += [(wl, self.tls_arms, True) for wl in self.tls_workloads]
        plan += [(wl, list(self.h2_ports[H2_MODE[wl]]), None) for wl in self.h2_workloads]
        for wl, wl_arms, is_tls in plan:
            order = wl_arms[:]
            self.rng.shuffle(order)
            for arm in order:
                if is_tls is None:  # HTTP/2: h2load against the arm's h2c or h2-TLS instance
                    self.run_h2(rnd, wl, arm)
                else:
                    self.run_http1(rnd, wl, arm, is_tls)

    def connections_of(self, wl):
        """wrk's connections in an HTTP/1.1 workload: --connections, one in the latency one."""
        return SEQ_CONNECTIONS if wl == SEQ_WORKLOAD else self.a.connections

    def run_h2(self, rnd, wl, arm):
        a, mode = self.a, H2_MODE[wl]
        s = self.h2_servers[mode][arm]
        if not s.alive():
            raise RuntimeError(f"{arm} ({mode}) died; log:\n{s.log_tail()}")
        port = self.h2_ports[mode][arm]
        r = measure(arm, self.h2_servers[mode], self.origin, port, None, a.duration,
                    a.h2_connections, load=lambda: self.h2load(wl, port, a.duration))
        r.update(round=rnd, workload=wl)
        self.runs.append(r)
        log(f"round {rnd}/{a.rounds} {wl:10s} {arm:12s} {r['rps']:9,.0f} req/s "
            f"p99 {r['p99_ms']:6.2f} ms {cpu_text(r)}"
            + (f" ERRORS {r['errors']} {r['error_detail']}" if r["errors"] else ""))

    def run_http1(self, rnd, wl, arm, is_tls):
        a = self.a
        for name, s in list(self.servers.items()) + list(self.tls_servers.items()):
            if not s.alive():
                raise RuntimeError(f"{name} died; log:\n{s.log_tail()}")
        tls_ferry = self.tls_servers["ferry"] if is_tls and arm == "ferry" else None
        hs0 = ferry_tls_counts(tls_ferry) if tls_ferry else None
        r = measure(arm, self.tls_servers if is_tls else self.servers, self.origin,
                    (self.tls_ports if is_tls else self.ports)[arm], self.scripts[wl],
                    a.duration, self.connections_of(wl), tls=is_tls,
                    core=SEQ_CORE if wl == SEQ_WORKLOAD else None)
        r.update(round=rnd, workload=wl)
        if is_tls and arm == "haproxy" and wl == "tls-hs":
            r["haproxy_reuse_pct"] = haproxy_reuse_pct(self.tls_servers["haproxy"])
        if hs0 is not None:
            hs1 = ferry_tls_counts(tls_ferry)
            r["ferry_tls"] = {k: hs1[k] - hs0[k] for k in hs1}
            acc = self.hs_counts.setdefault(wl, {"requests": 0, "ok": 0, "resumed": 0})
            acc["requests"] += r["requests"]
            for k in ("ok", "resumed"):
                acc[k] += r["ferry_tls"][k]
        self.runs.append(r)
        log(f"round {rnd}/{a.rounds} {wl:6s} {arm:12s} {r['rps']:9,.0f} req/s "
            f"p99 {r['p99_ms']:6.2f} ms {cpu_text(r)}"
            + (f" ERRORS {r['errors']}" if r["errors"] else ""))

    # ------------------------------------------------------------------------- results

    def save_stats(self):
        out = self.a.out
        save_ferry_stats(self.servers.get("ferry"), out, "ferry_stats.txt")
        save_ferry_stats(self.servers.get(BEFORE_ARM), out, "ferry_before_stats.txt")
        self.meta["ferry_tls_handshakes"] = {
            wl: (f"{c['ok']:,} completed ({c['ok'] / max(c['requests'], 1):.3f} per request), "
                 f"{c['resumed']:,} of them resumed ({c['resumed'] / max(c['ok'], 1):.0%})")
            for wl, c in self.hs_counts.items()}
        save_ferry_stats(self.tls_servers.get("ferry"), out, "ferry_tls_stats.txt")
        for mode, by_arm in self.h2_servers.items():
            save_ferry_stats(by_arm.get("ferry"), out, f"ferry_{mode}_stats.txt")

    def report(self):
        meta, runs = self.meta, self.runs
        meta["loadavg_end"] = loadavg()
        meta["elapsed_s"] = round(time.time() - self.started, 1)
        meta["arms"] = self.arms
        meta["tls_arms"] = self.tls_arms
        meta["h2_arms"] = self.h2_arms
        hp = [r["haproxy_reuse_pct"] for r in runs if r.get("haproxy_reuse_pct") is not None]
        if hp:
            meta["haproxy_reuse_pct"] = {"tls-hs": med(hp)}
        summary = summarize(runs, self.arms, self.workloads)
        summary.update(summarize(runs, self.tls_arms, self.tls_workloads))
        summary.update(summarize(runs, self.h2_arms, self.h2_workloads))
        self.summary = summary
        benchlib.write_results(self.a.out, "passthrough",
                               render_markdown(meta, summary, self.arms),
                               {"meta": meta, "summary": summary, "runs": runs}, indent=1)

    def check_required_h2_arms(self):
        """--require-h2-arms: each named arm ran every HTTP/2 scenario, every run without
        errors; exits 1 otherwise."""
        bad = []
        for arm in self.required_h2:
            for wl in self.h2_workloads:
                if arm == "floor" and H2_MODE[wl] != "h2c":
                    continue  # the relay has no TLS instance
                s = self.summary.get(wl, {}).get(arm)
                if not s:
                    failure = self.meta.get("arm_failures", {}).get(arm + "-" + H2_MODE[wl], "?")
                    bad.append(f"{arm} {wl}: not run ({failure})")
                elif s["errors"]:
                    bad.append(f"{arm} {wl}: {s['errors']} errors")
        if bad:
            log("required HTTP/2 arms failed: " + "; ".join(bad))
            sys.exit(1)


if __name__ == "__main__":
    main()
