#!/usr/bin/env python3
"""Fan-out bench (project issue 22): what N live SSE subscribers over S streams cost the owners
and the ferries, and what a rebalance does to them.

A cell of 4 streams-emulators, a ferry beside each (owner routing on; HTTP/1.1 or h2c between
the ferries: --owners), S JSON streams, one appender per stream at a fixed rate (straight to
the owner: idempotent producers, following 503/409 through hand-overs). Then, one arm after the
other on the same cell and streams, N subscribers (subscribers.py, one asyncio process per
--client-procs) spread evenly over the streams:

  ferry    through the ferries (subscriber k at ferry k mod 4) with ferry's defaults: one
           upstream feed per subscriber, resumed across a hand-over
  direct   at the owner's emulator itself; a feed that ends is opened again by the client from
           its last offset (following the 409 to the new owner)
  shared   through ferries started with --ferry-config-extra (default
           `live_feeds: {share: true, resume: true}`, issue 22): one upstream feed per stream per
           ferry worker; skipped with a message when `ferry --validate` refuses that config (a
           ferry older than live_feeds.share)

Per arm: upstream SSE feeds live at the owners (the emulators' /v1/debug/requests, sampled, and
feeds opened), event bytes the owners sent, events delivered (every subscriber checked against
the stream's content: 100 %, in order, none twice), delivery latency p50/p99 (append -> receipt,
one CLOCK_MONOTONIC), ferry CPU per delivered event and peak RSS, the clients' own CPU.
Those are measured in a steady window (--duration, no moves). --rebalance K: after it, K times
a member's shards move to the others and 3 s later back (the emulators' hand-over,
bench/cell/handover.py's recipe): feeds the clients saw end, events lost or duplicated, time
until every feed delivers again (p99), requests/s at the new owners.

  bench/fanout/run.py                                   # 10,000 subscribers, 100 streams
  bench/fanout/run.py --mode short                      # 200 / 10 / 10 s + 1 move (ctest)
  bench/fanout/run.py --rebalance 3
  bench/fanout/run.py --ferry-config-extra 'live_feeds: {share: true}'

Exit 1 when any subscriber of any arm lost, duplicated or reordered an event, or did not reach
its stream's tail. See bench/README.md, "Fan-out bench".
"""
import argparse
import http.client
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "bench", "cell"))
import benchlib  # noqa: E402
from benchlib import cell_configs, sampling  # noqa: E402
from benchlib.tables import fmt, log  # noqa: E402
import handover  # noqa: E402  (ownership, control: the hand-over recipe)
sys.path.insert(0, HERE)
from arm import arm_run  # noqa: E402  (bench/fanout/arm.py: one arm)
from benchlib import die_with_parent, wait_until  # noqa: E402

MODES = {"full": dict(subscribers=10_000, streams=100, duration=60.0, rebalance=0,
                     rebalance_gap=15.0),
         "short": dict(subscribers=200, streams=10, duration=10.0, rebalance=1,
                       rebalance_gap=10.0)}
DEFAULT_EXTRA = "live_feeds: {share: true, resume: true}"
HANDOVER_MS = 1000
ARMS = ("ferry", "direct", "shared")


# ---------------------------------------------------------------- the cell

