#!/usr/bin/env python3
"""SSE live feeds through a forward hop (bench/sse/README.md).

Starts a cell with ferry-cell (N streams-emulators, a ferry beside each; the peer URLs point at
the owners' FERRIES), then runs sse-bench arms, interleaved and shuffled per round:

  direct     SSE subscribers on the owner's EMULATOR (no proxy)
  forwarded  SSE subscribers on a NON-owner's ferry: client -> ferry(non-owner) -> 409 from its
             emulator -> ferry(owner) -> owner emulator
  ownerferry subscribers on the owner's ferry (one pass-through hop, no 409)
  forwarded1 subscribers on another ferry for the non-owner whose peer table names the owner's
             INSTANCE (not its ferry): the forward crosses one ferry only
  haproxy    subscribers on a HAProxy in front of the owner's emulator (one hop, a peer proxy)
  floor      subscribers on floor-relay in front of the owner's emulator: a blocking read/write
             relay, the least any process in the path can add (the floor for one hop)
  h2         --h2-feeds (200) subscribers as streams of ONE h2c connection to a ferry with
             listener.http2 on, beside the owner (pass-through); runs paced, and "held": the
             same with one subscriber whose stream window is never reopened while the others run
  h2fwd      the same on an h2 ferry beside the non-owner whose peer table names the instances:
             every feed is forwarded to the owner
  h2nghttpx  the same on nghttpx (h2c frontend, HTTP/1.1 to the owner's emulator): the peer
  ownerh2    --owner-feeds (1000) subscribers as streams of one h2c connection to a ferry beside
             the non-owner that forwards every feed to ONE owner (a ferry in front of the
             owner's emulator, listener.http2.max_concurrent_streams raised) over HTTP/2
             (owner_protocol: h2, h2c): issue 13, at most 2 owner connections
  ownerh1    the same with HTTP/1.1 owners (owner_protocol: http1): one owner connection per
             feed. Both report the owner-side connections (ESTABLISHED to the owner ferry's
             port, /proc/net/tcp, and ferry_owner_connections_active) and the forwarding
             ferry's RSS, sampled while the feeds are live

In every arm the publisher appends to the owner's emulator directly (same path in every arm), so
the difference between arms is the subscription path. Each arm runs paced (one publish every
--interval-us, default 50) and unpaced (publish as fast as the window allows), for each fanout.

  bench/sse/run.py [--quick] [--events N] [--fanouts 1,10,100] [--rounds R]
                   [--arms direct,forwarded,forwarded1,ownerferry,haproxy,floor]
                   [--pacings paced,unpaced,stall]
                   [--interval-us 1:50,10:50,100:500]
                   [--window 16] [--build DIR] [--ferry PATH] [--out DIR] [--keep-tmp]

Writes OUT/sse.md (table) and OUT/sse.json (every run), OUT defaulting to bench/results/.
"""
import argparse
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import benchlib  # noqa: E402  (bench/benchlib.py)

ARMS = ["direct", "forwarded", "forwarded1", "ownerferry", "haproxy", "floor", "h2", "h2fwd",
        "h2nghttpx", "ownerh2", "ownerh1"]
# Arms whose subscribers are streams of one HTTP/2 connection: they run in their own block, at
# --h2-feeds subscribers, pacings paced and held (not in the fanout × pacing matrix).
H2_ARMS = ("h2", "h2fwd", "h2nghttpx")
# Issue 13: --owner-feeds feeds on one h2c client connection, all forwarded to one owner over
# HTTP/2 or HTTP/1.1; their own block, paced only.
OWNER_ARMS = ("ownerh2", "ownerh1")
ARM_TITLES = {
    "direct": "owner's emulator (direct)",
    "forwarded": "non-owner's ferry -> owner's ferry -> owner",
    "forwarded1": "non-owner's ferry -> owner (peers = instances)",
    "ownerferry": "owner's ferry (pass-through)",
    "haproxy": "HAProxy -> owner (pass-through)",
    "floor": "floor relay -> owner (read/write only)",
    "h2": "ferry over h2c, one connection (pass-through)",
    "h2fwd": "non-owner's ferry over h2c, one connection -> owner",
    "h2nghttpx": "nghttpx over h2c, one connection (pass-through)",
    "ownerh2": "ferry -> one owner over HTTP/2 (h2c)",
    "ownerh1": "ferry -> one owner over HTTP/1.1",
}
FERRY_ARMS = ("forwarded", "forwarded1", "ownerferry", "h2", "h2fwd", "ownerh2", "ownerh1")
# Whose CPU an arm's "proxy CPU" column sums (keys of run["cpu_s"]).
ARM_CPU_PREFIX = {"forwarded": "ferry:", "ownerferry": "ferry:", "forwarded1": "forwarded1",
                  "haproxy": "haproxy", "floor": "floor", "h2": "h2", "h2fwd": "h2fwd",
                  "h2nghttpx": "h2nghttpx", "ownerh2": "ownerh2", "ownerh1": "ownerh1"}
COUNTERS = ["ferry_forward_attempts_total", "ferry_forward_completed_total",
            "ferry_forward_cut_total", "ferry_forward_failed_total",
            "ferry_forward_cancelled_total", "ferry_responses_cut_total",
            "ferry_stream_idle_timeouts_total", "ferry_watermark_pauses_total",
            "ferry_upstream_overflow_total", "ferry_downstream_sent_bytes_total"]


# ------------------------------------------------------------- processes

def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


