#!/usr/bin/env python3
"""Fault campaign (project issue 21): a 4-member cell of streams-emulators, a ferry in front of
each (owner routing on; h2c, HTTP/1.1 or TLS between the ferries), idempotent producers
appending through every ferry and SSE readers following the streams, while members are
killed and restarted, stalled, handed over, the fleet's urls.json is garbled and the ferries
get SIGHUPs. Afterwards bench/faults/checks.py checks every acknowledged append (in its stream
once and in producer order), every reader (its bytes equal a direct read at the owner) and
every client answer (one the contract allows); exit 1 on any violation.

  bench/faults/run.py                          # short mode, h2c between ferries (~45 s)
  bench/faults/run.py --owners http1           # HTTP/1.1 between ferries
  bench/faults/run.py --tls on                 # https between ferries (mTLS), clients too
  bench/faults/run.py --variant all            # h2, http1, tls one after the other
  bench/faults/run.py --mode long              # cycles of every fault until 1 M appends
  bench/faults/run.py --mode long --appends 200000   # a medium run
  bench/faults/run.py --inject duplicate       # a planted violation: must exit 1

See bench/README.md, "Fault campaign".
"""
import argparse
import json
import os
import platform
import shutil
import signal
import ssl
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "bench", "cell"))
import benchlib  # noqa: E402  (bench/benchlib/)
from benchlib import cell_configs, die_with_parent  # noqa: E402  (ferry configs; preexec_fn)
import handover  # noqa: E402  (bench/cell/handover.py: ownership, control, the hand-over recipe)
import checks  # noqa: E402
import clients  # noqa: E402
from campaign import Campaign, CampaignError, wait_until  # noqa: E402  (the faults)


VARIANTS = {"h2": ("h2", False), "http1": ("http1", False), "tls": ("h2", True),
            "tls-http1": ("http1", True)}
ALL_VARIANTS = ("h2", "http1", "tls")
MODES = {  # streams, producers, readers, appends target (long: cycles until reached)
    "short": dict(streams=8, producers=8, readers=4, appends=0),
    "long": dict(streams=16, producers=16, readers=8, appends=1_000_000),
}


# ---------------------------------------------------------------- the cell