class Fleet:
    """Emulators and ferries on held loopback ports (bench/faults' layout: the cell bench's
    ferry configs with owner routing on; urls.json names the ferries). Ferries are restarted
    per arm with that arm's config extra."""

    def __init__(self, args, tmp, bins):
        self.args, self.bins = args, bins
        self.members = [f"inst-{i + 1}" for i in range(4)]
        self.members_now = list(self.members)
        self.emulators = {m: f"127.0.0.1:{benchlib.free_port()}" for m in self.members}
        self.dir = os.path.join(tmp, "cell")
        layout = cell_configs.loopback_layout(self.dir, self.members, self.emulators)
        cell_configs.gen_compose_configs(self.dir, layout)
        self.ferries, self.admins = layout["ferries"], layout["admins"]
        with open(layout["fleet_file"], "w") as f:
            json.dump({m: f"http://{self.ferries[m]}" for m in self.members}, f)
        self.base_config = {}
        for m in self.members:
            with open(os.path.join(self.dir, f"ferry-{m}.yaml")) as f:
                text = f.read()
            routing = "owner_routing: {enabled: false}"
            if routing not in text:
                raise RuntimeError(f"ferry-{m}.yaml: no '{routing}' to turn on")
            self.base_config[m] = text.replace(
                routing, f"owner_protocol: {args.owners}, owner_routing: {{enabled: true}}")
        self.group = benchlib.Procs()
        self.procs = {}
        self.n = 0

    def config_path(self, m, extra):
        path = os.path.join(self.dir, f"ferry-{m}.yaml")
        with open(path, "w") as f:
            # Every feed holds an upstream HTTP/1.1 connection to the local instance (and one
            # to each owner's ferry with --owners http1): the default 256 per target would
            # refuse most of them (503, ferry_upstream_overflow_total).
            f.write(self.base_config[m]
                    + f"upstream: {{max_connections: {self.args.upstream_max_connections}}}\n"
                    + (extra.strip() + "\n" if extra else ""))
        return path

    def validate(self, extra):
        """(ok, ferry's output) of `ferry --validate` on inst-1's config with `extra`."""
        r = subprocess.run([self.bins["ferry"], "--validate", "--config",
                            self.config_path("inst-1", extra)], capture_output=True, text=True)
        return r.returncode == 0, (r.stdout + r.stderr).strip()

    def start(self, kind, m, extra=""):
        self.n += 1
        log_path = os.path.join(self.dir, f"{kind}-{m}.{self.n}.log")
        if kind == "ferry":
            argv = [self.bins["ferry"], "--config", self.config_path(m, extra)]
            addrs = [self.ferries[m], self.admins[m]]
        else:
            argv = [self.bins["streams-emulator"], "--name", m, "--members",
                    ",".join(self.members), "--shards", str(self.args.shards), "--host",
                    "127.0.0.1", "--port", str(benchlib.port_of(self.emulators[m])),
                    "--control-token", handover.CONTROL_TOKEN, "--drain-seconds", "0",
                    "--sse-keepalive-ms", "1000", "--applied-log-limit", "1000"]
            addrs = [self.emulators[m]]
        self.procs[(kind, m)] = self.group.start(argv, log_path, preexec_fn=die_with_parent)
        for a in addrs:
            benchlib.wait_tcp(a, timeout=30)

    def start_ferries(self, extra):
        for m in self.members:
            p = self.procs.get(("ferry", m))
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(timeout=20)
        for m in self.members:
            self.start("ferry", m, extra)
        wait_until(lambda: all(self.peers(m) == set(self.members) for m in self.members),
                   "every ferry's peer table")

    def peers(self, m):
        try:
            st, _, body = benchlib.request(self.admins[m], "GET", "/peers")
            return set(json.loads(body).get("peers", {})) if st == 200 else set()
        except (OSError, ValueError):
            return set()

    def pid(self, kind, m):
        return self.procs[(kind, m)].pid

    def owner(self, stream, members=None):
        members = members or self.members_now
        return members[handover.owner_index(stream, self.args.shards, members)]

    def debug_counts(self):
        """member -> the emulator's /v1/debug/requests (JSON)."""
        out = {}
        for m, e in self.emulators.items():
            st, _, body = benchlib.request(e, "GET", "/v1/debug/requests",
                                           headers={"x-control-token": handover.CONTROL_TOKEN})
            if st != 200:
                raise RuntimeError(f"/v1/debug/requests at {m}: {st}")
            out[m] = json.loads(body)
        return out

    def move(self, streams, new_members):
        """The emulators' hand-over of every stream whose owner changes (bench/faults' move):
        old owners get the new members with handover_ms, each moving stream is copied to its
        new owner, then every other member gets the new members. Returns the new owners."""
        old = self.members_now
        moving = [(s, self.owner(s, old), self.owner(s, new_members)) for s in streams]
        moving = [x for x in moving if x[1] != x[2]]
        sources = sorted({o for _, o, _ in moving})
        tok = {"x-control-token": handover.CONTROL_TOKEN}
        for src in sources:
            handover.control(self.emulators[src], {"members": new_members,
                                                   "handover_ms": HANDOVER_MS})
        for s, o, n in moving:
            st, _, exported = benchlib.request(self.emulators[o], "GET",
                                               f"/v1/debug/stream?stream={s}", headers=tok)
            if st != 200:
                raise RuntimeError(f"export of {s} at {o}: {st}")
            st, _, _ = benchlib.request(self.emulators[n], "PUT", f"/v1/debug/stream?stream={s}",
                                        exported, tok)
            if st != 204:
                raise RuntimeError(f"import of {s} at {n}: {st}")
        for m in self.members:
            if m not in sources:
                handover.control(self.emulators[m], {"members": new_members})
        self.members_now = list(new_members)
        return sorted({n for _, _, n in moving})

    def stop(self):
        self.group.stop(timeout=10)