def scrape(admin, forwarding=True):
    """Counters of interest, summed over label sets, from http://<admin>/stats (without the
    forward families for a ferry whose forwarding is off: it does not export them)."""
    return benchlib.scrape(admin, [c for c in COUNTERS
                                   if forwarding or not c.startswith("ferry_forward_")])


def haproxy_config(port, owner_emulator):
    # `option http-no-delay`: without it HAProxy holds small chunks of a streamed body to
    # coalesce them (MSG_MORE), which measured +9.3 ms at p50 on this feed. An operator putting
    # HAProxy in front of live feeds sets it; ferry has no such knob and never holds data.
    return f"""global
    nbthread 1
    maxconn 4096
defaults
    mode http
    option http-no-delay
    timeout connect 5s
    timeout client 300s
    timeout server 300s
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    server owner {owner_emulator}
"""


def start_forwarder(tmp, binaries, members, emulators, nonowner, name="forwarded1", h2=False,
                    forwarding=True, max_streams=None, peer_urls=None, owner_protocol=None):
    """A second ferry for the non-owner, beside its emulator, whose fleet file names the
    members' INSTANCES: a feed it forwards crosses this one ferry, as in a fleet whose urls.json
    publishes instances rather than their sidecars. Returns (listener addr, Server).
    h2: with listener.http2 on (h2c by its preface on the same port); forwarding=False: a
    pass-through ferry (the h2 arm puts one beside the owner). max_streams: the listener's
    http2.max_concurrent_streams, upstream.max_connections (one connection per HTTP/1.1
    feed, to the local instance or an owner) and limits.max_active_requests_per_connection; peer_urls: {member: url} over the instances' URLs;
    owner_protocol: forwarding.owner_protocol (None: not set, the default)."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    urls = os.path.join(d, "urls.json")
    with open(urls, "w") as f:
        json.dump({**{m: f"http://{emulators[m]}" for m in members}, **(peer_urls or {})}, f)
    host, port = emulators[nonowner].rsplit(":", 1)
    config = os.path.join(d, "ferry.yaml")
    with open(config, "w") as f:  # the YAML of integration/cell/fleet_files.cc
        f.write(f"instance_name: {nonowner}\n"
                + ("listener: {address: 127.0.0.1, port: 0}\n" if not h2 else
                   # h2 streams: the other listener.http2 keys at their defaults
                   "listener: {address: 127.0.0.1, port: 0, http2: {enabled: true"
                   + (f", max_concurrent_streams: {max_streams}" if max_streams else "")
                   + "}}\n")
                + f"local_instance: {{address: {host}, port: {port}}}\n"
                "admin: {address: 127.0.0.1, port: 0}\n"
                "workers: 1\n"
                + (f"upstream: {{max_connections: {max_streams}}}\n" if max_streams else "")
                # every feed of the one subscriber connection runs at once (the connection's
                # share, limits.max_active_requests_per_connection, is 100 by default)
                + f"limits: {{max_active_requests_per_connection: {max_streams or 256}}}\n"
                + (f"forwarding: {{enabled: true, fleet_file: {urls}, allow_http_peers: true"
                   + (f", owner_protocol: {owner_protocol}" if owner_protocol else "") + "}\n"
                   if forwarding else "forwarding: {enabled: false}\n"))
    server = benchlib.Server(f"ferry-{name}", [binaries["ferry"], "--config", config], d)
    end = time.time() + 15
    while time.time() < end and server.alive():
        m = re.search(r"ferry ready listener=(\S+) admin=(\S+)", open(server.log_path).read())
        if m:
            server.admin = m.group(2)
            return m.group(1), server
        time.sleep(0.05)
    server.stop()
    sys.exit(f"run.py: the {name} ferry did not start:\n{server.log_tail()}")


def start_peers(arms, tmp, procs, binaries, members, emulators, owner, nonowner):
    """What the arms beyond the cell subscribe through: {arm: (listen addr, Server)}."""
    owner_emulator = emulators[owner]
    peers = {}
    if "forwarded1" in arms:
        peers["forwarded1"] = start_forwarder(tmp, binaries, members, emulators, nonowner)
    if "h2" in arms:  # beside the owner, pass-through
        peers["h2"] = start_forwarder(tmp, binaries, members, emulators, owner, name="h2",
                                      h2=True, forwarding=False)
    if "h2fwd" in arms:  # beside the non-owner, forwards to the owner's instance
        peers["h2fwd"] = start_forwarder(tmp, binaries, members, emulators, nonowner,
                                         name="h2fwd", h2=True)
    for arm in OWNER_ARMS:
        if arm not in arms:
            continue
        # One owner: a ferry in front of the owner's emulator whose listener admits every feed
        # as a stream of one connection; the forwarding ferry beside the non-owner names it as
        # the owner's URL. Each arm has its own pair, so one arm's pooled connections never
        # show in the other's count.
        streams = max(args_owner_feeds(), 100) + 100
        owner_addr, owner_server = start_forwarder(
            tmp, binaries, members, emulators, owner, name=f"{arm}-owner", h2=True,
            forwarding=False, max_streams=streams)
        procs.at_stop(owner_server.stop)
        addr, server = start_forwarder(
            tmp, binaries, members, emulators, nonowner, name=arm, h2=True, max_streams=streams,
            peer_urls={owner: f"http://{owner_addr}"},
            owner_protocol="h2" if arm == "ownerh2" else "http1")
        server.owner_addr, server.owner_server = owner_addr, owner_server
        peers[arm] = (addr, server)
    if "h2nghttpx" in arms:
        # nghttpx 1.52: h2c (and HTTP/1.1) on a cleartext frontend; one HTTP/1.1 backend
        # connection per feed, so the per-host limit (default 8) and the stream limit (default
        # 100) are raised above any --h2-feeds.
        port = benchlib.free_port()
        peers["h2nghttpx"] = (f"127.0.0.1:{port}", benchlib.Server("nghttpx", [
            "nghttpx", "--conf=/dev/null", "--workers=1", f"--frontend=127.0.0.1,{port};no-tls",
            f"--backend={owner_emulator.replace(':', ',')};;proto=http/1.1",
            "--frontend-http2-max-concurrent-streams=10000",
            "--backend-connections-per-host=10000",
            f"--errorlog-file={tmp}/nghttpx-error.log"], tmp))
    if "haproxy" in arms:
        port = benchlib.free_port()
        path = os.path.join(tmp, "haproxy.cfg")
        with open(path, "w") as f:
            f.write(haproxy_config(port, owner_emulator))
        # -db: foreground, one process, one thread.
        peers["haproxy"] = (f"127.0.0.1:{port}",
                            benchlib.Server("haproxy", ["haproxy", "-db", "-f", path], tmp))
    if "floor" in arms:
        addr = f"127.0.0.1:{benchlib.free_port()}"
        peers["floor"] = (addr, benchlib.Server(
            "floor-relay", [binaries["floor-relay"], "--target", owner_emulator, "--listen", addr],
            tmp))
    for addr, server in peers.values():
        procs.at_stop(server.stop)
        try:
            benchlib.wait_tcp(addr, 10)
        except RuntimeError:
            sys.exit(f"run.py: {server.name} did not listen on {addr}:\n{server.log_tail()}")
    return peers


# ------------------------------------------------------------- owner-side sampling

_OWNER_FEEDS = [1000]


def args_owner_feeds():
    return _OWNER_FEEDS[0]


def established_to(port):
    """ESTABLISHED TCP connections whose remote end is 127.0.0.1:`port` (the client ends of the
    connections to that listener), from /proc/net/tcp and tcp6."""
    n = 0
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "01" and int(fields[2].rsplit(":", 1)[1], 16) == port:
                        n += 1
        except OSError:
            pass
    return n


def rss_kib(pid):
    """VmRSS and VmHWM of `pid` in KiB."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return out