class Fleet:
    """Emulators (with --journal: durable across SIGKILL) and ferries on held loopback ports,
    each a process this driver starts, kills, stops and restarts itself (ferry-cell stops the
    whole cell when one of its processes dies). Ferry configs: the cell bench's
    gen_compose_configs() (benchlib.cell_configs) with owner routing on and owner_protocol set;
    urls.json names the ferries (a forward crosses the owner's ferry: the hop between ferries
    is h2c, HTTP/1.1 or https)."""

    def __init__(self, args, tmp, bins, owners, tls):
        self.args, self.tmp, self.bins = args, tmp, bins
        self.members = [f"inst-{i + 1}" for i in range(args.members)]
        self.members_now = list(self.members)
        self.emulators = {m: f"127.0.0.1:{benchlib.free_port()}" for m in self.members}
        self.dir = os.path.join(tmp, "cell")
        layout = cell_configs.loopback_layout(self.dir, self.members, self.emulators)
        cell_configs.gen_compose_configs(self.dir, layout, tls=tls)
        self.ferries, self.admins = layout["ferries"], layout["admins"]
        self.fleet_file = layout["fleet_file"]
        scheme = "https" if tls else "http"
        self.good_urls = {m: f"{scheme}://{self.ferries[m]}" for m in self.members}
        self.write_urls(json.dumps(self.good_urls).encode())
        for m in self.members:
            path = os.path.join(self.dir, f"ferry-{m}.yaml")
            with open(path) as f:
                text = f.read()
            routing = "owner_routing: {enabled: false}"
            if routing not in text:
                raise RuntimeError(f"{path}: no '{routing}' to turn on")
            with open(path, "w") as f:
                f.write(text.replace(routing, f"owner_protocol: {owners}, "
                                              "owner_routing: {enabled: true}"))
        self.client_tls = None
        if tls:
            tls_dir = os.path.join(self.dir, "tls")
            self.client_tls = ssl.create_default_context(cafile=os.path.join(tls_dir, "ca.pem"))
            self.client_tls.load_cert_chain(os.path.join(tls_dir, "haproxy-client.pem"))
        self.group = benchlib.Procs()
        self.procs = {}  # (kind, member) -> the current Popen
        self.killed = set()  # Popens this driver killed (their exit is not a crash)
        self.starts = {}  # (kind, member) -> processes started (each has its own log)

    def write_urls(self, content):
        """Publishes urls.json whole (write + rename: ferry sees one version or the other)."""
        tmp = self.fleet_file + ".new"
        with open(tmp, "wb") as f:
            f.write(content)
        os.replace(tmp, self.fleet_file)

    def argv(self, kind, m):
        if kind == "ferry":
            return [self.bins["ferry"], "--config", os.path.join(self.dir, f"ferry-{m}.yaml")]
        return [self.bins["streams-emulator"], "--name", m, "--members",
                ",".join(self.members_now), "--shards", str(self.args.shards), "--host",
                "127.0.0.1", "--port", str(benchlib.port_of(self.emulators[m])),
                "--control-token", handover.CONTROL_TOKEN, "--drain-seconds", "0",
                "--sse-keepalive-ms", "1000", "--applied-log-limit", "1000",
                "--journal", os.path.join(self.dir, f"{m}.journal")]

    def start(self, kind, m):
        """Starts (or restarts, on the same held ports) one process and waits until it listens."""
        self.starts[(kind, m)] = self.starts.get((kind, m), 0) + 1
        log = os.path.join(self.dir, f"{kind}-{m}.{self.starts[(kind, m)]}.log")
        self.procs[(kind, m)] = self.group.start(self.argv(kind, m), log,
                                                 preexec_fn=die_with_parent)
        addrs = [self.emulators[m]] if kind == "emulator" else [self.ferries[m], self.admins[m]]
        for a in addrs:
            benchlib.wait_tcp(a, timeout=30)

    def start_all(self):
        for m in self.members:
            self.start("emulator", m)
        for m in self.members:
            self.start("ferry", m)
        wait_until(lambda: all(self.peers(m).get("peers", {}).keys() == set(self.members)
                               for m in self.members), "every ferry's peer table")

    def signal(self, kind, m, sig):
        p = self.procs[(kind, m)]
        if sig == signal.SIGKILL:
            self.killed.add(p)
        p.send_signal(sig)
        if sig == signal.SIGKILL:
            p.wait()

    def crashed(self):
        """Processes that exited without being killed by this driver."""
        return [f"{k} {m} (exit {p.returncode})" for (k, m), p in self.procs.items()
                if p.poll() is not None and p not in self.killed]

    def peers(self, m):
        """The ferry's /peers (JSON), {} when its admin does not answer."""
        try:
            st, _, body = benchlib.request(self.admins[m], "GET", "/peers")
        except OSError:
            return {}
        return json.loads(body) if st == 200 else {}

    def stat(self, m, family):
        s = benchlib.scrape(self.admins[m], [family])
        return None if s is None else s[family]

    def owner(self, stream, members=None):
        members = members or self.members_now
        return members[handover.owner_index(stream, self.args.shards, members)]

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)  # a stopped process cannot act on SIGTERM
        self.group.stop(timeout=10)

    def log_tails(self, n=5):
        out = []
        for (kind, m), n in self.starts.items():
            path = os.path.join(self.dir, f"{kind}-{m}.{n}.log.err")
            try:
                with open(path, errors="replace") as f:
                    lines = f.readlines()[-n:]
            except OSError:
                continue
            if lines:
                out.append(f"--- {kind} {m}: {path}\n" + "".join(lines))
        return "\n".join(out)


# ---------------------------------------------------------------- one variant