# ---------------------------------------------------------------- appenders

class Appenders(threading.Thread):
    """One idempotent producer per stream (Producer-Id a, seq = the message's offset), straight
    to the stream's owner at `rate` appends/s each (open loop, a late append is sent at once):
    body {"i": <offset>, "t": <CLOCK_MONOTONIC ns>}. A 503 or 409 sends the same seq again
    (to the member a 409 names). One thread, one keep-alive connection per stream."""

    def __init__(self, fleet, streams, rate):
        super().__init__(daemon=True)
        self.fleet, self.streams, self.rate = fleet, streams, rate
        self.seq = {s: 0 for s in streams}
        self.addr = {s: fleet.emulators[fleet.owner(s)] for s in streams}
        self.conns = {}
        self.stop_flag = threading.Event()
        self.paused = threading.Event()
        self.retries = 0

    def post(self, s):
        while not self.stop_flag.is_set():
            c = self.conns.get(s)
            if c is None:
                host, port = self.addr[s].rsplit(":", 1)
                c = self.conns[s] = http.client.HTTPConnection(host, int(port), timeout=10)
            body = json.dumps({"i": self.seq[s], "t": time.monotonic_ns()})
            try:
                c.request("POST", f"/v1/stream/{s}", body,
                          {"content-type": "application/json", "producer-id": "a",
                           "producer-epoch": "0", "producer-seq": str(self.seq[s])})
                r = c.getresponse()
                r.read()
                status, replay = r.status, r.getheader("streams-replay-to")
            except (OSError, http.client.HTTPException):
                c.close()
                self.conns.pop(s, None)
                status, replay = 0, None
            if 200 <= status < 300:
                self.seq[s] += 1
                return
            self.retries += 1
            if status == 409 and replay in self.fleet.emulators:
                self.addr[s] = self.fleet.emulators[replay]
                self.conns.pop(s).close()
                continue
            time.sleep(0.05)

    def run(self):
        interval = 1.0 / (self.rate * len(self.streams))
        t, k = time.monotonic(), 0
        while not self.stop_flag.is_set():
            if self.paused.is_set():
                time.sleep(0.01)
                t = time.monotonic()
                continue
            self.post(self.streams[k % len(self.streams)])
            k += 1
            t += interval
            delay = t - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    def tails(self):
        """stream -> next offset (= the seq of its next append): read while paused."""
        return dict(self.seq)


# ---------------------------------------------------------------- report