def owner_gauges(admin):
    """ferry_owner_connections_active{protocol} and ferry_owner_h2_streams_active from the
    forwarding ferry's /stats ({} when it does not export them)."""
    try:
        with urllib.request.urlopen(f"http://{admin}/stats", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    out = {}
    for m in re.finditer(r'^ferry_owner_connections_active\{protocol="(\w+)"\} (\S+)$', text,
                         re.M):
        out[f"connections_active_{m.group(1)}"] = float(m.group(2))
    m = re.search(r"^ferry_owner_h2_streams_active (\S+)$", text, re.M)
    if m:
        out["h2_streams_active"] = float(m.group(1))
    return out


class OwnerSideSampler:
    """While an owner arm runs: the most connections to the owner's port seen at once, the
    forwarding ferry's owner gauges at their highest, and its RSS (every 200 ms)."""

    def __init__(self, server):
        self.server = server
        self.port = benchlib.port_of(server.owner_addr)
        self.stop = threading.Event()
        self.max = {"established": 0, "vmrss_kib": 0}
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.wait(0.2):
            self.max["established"] = max(self.max["established"], established_to(self.port))
            self.max["vmrss_kib"] = max(self.max["vmrss_kib"],
                                        rss_kib(self.server.proc.pid).get("VmRSS", 0))
            for k, v in owner_gauges(self.server.admin).items():
                self.max[k] = max(self.max.get(k, 0), v)

    def finish(self):
        self.stop.set()
        self.thread.join()
        self.max["vmhwm_kib"] = rss_kib(self.server.proc.pid).get("VmHWM", 0)
        self.max["owner_vmhwm_kib"] = rss_kib(self.server.owner_server.proc.pid).get("VmHWM", 0)
        return self.max


# ------------------------------------------------------------- runs

def parse_intervals(text):
    """'50' (every fanout) or '1:50,10:50,100:500' (per fanout; the largest fanout not above
    a run's fanout applies)."""
    if ":" not in text:
        return {0: float(text)}
    out = {}
    for part in text.split(","):
        f, us = part.split(":")
        out[int(f)] = float(us)
    return out


def interval_for(args, fanout):
    table = args.intervals
    keys = sorted(k for k in table if k <= fanout) or [min(table)]
    return table[keys[-1]]


def run_arm(args, bench, arm, pacing, fanout, stream, owner, nonowner, emulators, ferries,
            peers):
    sub = {"direct": emulators[owner], "forwarded": ferries[nonowner],
           "ownerferry": ferries[owner]}.get(arm) or peers[arm][0]
    interval = interval_for(args, fanout) if pacing in ("paced", "held") else 0
    if arm in H2_ARMS:
        args = argparse.Namespace(**{**vars(args), "events": args.h2_events})
        interval = args.h2_interval_us
    if arm in OWNER_ARMS:
        args = argparse.Namespace(**{**vars(args), "events": args.owner_events})
        interval = args.owner_interval_us
    argv = [bench, "--publish", emulators[owner], "--subscribe", sub, "--stream", stream,
            "--events", str(args.events), "--subscribers", str(fanout), "--interval-us",
            str(interval), "--window", str(args.window), "--create", "--arm", arm,
            "--drain-timeout-ms", str(args.drain_timeout_ms)]
    if pacing == "stall":
        argv += ["--stall-ms", str(args.stall_ms), "--pad", str(args.stall_pad)]
        argv += ["--drain-timeout-ms", str(max(args.drain_timeout_ms, 2 * args.stall_ms))]
    if arm in H2_ARMS or arm in OWNER_ARMS:
        argv += ["--h2", "--h2-window", str(args.h2_window)]
        if args.h2_pad:
            argv += ["--pad", str(args.h2_pad)]
        if pacing == "held":
            argv.append("--stall-one")
    sampler = OwnerSideSampler(peers[arm][1]) if arm in OWNER_ARMS else None
    p = subprocess.run(argv, capture_output=True, text=True, timeout=args.run_timeout)
    owner_side = sampler.finish() if sampler else None
    if p.returncode != 0 or not p.stdout.strip():
        return {"arm": arm, "error": (p.stderr.strip() or f"exit {p.returncode}")[-2000:]}
    r = json.loads(p.stdout.strip().splitlines()[-1])
    if owner_side:
        r["owner_side"] = owner_side
    if p.stderr.strip():
        r["stderr"] = p.stderr.strip()[-2000:]
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2000 events, 1 round (< ~1 min)")
    ap.add_argument("--events", type=int, help="events per run (default 20000; quick 2000)")
    ap.add_argument("--fanouts", default="1,10,100")
    ap.add_argument("--rounds", type=int, help="rounds (default 3; quick 1)")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--pacings", default="paced,unpaced,stall",
                    help="paced, unpaced, stall (unpaced + all subscribers stop reading for "
                         "--stall-ms once 25%% of the events are out)")
    ap.add_argument("--interval-us", default="1:50,10:50,100:500",
                    help="paced: one publish every this many microseconds; one number, or per "
                         "fanout F:US,... (default: 50 us, 500 us from fanout 100 where the "
                         "emulator alone sustains only ~7k publishes/s)")
    ap.add_argument("--stall-ms", type=int, default=1000,
                    help="pacing 'stall': unpaced, every subscriber stops reading this long")
    ap.add_argument("--stall-pad", type=int,
                    help="pacing 'stall': bytes of padding per event, to overfill socket and "
                         "proxy buffers (default: 16 MiB per subscriber over the run, >= 1000)")
    ap.add_argument("--stall-fanouts", default="1,10",
                    help="fanouts that run the stall pacing (each stalled subscriber holds up "
                         "to ~16 MiB in the emulator)")
    ap.add_argument("--window", type=int, default=16,
                    help="publisher: most appends in flight (pipelined on one connection)")
    ap.add_argument("--drain-timeout-ms", type=int, default=10000)
    ap.add_argument("--h2-feeds", type=int, default=200,
                    help="h2 arms: subscribers, all streams of one h2c connection (default 200)")
    ap.add_argument("--h2-events", type=int,
                    help="h2 arms: events per run (default 2000; quick 1000)")
    ap.add_argument("--h2-interval-us", type=float, default=2000,
                    help="h2 arms: one publish every this many µs (default 2000: 500 events/s, "
                         "100k deliveries/s at 200 feeds, which the emulator sustains on the "
                         "2-core VM; faster measures its queue, not the path)")
    ap.add_argument("--h2-pacings", default="paced,held",
                    help="h2 arms: paced (the --interval-us schedule), held (paced, and one "
                         "subscriber's stream window never reopens until the others are done)")
    ap.add_argument("--h2-window", type=int, default=65535,
                    help="h2 arms: stream window the client offers (SETTINGS_INITIAL_WINDOW_SIZE)")
    ap.add_argument("--h2-pad", type=int, default=0,
                    help="h2 arms: bytes of padding per event (more bytes for the held stream "
                         "to back up into ferry's buffers)")
    ap.add_argument("--owner-feeds", type=int, default=1000,
                    help="owner arms: feeds on one h2c client connection, all forwarded to one "
                         "owner (default 1000)")
    ap.add_argument("--owner-events", type=int,
                    help="owner arms: events per run (default 600; quick 300)")
    ap.add_argument("--owner-interval-us", type=float, default=10000,
                    help="owner arms: one publish every this many µs (default 10000: 100k "
                         "deliveries/s at 1000 feeds)")
    ap.add_argument("--run-timeout", type=float, default=600)
    ap.add_argument("--members", type=int, default=4)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--build", default=os.path.join(ROOT, "build-sse"))
    ap.add_argument("--ferry", help="ferry binary (default: BUILD/proxy/server/ferry)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--keep-tmp", action="store_true")
    args = ap.parse_args()
    if args.events is None:
        args.events = 2000 if args.quick else 20000
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    if args.h2_events is None:
        args.h2_events = 1000 if args.quick else 2000
    if args.owner_events is None:
        args.owner_events = 300 if args.quick else 600
    _OWNER_FEEDS[0] = args.owner_feeds
    args.intervals = parse_intervals(args.interval_us)
    if args.stall_pad is None:
        args.stall_pad = max(1000, (16 << 20) // args.events)
    stall_fanouts = {int(x) for x in args.stall_fanouts.split(",") if x}
    fanouts = [int(x) for x in args.fanouts.split(",") if x]
    arms = [a for a in args.arms.split(",") if a]
    pacings = [p for p in args.pacings.split(",") if p]
    h2_pacings = [p for p in args.h2_pacings.split(",") if p]
    for p in h2_pacings:
        if p not in ("paced", "held"):
            sys.exit(f"run.py: unknown h2 pacing {p}")
    for a in arms:
        if a not in ARMS:
            sys.exit(f"run.py: unknown arm {a}")
    for p in pacings:
        if p not in ("paced", "unpaced", "stall"):
            sys.exit(f"run.py: unknown pacing {p}")

    tmp = tempfile.mkdtemp(prefix="ssebench-")
    procs = benchlib.Procs()
    runs = []
    t0 = time.time()
    load_before = os.getloadavg()
    try:
        cell, binaries = benchlib.start_cell(
            args, tmp, procs, {"sse-bench": "bench/sse/sse-bench",
                               "floor-relay": "bench/sse/floor-relay"},
            "build: see bench/sse/README.md")
        members, emulators = cell.names(), cell.addrs("emulator")
        ferries, admins = cell.addrs("ferry"), cell.addrs("admin")
        # pids of the cell's processes, 'emulator:<m>' / 'ferry:<m>', for CPU accounting
        who = {f"{k}:{m}": p for (k, m), p in cell.member_pids.items()}
        owner, nonowner = members[0], members[1]
        peers = start_peers(arms, tmp, procs, binaries, members, emulators, owner, nonowner)
        who.update({arm: server.proc.pid for arm, (_, server) in peers.items()})
        # nghttpx: its worker process too ("h2nghttpx:<pid>").
        if "h2nghttpx" in peers:
            for pid in benchlib.descendants(peers["h2nghttpx"][1].proc.pid):
                who[f"h2nghttpx:{pid}"] = pid
        # Whose /stats counters each run records: the cell's two ferries on the paths, and the
        # forwarded1 arm's own ferry.
        watched = {"owner": admins[owner], "nonowner": admins[nonowner]}
        for arm in ("forwarded1", "h2", "h2fwd") + OWNER_ARMS:  # the ferries run.py starts
            if arm in peers:
                watched[arm] = peers[arm][1].admin
        for arm in OWNER_ARMS:  # the owner's ferry's CPU counts in the arm's
            if arm in peers:
                who[f"{arm}:owner"] = peers[arm][1].owner_server.proc.pid
        # Streams owned by `owner`: found by PUT at its emulator (a non-owner answers 409).
        owned = lambda prefix: benchlib.OwnedStreams(emulators[owner], prefix).create()
        print(f"cell: {len(members)} members; owner {owner} (emulator {emulators[owner]}, ferry "
              f"{ferries[owner]}), subscribers' non-owner {nonowner} (ferry {ferries[nonowner]}); "
              f"{args.events} events, fanouts {fanouts}, {args.rounds} round(s)", file=sys.stderr)
        rng = random.Random(args.seed)
        counter = 0
        # Warm-up (discarded): one small run per arm.
        for arm in arms:
            s = owned(f"ssewarm-{arm}")
            w = run_arm(argparse.Namespace(**{**vars(args), "events": 200, "owner_events": 20}),
                        binaries["sse-bench"], arm, "paced", 2, s, owner, nonowner, emulators,
                        ferries, peers)
            if "error" in w:
                print(f"warm-up {arm}: ERROR {w['error']}", file=sys.stderr)
        matrix_arms = [a for a in arms if a not in H2_ARMS and a not in OWNER_ARMS]
        owner_arms = [a for a in arms if a in OWNER_ARMS]
        h2_arms = [a for a in arms if a in H2_ARMS]
        for rnd in range(args.rounds):
            blocks = [(fanout, pacing, matrix_arms) for fanout in fanouts for pacing in pacings
                      if matrix_arms and not (pacing == "stall" and fanout not in stall_fanouts)]
            blocks += [(args.h2_feeds, pacing, h2_arms) for pacing in h2_pacings if h2_arms]
            blocks += [(args.owner_feeds, "paced", owner_arms)] if owner_arms else []
            for fanout, pacing, block_arms in blocks:
                if True:
                    order = block_arms[:]
                    rng.shuffle(order)
                    for arm in order:
                        counter += 1
                        stream = owned(f"sse-r{rnd}-f{fanout}-{pacing}-{arm}")
                        before = {k: scrape(a, k != "h2") for k, a in watched.items()}
                        cpu0 = {k: cpu_seconds(p) for k, p in who.items()}
                        r = run_arm(args, binaries["sse-bench"], arm, pacing, fanout, stream,
                                    owner, nonowner, emulators, ferries, peers)
                        cpu1 = {k: cpu_seconds(p) for k, p in who.items()}
                        after = {k: scrape(a, k != "h2") for k, a in watched.items()}
                        r.update({"round": rnd, "fanout": fanout, "pacing": pacing})
                        r["cpu_s"] = {k: round(cpu1[k] - cpu0[k], 3) for k in who
                                      if cpu0[k] is not None and cpu1[k] is not None
                                      and cpu1[k] - cpu0[k] > 0}
                        r["ferry_counters"] = {
                            k: {c: after[k][c] - before[k][c] for c in after[k]
                                if after[k][c] - before[k][c] != 0}
                            for k in watched if before[k] and after[k]}
                        runs.append(r)
                        if "error" in r:
                            print(f"round {rnd} fanout {fanout:3d} {pacing:7s} {arm:10s} ERROR "
                                  f"{r['error']}", file=sys.stderr)
                        else:
                            lat = r["latency_us"]
                            print(f"round {rnd} fanout {fanout:3d} {pacing:7s} {arm:10s} "
                                  f"rate {r['publish_rate']:8.0f}/s p50 {lat['p50']:9.1f} "
                                  f"p99 {lat['p99']:9.1f} p999 {lat['p999']:9.1f} us "
                                  f"delivered {r['delivered']}/{r['expected']:.0f} dup "
                                  f"{r['duplicates']} ooo {r['out_of_order']} ended "
                                  f"{r['feeds_ended_early']}"
                                  + (f" held {r['held']}" if "held" in r else ""),
                                  file=sys.stderr)
                        if not cell.alive():
                            sys.exit("run.py: ferry-cell exited during the runs (see logs)")
    finally:
        procs.stop()
        if not args.keep_tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept {tmp}", file=sys.stderr)
    report_pacings = pacings + [p for p in h2_pacings if p not in pacings]
    report_fanouts = fanouts + ([args.h2_feeds] if any(a in H2_ARMS for a in arms)
                                and args.h2_feeds not in fanouts else [])
    report_fanouts += ([args.owner_feeds] if any(a in OWNER_ARMS for a in arms)
                       and args.owner_feeds not in report_fanouts else [])
    if any(a in OWNER_ARMS for a in arms) and "paced" not in report_pacings:
        report_pacings.append("paced")
    ok = report(args, arms, report_pacings, report_fanouts, runs, time.time() - t0,
                load_before, os.getloadavg())
    return 0 if ok else 1


def cpu_key_of(key, prefix):
    """Whether a run["cpu_s"] key belongs to an arm's CPU prefix: "ferry:" covers ferry:<m>;
    a name covers itself and name:<pid> (not another arm whose name starts the same)."""
    if prefix.endswith(":"):
        return key.startswith(prefix)
    return key == prefix or key.startswith(prefix + ":")


def fmt(x, nd=1):
    if x is None:
        return "–"
    if x >= 10000:
        return f"{x:,.0f}"
    return f"{x:.{nd}f}"


def hop_lines(summary):
    """One line per paced fanout: what the path adds at p50 through each proxy arm, and ferry's
    excess over the floor relay for its one-hop arms (the part of a hop that is ferry's own)."""
    names = (("ownerferry", "ferry pass-through"), ("forwarded1", "ferry forwarding"),
             ("forwarded", "forwarded via the owner's ferry (2 ferries)"), ("haproxy", "HAProxy"),
             ("floor", "floor relay"))
    out = []
    for fanout in sorted({s["fanout"] for s in summary if s["pacing"] == "paced"}):
        hop = {s["arm"]: s["hop_p50_us"] for s in summary
               if s["pacing"] == "paced" and s["fanout"] == fanout and "hop_p50_us" in s}
        parts = [f"{name} {hop[arm]:+.1f}" for arm, name in names if arm in hop]
        if not parts:
            continue
        line = f"Paced, fanout {fanout}, p50 added: " + ", ".join(parts) + " µs"
        excess = [f"{name} {hop[arm] - hop['floor']:+.1f}" for arm, name in names[:2]
                  if arm in hop and "floor" in hop]
        if excess:
            line += "; ferry − floor: " + ", ".join(excess) + " µs"
        out.append(line + ".  ")
    return out


def report(args, arms, pacings, fanouts, runs, elapsed, load_before, load_after):
    """Writes sse.md / sse.json; True when every ferry arm delivered every event exactly once,
    in order, and every forwarded arm was forwarded."""
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpus, "
                   f"{platform.release()}",
        "mode": "quick" if args.quick else "full",
        "events": args.events, "fanouts": fanouts, "rounds": args.rounds, "arms": arms,
        "pacings": pacings, "interval_us": args.interval_us, "window": args.window,
        "stall_ms": args.stall_ms, "stall_pad": args.stall_pad,
        "members": args.members, "elapsed_s": round(elapsed, 1),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
    }
    summary = []
    for pacing in pacings:
        for fanout in fanouts:
            direct_runs = {}
            for arm in sorted(arms, key=lambda a: a != "direct"):
                rs = [r for r in runs if r["arm"] == arm and r["pacing"] == pacing
                      and r["fanout"] == fanout and "error" not in r]
                errs = [r for r in runs if r["arm"] == arm and r["pacing"] == pacing
                        and r["fanout"] == fanout and "error" in r]
                if not rs and not errs:
                    continue
                if not rs:
                    summary.append({"pacing": pacing, "fanout": fanout, "arm": arm,
                                    "errors": [e["error"] for e in errs]})
                    continue
                med = lambda k: statistics.median(r["latency_us"][k] for r in rs)
                prefix = ARM_CPU_PREFIX.get(arm)  # None: no proxy on the path
                proxy_cpu = sum(v for r in rs for k, v in r.get("cpu_s", {}).items()
                                if cpu_key_of(k, prefix)) if prefix else None
                delivered = sum(r["delivered"] for r in rs)
                expected = sum(r["expected"] for r in rs)
                s = {
                    "pacing": pacing, "fanout": fanout, "arm": arm, "runs": len(rs),
                    "publish_rate": statistics.median(r["publish_rate"] for r in rs),
                    "achieved_interval_us": statistics.median(r["achieved_interval_us"]
                                                              for r in rs),
                    "p50_us": med("p50"), "p99_us": med("p99"), "p999_us": med("p999"),
                    "max_us": max(r["latency_us"]["max"] for r in rs),
                    "p50_us_rounds": [r["latency_us"]["p50"] for r in rs],
                    "p99_us_rounds": [r["latency_us"]["p99"] for r in rs],
                    "published": sum(r["publish_acked"] for r in rs),
                    "publish_errors": sum(r["publish_errors"] for r in rs),
                    "delivered": delivered, "expected": expected,
                    "delivered_ratio": delivered / expected if expected else None,
                    "duplicates": sum(r["duplicates"] for r in rs),
                    "out_of_order": sum(r["out_of_order"] for r in rs),
                    "feeds_ended_early": sum(r["feeds_ended_early"] for r in rs),
                    "forwarded_to_headers": sum(r["forwarded_to_headers"] for r in rs),
                    "proxy_cpu_us_per_delivery": (proxy_cpu * 1e6 / delivered)
                    if delivered and proxy_cpu is not None else None,
                    "ferry_watermark_pauses": sum(
                        v.get("ferry_watermark_pauses_total", 0)
                        for r in rs for v in r.get("ferry_counters", {}).values()),
                    "errors": [e["error"] for e in errs],
                }
                sides = [r["owner_side"] for r in rs if "owner_side" in r]
                if sides:
                    s["owner_side"] = {k: max(x.get(k, 0) for x in sides)
                                       for k in sorted({k for x in sides for k in x})}
                held = [r["held"] for r in rs if "held" in r]
                if held:
                    s["held"] = {
                        "runs": len(held),
                        "delivered_while_held": [h["delivered_while_held"] for h in held],
                        "held_bytes": [h["held_bytes"] for h in held],
                        "released": sum(1 for h in held if h["released"]),
                        "complete_after_release": sum(1 for h in held
                                                      if h["complete_after_release"]),
                        "duplicates": sum(h["duplicates"] for h in held),
                        "out_of_order": sum(h["out_of_order"] for h in held),
                        "release_to_complete_ms": [h["release_to_complete_ms"] for h in held],
                        "others_complete_after_last_ack_ms": [
                            h["others_complete_after_last_ack_ms"] for h in held],
                    }
                if arm == "direct":
                    direct_runs = {r["round"]: r for r in rs}
                elif pacing != "stall" and direct_runs:
                    # Paired: this arm minus direct in the same round (interleaved, so both
                    # saw the same machine), median over rounds.
                    for q in ("p50", "p99"):
                        diffs = [r["latency_us"][q] - direct_runs[r["round"]]["latency_us"][q]
                                 for r in rs if r["round"] in direct_runs]
                        if diffs:
                            s[f"hop_{q}_us"] = statistics.median(diffs)
                summary.append(s)

    lines = [
        f"### SSE through a forward hop — {meta['date']}, {meta['mode']}",
        "",
        f"One publisher (appends to the owner's emulator, ≤ {args.window} pipelined on one "
        f"connection), N subscribers `GET /v1/stream/<s>?offset=-1&live=sse`, {args.events} "
        f"events per run, {args.rounds} round(s), arms interleaved (shuffled per fanout and "
        f"pacing). Paced = one publish every "
        + ", ".join(f"{interval_for(args, f):g} µs at fanout {f}" for f in fanouts)
        + f" (open-loop schedule; publish/s shows what was achieved); unpaced = window kept "
        f"full; stall = unpaced with {args.stall_pad}-byte padded events, every subscriber stops "
        f"reading for {args.stall_ms} ms once 25% are out (latency there includes the stall). "
        f"Latency = publish send → event parsed by each subscriber, "
        f"µs (median over rounds). Machine: {meta['machine']}; load average "
        f"{meta['loadavg_before'][0]} before, {meta['loadavg_after'][0]} after; "
        f"{meta['elapsed_s']:.0f} s.",
        "",
        "| pacing | fanout | subscribers on | publish/s | p50 µs | p99 µs | p999 µs | max µs "
        "| hop p50 / p99 µs | delivered / published×N | dup | reordered | feeds ended | proxy CPU µs/delivery | ferry read pauses |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for s in summary:
        if "p50_us" not in s:
            lines.append(f"| {s['pacing']} | {s['fanout']} | {ARM_TITLES[s['arm']]} | ERROR: "
                         f"{'; '.join(s['errors'])[:200]} ||||||||||||")
            continue
        hop = (f"{s['hop_p50_us']:+.1f} / {s['hop_p99_us']:+.1f}" if "hop_p50_us" in s else "–")
        ratio = f"{s['delivered']:,} / {s['expected']:,.0f} ({s['delivered_ratio']:.4f})"
        lines.append(
            f"| {s['pacing']} | {s['fanout']} | {ARM_TITLES[s['arm']]} | {fmt(s['publish_rate'], 0)} "
            f"| {fmt(s['p50_us'])} | {fmt(s['p99_us'])} | {fmt(s['p999_us'])} | {fmt(s['max_us'])} "
            f"| {hop} | {ratio} | {s['duplicates']} | {s['out_of_order']} "
            f"| {s['feeds_ended_early']} | {fmt(s['proxy_cpu_us_per_delivery'], 2)} "
            f"| {s['ferry_watermark_pauses']:.0f} |")
    bad = [s for s in summary if "p50_us" in s and s["arm"] in FERRY_ARMS
           and (s["delivered_ratio"] != 1.0 or s["duplicates"] or s["out_of_order"]
                or s["feeds_ended_early"])]
    # A forwarded arm whose feeds lack Streams-Forwarded-To measured something else.
    unforwarded = [s for s in summary if "p50_us" in s
                   and (s["arm"].startswith("forwarded") or s["arm"] == "h2fwd"
                        or s["arm"] in OWNER_ARMS)
                   and s["forwarded_to_headers"] != s["runs"] * s["fanout"]]
    # held: the others completed while one stream was held (else it was never released), and
    # the hold bit (the held subscriber had fewer than every event when the others were done).
    held_bad = [s for s in summary if "held" in s and s["held"]["released"] != s["runs"]]
    held_loose = [s for s in summary if "held" in s
                  and any(d >= args.h2_events for d in s["held"]["delivered_while_held"])]
    errs = [s for s in summary if s.get("errors") and s["arm"] in FERRY_ARMS]
    lines.append("")
    lines += hop_lines(summary)
    lines += h2_lines(args, summary)
    owner_text, owner_bad = owner_lines(args, summary)
    lines += owner_text
    for s in held_bad:
        lines.append(f"**FAILED: {ARM_TITLES[s['arm']]}, held: the other subscribers did not all "
                     f"get every event while one stream was held ({s['held']['released']} of "
                     f"{s['runs']} runs released it)**  ")
    for s in held_loose:
        lines.append(f"**NOT CHECKED: {ARM_TITLES[s['arm']]}, held: the held subscriber got every "
                     f"event before the others were done: its window never closed (raise "
                     f"--events or --h2-pad, or lower --h2-window)**  ")
    for s in unforwarded:
        lines.append(f"**WARNING: {ARM_TITLES[s['arm']]}, {s['pacing']} fanout {s['fanout']}: "
                     f"{s['forwarded_to_headers']} of {s['runs'] * s['fanout']} feeds were "
                     "forwarded (Streams-Forwarded-To)**  ")
    lines.append("**Every event delivered exactly once, in order, on every ferry arm: "
                 + ("YES**" if not bad and not errs else "NO** — see the rows above and sse.json"))
    benchlib.write_results(args.out, "sse", "\n".join(lines) + "\n",
                           {"meta": meta, "summary": summary, "runs": runs})
    # A hold that never bit checked nothing: a failure too on ferry arms.
    return (not bad and not errs and not unforwarded and not owner_bad
            and not [s for s in held_bad + held_loose if s["arm"] in FERRY_ARMS])


def owner_lines(args, summary):
    """One line per owner arm (issue 13): owner-side connections while the feeds were live,
    the forwarding ferry's RSS and CPU; and whether HTTP/2 held them on at most 2 connections."""
    out, bad = [], False
    for arm in OWNER_ARMS:
        for s in summary:
            if s["arm"] != arm or "p50_us" not in s or "owner_side" not in s:
                continue
            o = s["owner_side"]
            gauges = ", ".join(f"{k.split('_')[-1]} {o[k]:.0f}" for k in o
                               if k.startswith("connections_active_")) or "not exported"
            out.append(
                f"**{ARM_TITLES[arm]}** — {s['fanout']} feeds, {args.owner_events} events each: "
                f"owner-side connections at most {o['established']} (ESTABLISHED to the owner's "
                f"port), ferry_owner_connections_active at most {gauges}; forwarding ferry RSS "
                f"{o['vmrss_kib'] / 1024:.1f} MiB at most while live (VmHWM "
                f"{o['vmhwm_kib'] / 1024:.1f} MiB), owner's ferry VmHWM "
                f"{o['owner_vmhwm_kib'] / 1024:.1f} MiB; both ferries' CPU "
                f"{fmt(s['proxy_cpu_us_per_delivery'], 2)} µs/delivery.  ")
            if arm == "ownerh2" and not (1 <= o["established"] <= 2):
                bad = True
                out.append(f"**FAILED: {ARM_TITLES[arm]}: {o['established']} owner-side "
                           "connections (at most 2 expected)**  ")
    return out, bad


def h2_lines(args, summary):
    """One line per h2 arm: paced figures of --h2-feeds feeds on one connection, and what the
    held run shows (the others' latency while one stream is held, what the held one got)."""
    out = []
    for arm in H2_ARMS:
        rows = {s["pacing"]: s for s in summary if s["arm"] == arm and "p50_us" in s}
        if not rows:
            continue
        parts = []
        p = rows.get("paced")
        if p:
            parts.append(f"paced (one publish per {args.h2_interval_us:g} µs, {args.h2_events} "
                         f"events): {p['fanout']} feeds on one connection, p50 / p99 "
                         f"{fmt(p['p50_us'])} / {fmt(p['p99_us'])} µs, delivered "
                         f"{p['delivered_ratio']:.4f}, {p['duplicates']} dup, "
                         f"{p['out_of_order']} reordered")
        h = rows.get("held")
        if h and "held" in h:
            hh = h["held"]
            parts.append(
                f"held: one stream's window never reopened ({args.h2_window} B) while the other "
                f"{h['fanout'] - 1} ran: their p50 / p99 {fmt(h['p50_us'])} / {fmt(h['p99_us'])} "
                f"µs; the held one had {', '.join(str(d) for d in hh['delivered_while_held'])} "
                f"of {args.h2_events} events when the others had all, then all of them "
                f"({hh['complete_after_release']} of {hh['runs']} runs) "
                f"{', '.join(f'{x:.1f}' for x in hh['release_to_complete_ms'])} ms after its "
                f"window reopened, {hh['duplicates']} dup, {hh['out_of_order']} reordered")
        out.append(f"**{ARM_TITLES[arm]}** — " + "; ".join(parts) + ".  ")
    return out


if __name__ == "__main__":
    sys.exit(main())
