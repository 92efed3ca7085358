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
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import benchlib  # noqa: E402  (bench/benchlib/)
from benchlib.sampling import cpu_seconds, status_kib  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summary import (  # noqa: E402  (bench/sse/summary.py: the arms, pacing, report tables)
    ARMS, H2_ARMS, OWNER_ARMS, interval_for, parse_intervals, report)

COUNTERS = ["ferry_forward_attempts_total", "ferry_forward_completed_total",
            "ferry_forward_cut_total", "ferry_forward_failed_total",
            "ferry_forward_cancelled_total", "ferry_responses_cut_total",
            "ferry_stream_idle_timeouts_total", "ferry_watermark_pauses_total",
            "ferry_upstream_overflow_total", "ferry_downstream_sent_bytes_total"]


# ------------------------------------------------------------- processes

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


def start_owner_pair(arm, tmp, procs, binaries, members, emulators, owner, nonowner):
    """An owner arm's ferries: one in front of the owner's emulator whose listener admits every
    feed as a stream of one connection, and the forwarding ferry beside the non-owner that
    names it as the owner's URL. Each arm has its own pair, so one arm's pooled connections
    never show in the other's count. Returns (the forwarding ferry's address, its Server)."""
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
    return addr, server


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
        if arm in arms:
            peers[arm] = start_owner_pair(arm, tmp, procs, binaries, members, emulators, owner,
                                          nonowner)
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
                                        status_kib(self.server.proc.pid).get("VmRSS", 0))
            for k, v in owner_gauges(self.server.admin).items():
                self.max[k] = max(self.max.get(k, 0), v)

    def finish(self):
        self.stop.set()
        self.thread.join()
        self.max["vmhwm_kib"] = status_kib(self.server.proc.pid).get("VmHWM", 0)
        self.max["owner_vmhwm_kib"] = status_kib(self.server.owner_server.proc.pid).get("VmHWM", 0)
        return self.max


# ------------------------------------------------------------- runs

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


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_matrix_args(ap)
    add_h2_args(ap)
    add_owner_args(ap)
    ap.add_argument("--run-timeout", type=float, default=600)
    ap.add_argument("--members", type=int, default=4)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--build", default=os.path.join(ROOT, "build-sse"))
    ap.add_argument("--ferry", help="ferry binary (default: BUILD/app/ferry)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--keep-tmp", action="store_true")
    args = ap.parse_args()
    set_defaults(args)
    split_lists(args)
    return args


def add_matrix_args(ap):
    """The fanout × pacing matrix's options (every arm but the h2 and owner ones)."""
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


def add_h2_args(ap):
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


def add_owner_args(ap):
    ap.add_argument("--owner-feeds", type=int, default=1000,
                    help="owner arms: feeds on one h2c client connection, all forwarded to one "
                         "owner (default 1000)")
    ap.add_argument("--owner-events", type=int,
                    help="owner arms: events per run (default 600; quick 300)")
    ap.add_argument("--owner-interval-us", type=float, default=10000,
                    help="owner arms: one publish every this many µs (default 10000: 100k "
                         "deliveries/s at 1000 feeds)")


def set_defaults(args):
    """The defaults that depend on --quick or on other options."""
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


def split_lists(args):
    """The comma lists as Python lists (and a set), every name checked; exits on an unknown
    one."""
    args.stall_fanout_set = {int(x) for x in args.stall_fanouts.split(",") if x}
    args.fanout_list = [int(x) for x in args.fanouts.split(",") if x]
    args.arm_list = [a for a in args.arms.split(",") if a]
    args.pacing_list = [p for p in args.pacings.split(",") if p]
    args.h2_pacing_list = [p for p in args.h2_pacings.split(",") if p]
    for p in args.h2_pacing_list:
        if p not in ("paced", "held"):
            sys.exit(f"run.py: unknown h2 pacing {p}")
    for a in args.arm_list:
        if a not in ARMS:
            sys.exit(f"run.py: unknown arm {a}")
    for p in args.pacing_list:
        if p not in ("paced", "unpaced", "stall"):
            sys.exit(f"run.py: unknown pacing {p}")


def main():
    args = parse_args()
    arms = args.arm_list
    tmp = tempfile.mkdtemp(prefix="ssebench-")
    procs = benchlib.Procs()
    t0 = time.time()
    load_before = os.getloadavg()
    try:
        bench = SseBench(args, tmp, procs)
        bench.warm_up()
        for rnd in range(args.rounds):
            bench.run_round(rnd)
    finally:
        procs.stop()
        if not args.keep_tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept {tmp}", file=sys.stderr)
    pacings, h2_pacings, fanouts = args.pacing_list, args.h2_pacing_list, args.fanout_list
    report_pacings = pacings + [p for p in h2_pacings if p not in pacings]
    report_fanouts = fanouts + ([args.h2_feeds] if any(a in H2_ARMS for a in arms)
                                and args.h2_feeds not in fanouts else [])
    report_fanouts += ([args.owner_feeds] if any(a in OWNER_ARMS for a in arms)
                       and args.owner_feeds not in report_fanouts else [])
    if any(a in OWNER_ARMS for a in arms) and "paced" not in report_pacings:
        report_pacings.append("paced")
    ok = report(args, arms, report_pacings, report_fanouts, bench.runs, time.time() - t0,
                load_before, os.getloadavg())
    return 0 if ok else 1