def table(results, args, skipped, load):
    L = [f"Fan-out: {args.subscribers} SSE subscribers over {args.streams} streams, "
         f"{args.rate:g} appends/s per stream, {args.duration:g} s per arm, 4 members "
         f"(owner routing on, {args.owners} between ferries, workers: 1, upstream.max_connections "
         f"{args.upstream_max_connections}), "
         f"{args.client_procs} client processes; load average before: {load}. Steady window "
         f"(no moves) for this table.", "",
         "| arm | owner feeds live (max) | feeds opened | owner event bytes | delivered / expected "
         "| missing / dup / short | latency p50 / p99 ms | ferry CPU s (µs/event) | ferry RSS MiB "
         "| client CPU s | machine busy cores |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        L.append(
            f"| {r['arm']} | {r['owner_feeds_live_max']} | {r['owner_feeds_opened']} "
            f"| {r['owner_event_bytes'] / 1e6:.1f} MB | {r['delivered']} / {r['expected']} "
            f"({100 * r['delivered'] / max(1, r['expected']):.2f} %) "
            f"| {r['missing']} / {r['duplicates']} / {r['short']} "
            f"| {fmt(r['latency_ms_p50'], '.1f')} / {fmt(r['latency_ms_p99'], '.1f')} "
            f"| {r['ferry_cpu_s']:.1f} ({fmt(r['ferry_cpu_us_per_event'], '.1f')}) "
            f"| {r['ferry_hwm_kib'] / 1024:.0f} | {r['client_cpu_s']:.1f} "
            f"({100 * r['client_busiest_core_share']:.0f} % of a core) "
            f"| {r['machine_busy_cores']:.2f} |")
    if args.rebalance:
        L += ["", f"Rebalance, after the steady window: {args.rebalance} × (a member's shards to "
              f"the other three, 3 s later back; handover_ms {HANDOVER_MS}; "
              f"{args.rebalance_gap:g} s apart) per arm.", "",
              "| arm | hand-overs | feeds the clients saw end (feeds opened at the owners) "
              "| subscribers with an end "
              "| lost / dup | feed open again p50 / p99 ms | first fresh event after a move "
              "p50 / p99 ms | peak requests/s at the new owners | feed ends (200) and other answers |",
              "|---|---|---|---|---|---|---|---|---|"]
        for r in results:
            L.append(
                f"| {r['arm']} | {r['handovers']} | {r['feeds_ended']} "
                f"({r['owner_feeds_opened_in_rebalance']}) "
                f"| {r['subscribers_with_an_end']} | {r['missing']} / {r['duplicates']} "
                f"| {fmt(r['reopen_ms_p50'], '.0f')} / {fmt(r['reopen_ms_p99'], '.0f')} "
                f"| {fmt(r['recovery_ms_p50'], '.0f')} / {fmt(r['recovery_ms_p99'], '.0f')} "
                f"| {', '.join(f'{x:.0f}' for x in r['new_owner_peak_rps'])} "
                f"| {json.dumps(r['statuses'])} |")
    for arm, why in skipped:
        L += ["", f"Arm {arm} skipped: {why}"]
    return "\n".join(L) + "\n"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--ferry", help="ferry binary (default BUILD/" + benchlib.FERRY_REL + ")")
    ap.add_argument("--mode", choices=MODES, default="full")
    ap.add_argument("--subscribers", type=int)
    ap.add_argument("--streams", type=int)
    ap.add_argument("--duration", type=float,
                    help="seconds of the steady window per arm (default: full 60, short 10)")
    ap.add_argument("--rate", type=float, default=1.0, help="appends/s per stream")
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--owners", choices=("http1", "h2"), default="http1",
                    help="owner_protocol between the ferries")
    ap.add_argument("--upstream-max-connections", type=int, default=4096,
                    help="ferry's upstream.max_connections (per worker, per target; default "
                         "256 would hold only 256 feeds per target)")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--ferry-config-extra", default=DEFAULT_EXTRA,
                    help="YAML appended to the ferries' configs in arm shared")
    ap.add_argument("--rebalance", type=int,
                    help="hand-overs (and back) per arm (default: full 0, short 1)")
    ap.add_argument("--rebalance-gap", type=float,
                    help="seconds from one move away to the next (and after the last; "
                         "default: full 15, short 10)")
    ap.add_argument("--client-procs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--drain-timeout", type=float, default=60.0)
    ap.add_argument("--inject", choices=("", "skip", "duplicate"), default="",
                    help="a planted violation: subscribers resume an ended feed one event "
                         "late or early (needs --rebalance); the run must exit 1")
    ap.add_argument("--keep-tmp", action="store_true",
                    help="keep the temp dir (configs, every process's log, the clients' results)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args()
    for k, v in MODES[args.mode].items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    return args


def raise_fd_limit(args):
    """The soft file-descriptor limit up to the hard one (inherited by every process); exits
    when the subscribers per client process would not fit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if args.subscribers // args.client_procs + 100 > hard:
        sys.exit(f"run.py: {args.subscribers} subscribers over {args.client_procs} processes "
                 f"need more than the {hard} file descriptors allowed")


def skip_shared_unless_valid(args, fleet, arms):
    """Arm shared leaves `arms` (into the returned skipped list) when `ferry --validate`
    refuses --ferry-config-extra."""
    if "shared" not in arms:
        return []
    ok, out = fleet.validate(args.ferry_config_extra)
    if ok:
        return []
    why = (f"`ferry --validate` refuses `{args.ferry_config_extra}` (this ferry has no "
           f"live_feeds sharing yet): {out.splitlines()[-1] if out else ''}")
    log(f"arm shared skipped: {why}")
    arms.remove("shared")
    return [("shared", why)]


def create_streams(args, fleet):
    """--streams streams, spread evenly over the members, each checked at its owner."""
    streams = []
    for m in fleet.members:
        own = benchlib.OwnedStreams(fleet.emulators[m], f"fan-{m}")
        streams += [own.create() for _ in range(args.streams // 4 +
                                                 (fleet.members.index(m) < args.streams % 4))]
    for s in streams:
        assert fleet.owner(s) in fleet.emulators and \
            benchlib.request(fleet.emulators[fleet.owner(s)], "HEAD",
                             f"/v1/stream/{s}")[0] == 200, s
    return streams


def streams_in_order(fleet, streams):
    """The streams' own content: message k at offset k, for every stream (what the
    subscribers' checks assume). False (and a log line) for a stream that is not."""
    ok = True
    for s in streams:
        st, _, body = benchlib.request(fleet.emulators[fleet.owner(s)], "GET",
                                       f"/v1/stream/{s}?offset=-1", timeout=30)
        msgs = json.loads(body)
        if st != 200 or [m["i"] for m in msgs] != list(range(len(msgs))):
            ok = False
            log(f"stream {s}: its content is not messages 0..{len(msgs) - 1} in order")
    return ok


def goal_failures(args, fleet, arm, r):
    """Issue 22's goals the bench holds ferry to, beyond delivery: with resume on (both ferry
    arms) no client sees its feed end; with sharing, the owners hold at most one feed per
    stream per ferry worker (workers: 1)."""
    out = []
    if arm in ("ferry", "shared") and r["feeds_ended"] != 0:
        out.append(f"{r['feeds_ended']} feeds ended at the clients (resume is on)")
    limit = args.streams * len(fleet.members)
    if arm == "shared" and r["owner_feeds_live_max"] > limit:
        out.append(f"{r['owner_feeds_live_max']} upstream feeds at the owners, over "
                   f"streams x ferries = {limit}")
    return out


def run_arms(args, tmp, fleet, arms):
    """Starts the emulators, the streams and their appenders, runs every arm; returns the
    arms' figures and whether everything was delivered right."""
    results, ok = [], True
    for m in fleet.members:
        fleet.start("emulator", m)
    streams = create_streams(args, fleet)
    appenders = Appenders(fleet, streams, args.rate)
    appenders.start()
    for arm in arms:
        r = arm_run(args, tmp, fleet, appenders, streams, arm, args.ferry_config_extra)
        r["goal_failures"] = goal_failures(args, fleet, arm, r)
        r["ok"] = r["ok"] and not r["goal_failures"]
        log(f"arm {arm}: {json.dumps(r)}")
        results.append(r)
        ok = ok and r["ok"]
    appenders.stop_flag.set()
    appenders.join(timeout=10)
    return results, streams_in_order(fleet, streams) and ok


def main():
    args = parse_args()
    arms = [a for a in args.arms.split(",") if a]
    if set(arms) - set(ARMS):
        sys.exit(f"run.py: unknown arms {set(arms) - set(ARMS)}")
    raise_fd_limit(args)
    load = sampling.loadavg()
    tmp = tempfile.mkdtemp(prefix="fanout-")
    bins = benchlib.stage_binaries(args.build, tmp, {
        "streams-emulator": benchlib.CELL_BINS["streams-emulator"]},
        "build ferry and streams-emulator first", args.ferry)
    fleet = Fleet(args, tmp, bins)
    skipped = skip_shared_unless_valid(args, fleet, arms)
    try:
        results, ok = run_arms(args, tmp, fleet, arms)
    finally:
        fleet.stop()
        if not args.keep_tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    md = table(results, args, skipped, load)
    name = "fanout" if args.mode == "full" else f"fanout-{args.mode}"
    benchlib.write_results(args.out, name, md, {
        "machine": sampling.machine(), "load_before": load, "args": vars(args),
        "results": results, "skipped": skipped, "ok": ok})
    if not ok:
        log("FAIL: an arm lost, duplicated or reordered events (or a stream's content is wrong)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