def make_streams(fleet, n, prefix):
    """n fresh byte streams, as evenly owned by the members as ownership allows, each created
    at its owner's emulator (a PUT there answers 201: the ownership computed here is the
    emulators')."""
    quota = -(-n // len(fleet.members))
    per, out, i = {m: 0 for m in fleet.members}, [], 0
    while len(out) < n:
        name = f"{prefix}-{i}"
        i += 1
        o = fleet.owner(name)
        if per[o] >= quota:
            continue
        st, _, body = benchlib.request(fleet.emulators[o], "PUT", f"/v1/stream/{name}", b"",
                                       {"content-type": "text/plain"})
        if st != 201:
            raise RuntimeError(f"PUT {name} at its owner {o}: {st} {body[:200]!r}")
        per[o] += 1
        out.append(name)
    return out


def direct_read(fleet, stream):
    """The stream as its owner's emulator has it (no ferry)."""
    o = fleet.owner(stream)
    st, h, data = benchlib.request(fleet.emulators[o], "GET", f"/v1/stream/{stream}?offset=-1",
                                   timeout=60)
    if st != 200 or h.get("prisma-streams-origin") != o:
        raise CampaignError(f"direct read of {stream} at {o}: {st} {data[:200]!r}")
    return data


def inject(kind, fleet, streams, producers, readers, tally):
    """--inject: plants one violation of `kind` after the campaign, before the checks."""
    if kind == "duplicate":  # an entry appended twice: a raw copy of p0's first append
        s = producers[0].stream
        st, _, _ = benchlib.request(fleet.emulators[fleet.owner(s)], "POST", f"/v1/stream/{s}",
                                    b"p0-0;", {"content-type": "text/plain"})
        assert st == 204, st
    elif kind == "missing":  # an acknowledgement with no append behind it
        producers[0].acked += 2
    elif kind == "5xx":  # a 500 ferry made up
        tally.add("injected", 500, {"content-type": "application/json"},
                  b'{"error":{"code":"internal","message":"injected"}}')
    elif kind == "reader":  # a reader that lost a byte
        del readers[0].received[-1:]


def run_variant(args, variant):
    owners, tls = VARIANTS[variant]
    tmp = tempfile.mkdtemp(prefix=f"faults-{variant}-")
    bins = benchlib.stage_binaries(args.build, tmp, {"streams-emulator": benchlib.CELL_BINS[
        "streams-emulator"]}, "build the ferry and streams-emulator targets", args.ferry)
    fleet = Fleet(args, tmp, bins, owners, tls)
    tally = clients.Tally(args.strict_5xx)
    producers, readers = [], []
    started = time.monotonic()
    res = {"variant": variant, "owners": owners, "tls": tls}
    violations = []
    campaign = None
    try:
        fleet.start_all()
        streams = make_streams(fleet, args.streams, f"{args.prefix}-{variant}")
        producers, readers = start_clients(args, fleet, streams, tally)
        campaign = Campaign(args, fleet, streams, producers, readers, tally)
        campaign.wait_progress(producers, 5, "before the first fault")
        res["cycles"] = run_cycles(args, campaign, producers)
        campaign.log("faults done; stopping the producers")
        violations += stop_producers(producers)
        final = settle(args, fleet, campaign, streams, producers, readers, tally)
        violations += [f"{x} exited on its own" for x in fleet.crashed()]
        res["ferry_h2_connections_accepted"], wrong = variant_proof(fleet, owners)
        violations += wrong
        record = record_of(streams, final, producers, readers, tally, campaign)
        if args.keep_record:
            keep_record(args, variant, record)
        counts, found = checks.evaluate(record)
        violations = found + violations
        counts["violations"] = len(violations)
        res.update(counts)
        res["reader_feeds"] = sum(r.feeds for r in readers)
        res["reader_connects"] = sum(r.connects for r in readers)
    except (CampaignError, RuntimeError, OSError) as e:
        # The cell did not recover (a condition never came, a control route or a restart
        # failed): a violation, with the processes' last log lines.
        violations.append(f"{type(e).__name__}: {e}")
        print(fleet.log_tails(), file=sys.stderr)
    finally:
        for t in producers:
            t.stop.set()
        for r in readers:
            r.close()
        fleet.stop()
        if args.keep_tmp:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    res["seconds"] = time.monotonic() - started
    res["notes"] = campaign.notes if campaign else []
    res["violation_list"] = violations
    res["violations"] = len(violations)
    return res


def start_clients(args, fleet, streams, tally):
    """--producers producers and --readers readers, round robin over the streams, each
    rotating over every ferry; started."""
    ferries = [fleet.ferries[m] for m in fleet.members]
    producers = [clients.Producer(i, streams[i % len(streams)], ferries, fleet.client_tls,
                                  tally) for i in range(args.producers)]
    readers = [clients.Reader(i, streams[i % len(streams)], ferries, fleet.client_tls, tally)
               for i in range(args.readers)]
    for t in producers + readers:
        t.start()
    return producers, readers


def variant_proof(fleet, owners):
    """Proof of the variant: HTTP/2 connections the ferries accepted from their peers (clients
    speak HTTP/1.1), and a violation when that does not fit owner_protocol."""
    h2 = sum(fleet.stat(m, "ferry_downstream_http2_connections_total") or 0
             for m in fleet.members)
    if (owners == "h2") != (h2 > 0):
        return h2, [f"owner_protocol {owners}, yet the ferries accepted {h2:.0f} HTTP/2 "
                    "connections from their peers"]
    return h2, []


def keep_record(args, variant, record):
    """--keep-record: OUT/faults-<variant>-record.json (checks.py RECORD re-checks it)."""
    path = os.path.join(args.out, f"faults-{variant}-record.json")
    os.makedirs(args.out, exist_ok=True)
    with open(path, "w") as f:
        json.dump(record, f)


def run_cycles(args, campaign, producers):
    """Fault cycles until args.appends appends were acknowledged or args.cycles ran; how many."""
    c = 0
    while True:
        campaign.cycle(c)
        c += 1
        acked = sum(p.acked for p in producers)
        if acked >= args.appends or (args.cycles and c >= args.cycles):
            return c


def stop_producers(producers):
    """Stops every producer; the violation of those still waiting for an answer."""
    for p in producers:
        p.stop.set()
    for p in producers:
        p.join(timeout=clients.ANSWER_TIMEOUT_S + 10)
    stuck = [p.pid for p in producers if p.is_alive()]
    return [f"producers still waiting for an answer: {stuck}"] if stuck else []


def settle(args, fleet, campaign, streams, producers, readers, tally):
    """Waits for every reader to catch up with its stream, stops them (and runs --inject);
    each stream's final content, read at its owner."""
    first = {s: direct_read(fleet, s) for s in streams}
    wait_until(lambda: all(len(r.received) >= len(first[r.stream]) for r in readers),
               "every reader to catch up with its stream", timeout=120)
    for r in readers:
        r.close()
    for r in readers:
        r.join(timeout=10)
    if args.inject:
        inject(args.inject, fleet, streams, producers, readers, tally)
    final = {s: direct_read(fleet, s) for s in streams}
    changed = [s for s in streams if final[s] != first[s]]
    if changed and not args.inject:
        campaign.notes.append(f"streams that changed after every producer stopped: {changed}")
    return final


def record_of(streams, final, producers, readers, tally, campaign):
    """What checks.evaluate() judges: the streams, what each producer had acknowledged, what
    each reader received, the answers and the faults."""
    return {
        "streams": {s: {"data": final[s].decode("latin-1"),
                        "acked": {p.pid: p.acked for p in producers if p.stream == s}}
                    for s in streams},
        "readers": [{"who": r.who, "stream": r.stream,
                     "received": bytes(r.received).decode("latin-1"),
                     "offset_errors": r.offset_errors} for r in readers],
        "answers": dict(tally.answers), "disallowed": tally.disallowed,
        "attempts": sum(p.attempts for p in producers), "faults": campaign.faults,
    }


# ---------------------------------------------------------------- report

def report(args, results):
    lines = [f"### Fault campaign — {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {args.mode} mode",
             "",
             f"{args.members} members (emulators with --journal, a ferry each, owner routing on), "
             f"{args.producers} idempotent producers and {args.readers} SSE readers on "
             f"{args.streams} streams through every ferry; per cycle: kill an emulator, kill a "
             f"ferry + emulator (SIGKILL, restart), SIGSTOP for {args.stop_seconds:g} s, a "
             f"hand-over out and back, urls.json garbled and restored, {args.sighups} SIGHUPs. "
             f"Machine: {platform.node()}, {os.cpu_count()} cpus.",
             "",
             "| variant | cycles | seconds | appends acknowledged | attempts | retried | answers "
             "| faults injected | readers checked (bytes) | violations |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "appends_acknowledged" not in r:
            lines.append(f"| {r['variant']} | – | {r['seconds']:.0f} | – | – | – | – | – | – "
                         f"| **{r['violations']}** |")
            continue
        answers = ", ".join(f"{k}: {v}" for k, v in r["answers"].items())
        faults = ", ".join(f"{k} {v}" for k, v in r["faults"].items())
        lines.append(
            f"| {r['variant']} (owners {r['owners']}{', https' if r['tls'] else ''}) "
            f"| {r.get('cycles', '–')} | {r['seconds']:.0f} | {r['appends_acknowledged']} "
            f"| {r['attempts']} | {r['retried']} | {answers} | {faults} "
            f"| {r['readers_checked']} ({r['reader_bytes']}) | **{r['violations']}** |")
    for r in results:
        for v in r["violation_list"][:30]:
            lines.append(f"- {r['variant']}: VIOLATION {v}")
        for n in r["notes"]:
            lines.append(f"- {r['variant']}: note: {n}")
    benchlib.write_results(args.out, "faults", "\n".join(lines) + "\n",
                           {"meta": {"mode": args.mode, "members": args.members,
                                     "streams": args.streams, "producers": args.producers,
                                     "readers": args.readers, "stop_seconds": args.stop_seconds,
                                     "sighups": args.sighups, "inject": args.inject},
                            "results": results})


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mode", choices=sorted(MODES), default="short",
                    help="short: one cycle of every fault, small counts (~45 s per variant); "
                         "long: cycles until --appends acknowledged (default 1,000,000)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--ferry", help="ferry binary (default: BUILD/app/ferry)")
    ap.add_argument("--owners", choices=["h2", "http1"], default="h2",
                    help="the protocol between ferries (owner_protocol)")
    ap.add_argument("--tls", choices=["on", "off"], default="off",
                    help="on: https between ferries (mTLS, a test CA) and from the clients")
    ap.add_argument("--variant", help="comma list of " + ", ".join(VARIANTS) + ", or all ("
                    + ", ".join(ALL_VARIANTS) + "): run each; overrides --owners/--tls")
    ap.add_argument("--members", type=int, default=4)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--streams", type=int)
    ap.add_argument("--producers", type=int)
    ap.add_argument("--readers", type=int)
    ap.add_argument("--appends", type=int, help="long mode: acknowledged appends to reach")
    ap.add_argument("--cycles", type=int, help="stop after this many cycles (default: short 1, "
                    "long: until --appends)")
    ap.add_argument("--stop-seconds", type=float, default=20.0,
                    help="how long a SIGSTOP lasts (20: beyond ferry's 15 s response_head)")
    ap.add_argument("--sighups", type=int, default=50)
    ap.add_argument("--strict-5xx", action="store_true",
                    help="ferry's 502 upstream_outcome_unknown / 504 upstream_response_timeout "
                         "(its local instance failed) are violations too")
    ap.add_argument("--inject", choices=["duplicate", "missing", "5xx", "reader"],
                    help="plant one violation after the campaign (the run must exit 1)")
    ap.add_argument("--prefix", default="faults")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--keep-tmp", action="store_true")
    ap.add_argument("--keep-record", action="store_true",
                    help="write OUT/faults-<variant>-record.json (checks.py RECORD re-checks it)")
    args = ap.parse_args()
    for k, v in MODES[args.mode].items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.cycles is None and args.mode == "short":
        args.cycles = 1
    return args


def choose_variants(args):
    """--variant's list (all: ALL_VARIANTS), or the one --owners and --tls name; exits on an
    unknown one."""
    if args.variant:
        variants = list(ALL_VARIANTS) if args.variant == "all" else args.variant.split(",")
    else:
        variants = [next(k for k, v in VARIANTS.items()
                         if v == (args.owners, args.tls == "on"))]
    for v in variants:
        if v not in VARIANTS:
            sys.exit(f"run.py: unknown variant {v} ({', '.join(VARIANTS)})")
    return variants


def main():
    args = parse_args()
    variants = choose_variants(args)
    # SIGTERM/SIGINT (a ctest timeout, ^C): unwind, so every process is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = []
    for v in variants:
        print(f"variant {v}: {args.mode} mode", file=sys.stderr, flush=True)
        res = run_variant(args, v)
        results.append(res)
        if "appends_acknowledged" in res:
            checks.print_report({**res, "violations": res["violations"]},
                                res["violation_list"], out=sys.stderr)
        else:
            for x in res["violation_list"]:
                print(f"  VIOLATION {x}", file=sys.stderr)
    report(args, results)
    return 1 if any(r["violations"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