class SseBench:
    """The cell, the peers of the arms, and whose CPU and counters each run records; then the
    warm-up and the rounds (main() takes the steps)."""

    def __init__(self, args, tmp, procs):
        self.args, self.runs = args, []
        arms = args.arm_list
        self.cell, self.binaries = benchlib.start_cell(
            args, tmp, procs, {"sse-bench": "bench/sse/sse-bench",
                               "floor-relay": "bench/sse/floor-relay"},
            "build: see bench/sse/README.md")
        cell = self.cell
        members, self.emulators = cell.names(), cell.addrs("emulator")
        self.ferries, admins = cell.addrs("ferry"), cell.addrs("admin")
        # pids of the cell's processes, 'emulator:<m>' / 'ferry:<m>', for CPU accounting
        who = {f"{k}:{m}": p for (k, m), p in cell.member_pids.items()}
        owner, nonowner = self.owner, self.nonowner = members[0], members[1]
        peers = self.peers = start_peers(arms, tmp, procs, self.binaries, members,
                                         self.emulators, owner, nonowner)
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
        self.who, self.watched = who, watched
        print(f"cell: {len(members)} members; owner {owner} (emulator {self.emulators[owner]}, "
              f"ferry {self.ferries[owner]}), subscribers' non-owner {nonowner} (ferry "
              f"{self.ferries[nonowner]}); {args.events} events, fanouts {args.fanout_list}, "
              f"{args.rounds} round(s)", file=sys.stderr)
        self.rng = random.Random(args.seed)

    def owned(self, prefix):
        """A stream owned by `owner`: found by PUT at its emulator (a non-owner answers 409)."""
        return benchlib.OwnedStreams(self.emulators[self.owner], prefix).create()

    def run(self, args, arm, pacing, fanout, stream):
        return run_arm(args, self.binaries["sse-bench"], arm, pacing, fanout, stream, self.owner,
                       self.nonowner, self.emulators, self.ferries, self.peers)

    def warm_up(self):
        """One small run per arm, discarded."""
        small = argparse.Namespace(**{**vars(self.args), "events": 200, "owner_events": 20})
        for arm in self.args.arm_list:
            w = self.run(small, arm, "paced", 2, self.owned(f"ssewarm-{arm}"))
            if "error" in w:
                print(f"warm-up {arm}: ERROR {w['error']}", file=sys.stderr)

    def run_round(self, rnd):
        args, arms = self.args, self.args.arm_list
        matrix_arms = [a for a in arms if a not in H2_ARMS and a not in OWNER_ARMS]
        owner_arms = [a for a in arms if a in OWNER_ARMS]
        h2_arms = [a for a in arms if a in H2_ARMS]
        blocks = [(fanout, pacing, matrix_arms) for fanout in args.fanout_list
                  for pacing in args.pacing_list
                  if matrix_arms and not (pacing == "stall"
                                          and fanout not in args.stall_fanout_set)]
        blocks += [(args.h2_feeds, pacing, h2_arms) for pacing in args.h2_pacing_list if h2_arms]
        blocks += [(args.owner_feeds, "paced", owner_arms)] if owner_arms else []
        for fanout, pacing, block_arms in blocks:
            order = block_arms[:]
            self.rng.shuffle(order)
            for arm in order:
                r = self.measure(rnd, arm, pacing, fanout)
                self.runs.append(r)
                print_run(rnd, fanout, pacing, arm, r)
                if not self.cell.alive():
                    sys.exit("run.py: ferry-cell exited during the runs (see logs)")

    def measure(self, rnd, arm, pacing, fanout):
        """One run, with the CPU of every watched process and the ferries' counters."""
        who, watched = self.who, self.watched
        stream = self.owned(f"sse-r{rnd}-f{fanout}-{pacing}-{arm}")
        before = {k: scrape(a, k != "h2") for k, a in watched.items()}
        cpu0 = {k: cpu_seconds(p) for k, p in who.items()}
        r = self.run(self.args, arm, pacing, fanout, stream)
        cpu1 = {k: cpu_seconds(p) for k, p in who.items()}
        after = {k: scrape(a, k != "h2") for k, a in watched.items()}
        r.update({"round": rnd, "fanout": fanout, "pacing": pacing})
        r["cpu_s"] = {k: round(cpu1[k] - cpu0[k], 3) for k in who
                      if cpu0[k] is not None and cpu1[k] is not None and cpu1[k] - cpu0[k] > 0}
        r["ferry_counters"] = {
            k: {c: after[k][c] - before[k][c] for c in after[k]
                if after[k][c] - before[k][c] != 0}
            for k in watched if before[k] and after[k]}
        return r


def print_run(rnd, fanout, pacing, arm, r):
    if "error" in r:
        print(f"round {rnd} fanout {fanout:3d} {pacing:7s} {arm:10s} ERROR {r['error']}",
              file=sys.stderr)
        return
    lat = r["latency_us"]
    print(f"round {rnd} fanout {fanout:3d} {pacing:7s} {arm:10s} "
          f"rate {r['publish_rate']:8.0f}/s p50 {lat['p50']:9.1f} "
          f"p99 {lat['p99']:9.1f} p999 {lat['p999']:9.1f} us "
          f"delivered {r['delivered']}/{r['expected']:.0f} dup "
          f"{r['duplicates']} ooo {r['out_of_order']} ended "
          f"{r['feeds_ended_early']}"
          + (f" held {r['held']}" if "held" in r else ""), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
