"""One arm of the fan-out bench (bench/fanout/run.py): its subscribers opened in client
processes (subscribers.py), the steady window measured, the rebalance, then the clients'
results checked and summed into the arm's figures.

stdlib only. See bench/README.md, "Fan-out bench".
"""
import array
import json
import os
import subprocess
import sys
import threading
import time

from benchlib import die_with_parent, sampling
from benchlib.tables import log

HERE = os.path.dirname(os.path.abspath(__file__))


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


class Sampler(threading.Thread):
    """Every 0.25 s: each emulator's request total (requests/s at the new owners after a
    move), the SSE feeds live at the owners (max), the ferries' RSS (max of the sum)."""

    def __init__(self, fleet, ferry_pids):
        super().__init__(daemon=True)
        self.fleet, self.ferry_pids = fleet, ferry_pids
        self.samples, self.live_max, self.rss_max = [], 0, 0
        self.stop_flag = threading.Event()

    def run(self):
        while not self.stop_flag.is_set():
            counts = self.fleet.debug_counts()
            self.samples.append((time.monotonic(), {m: c["total"] for m, c in counts.items()}))
            self.live_max = max(self.live_max,
                                sum(c["sse_feeds_live"] for c in counts.values()))
            self.rss_max = max(self.rss_max, sum(sampling.status_kib(p).get("VmRSS", 0)
                                                 for p in self.ferry_pids))
            self.stop_flag.wait(0.25)


def paused_tails(appenders):
    """The streams' tails with the appenders paused (an append in flight is counted when it is
    acknowledged: 0.2 s to let it finish)."""
    appenders.paused.set()
    time.sleep(0.2)
    tails = appenders.tails()
    appenders.paused.clear()
    return tails


def arm_run(args, tmp, fleet, appenders, streams, arm, extra):
    """Runs the subscribers of `arm`; returns its figures."""
    if arm != "direct":
        fleet.start_ferries(extra if arm == "shared" else "")
    # Start offsets: the streams' tails now (a subscriber reads from there: no history).
    start = paused_tails(appenders)
    c_pre = fleet.debug_counts()
    procs = start_clients(args, tmp, fleet, arm, subscriber_specs(args, fleet, streams, arm, start))
    t_connect = time.monotonic()
    for p in procs:
        line = p.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"arm {arm}: a client process said {line!r} (see {tmp})")
    log(f"arm {arm}: {args.subscribers} feeds open after {time.monotonic() - t_connect:.1f} s")
    ferry_pids = [fleet.pid("ferry", m) for m in fleet.members] if arm != "direct" else []
    w = steady_window(args, fleet, ferry_pids, [p.pid for p in procs])
    handovers, new_owner_rates = rebalance(args, fleet, arm, streams)
    w["sampler"].stop_flag.set()
    w["sampler"].join()
    c2 = fleet.debug_counts()
    cmd = {"tails": paused_tails(appenders), "handovers": handovers, "window": w["window_ns"]}
    results, lat = client_results(tmp, arm, procs, cmd)
    res = arm_figures(args, fleet, arm, streams, results, lat, w, [c_pre, w["c0"], w["c1"], c2])
    res["client_busiest_core_share"] = max((r["cpu_s"] for r in results), default=0.0) / \
        max(1e-9, time.monotonic() - t_connect)
    res["handovers"] = len(handovers)
    res["new_owner_peak_rps"] = peak_rps(w["sampler"].samples, new_owner_rates)
    res["appender_retries"] = appenders.retries
    return finish_figures(res, ferry_pids)


def subscriber_specs(args, fleet, streams, arm, start):
    """[stream, "direct"|"ferry", address, start offset] per subscriber: subscriber k reads
    stream k mod S, at the owner's emulator (direct) or at ferry (k // S) mod 4."""
    subs = []
    for k in range(args.subscribers):
        s = streams[k % len(streams)]
        if arm == "direct":
            subs.append([s, "direct", fleet.emulators[fleet.owner(s)], start[s]])
        else:
            subs.append([s, "ferry", fleet.ferries[fleet.members[(k // len(streams)) % 4]],
                         start[s]])
    return subs


def start_clients(args, tmp, fleet, arm, subs):
    """--client-procs subscribers.py processes, each with every n-th subscriber."""
    procs = []
    for i in range(args.client_procs):
        spec = os.path.join(tmp, f"{arm}-spec-{i}.json")
        with open(spec, "w") as f:
            json.dump({"emulators": fleet.emulators, "subs": subs[i::args.client_procs]}, f)
        procs.append(subprocess.Popen(
            [sys.executable, os.path.join(HERE, "subscribers.py"), "--spec", spec,
             "--out", os.path.join(tmp, f"{arm}-result-{i}.json"),
             "--drain-timeout", str(args.drain_timeout), "--inject", args.inject],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            preexec_fn=die_with_parent, stderr=open(os.path.join(tmp, f"{arm}-client-{i}.err"),
                                                    "w")))
    return procs


def steady_window(args, fleet, ferry_pids, client_pids):
    """The steady window (--duration, no moves): the owners' counters at both ends (c0, c1), CPU
    of the ferries, clients and emulators, the machine's busy cores, the ferries' peak RSS, and
    the Sampler, which keeps running through the rebalance."""
    pids = {"ferry": ferry_pids, "client": client_pids,
            "emulator": [fleet.pid("emulator", m) for m in fleet.members]}
    c0 = fleet.debug_counts()
    cpu0 = {k: sampling.cpu_ticks(v) for k, v in pids.items()}
    busy0 = sampling.machine_busy_ticks()
    t0 = time.monotonic()
    t0_ns = time.monotonic_ns()
    sampler = Sampler(fleet, ferry_pids)
    sampler.start()
    time.sleep(max(0.0, t0 + args.duration - time.monotonic()))
    t1_ns = time.monotonic_ns()
    live_max, rss_max = sampler.live_max, sampler.rss_max
    c1 = fleet.debug_counts()
    cpu1 = {k: sampling.cpu_ticks(v) for k, v in pids.items()}
    busy1 = sampling.machine_busy_ticks()
    wall = time.monotonic() - t0
    return {"c0": c0, "c1": c1, "window_ns": [t0_ns, t1_ns], "wall": wall,
            "cpu_s": {k: (cpu1[k] - cpu0[k]) / sampling.CLK_TCK for k in pids},
            "busy_cores": (busy1 - busy0) / sampling.CLK_TCK / wall,
            "live_max": live_max, "rss_max": rss_max,
            "hwm": sampling.vm_hwm_kib(ferry_pids), "sampler": sampler}


def rebalance(args, fleet, arm, streams):
    """--rebalance K: K times a member's shards go to the others and, 3 s later, back;
    --rebalance-gap seconds from one move away to the next (and after the last). Returns the
    hand-overs ([monotonic ns, streams that moved]) and (time, new owners) per move."""
    handovers, new_owner_rates = [], []
    for k_move in range(args.rebalance):
        t_move = time.monotonic()
        m = fleet.members[k_move % 4]
        for back in (False, True):
            new_members = list(fleet.members) if back else [x for x in fleet.members if x != m]
            what = f"back to {m}" if back else f"{m}'s shards to the others"
            log(f"arm {arm}: hand-over {k_move + 1}: {what}")
            before = {x: fleet.owner(x) for x in streams}
            h = time.monotonic_ns()
            news = fleet.move(streams, new_members)
            handovers.append([h, [x for x in streams if fleet.owner(x) != before[x]]])
            new_owner_rates.append((time.monotonic(), news))
            if not back:
                time.sleep(3.0)
        time.sleep(max(0.0, t_move + args.rebalance_gap - time.monotonic()))
    return handovers, new_owner_rates


def client_results(tmp, arm, procs, cmd):
    """Sends the clients the tails, hand-overs and window (`cmd`), waits until each is done,
    and reads their results and their latencies (ns, sorted)."""
    line = json.dumps(cmd) + "\n"
    for p in procs:
        p.stdin.write(line)
        p.stdin.flush()
    results = []
    for i, p in enumerate(procs):
        said = p.stdout.readline().strip()
        if said != "done":
            raise RuntimeError(f"arm {arm}: client {i} ended with {said!r}")
        p.wait(timeout=30)
        with open(os.path.join(tmp, f"{arm}-result-{i}.json")) as f:
            results.append(json.load(f))
    lat = array.array("q")
    for i in range(len(procs)):
        with open(os.path.join(tmp, f"{arm}-result-{i}.json.lat"), "rb") as f:
            lat.frombytes(f.read())
    return results, sorted(lat)


def peak_rps(samples, new_owner_rates):
    """Requests/s at the new owners after each move: the peak over 1 s windows of the 5 s
    after."""
    peaks = []
    for t_move, news in new_owner_rates:
        win = [(t, sum(c[m] for m in news)) for t, c in samples if t_move - 0.5 <= t <= t_move + 5]
        best = 0.0
        for i, (ta, na) in enumerate(win):
            for tb, nb in win[i + 1:]:
                if tb - ta >= 1.0:
                    best = max(best, (nb - na) / (tb - ta))
                    break
        peaks.append(best)
    return peaks


def arm_figures(args, fleet, arm, streams, results, lat, w, counts):
    """The arm's figures from the clients' results and the steady window `w`; `counts`: the
    owners' counters before the clients connected, at the window's start and end, and after
    the rebalance."""
    c_pre, c0, c1, c2 = counts
    tot = lambda key: sum(r[key] for r in results)  # noqa: E731
    reopen = sorted(x for r in results for x in r["reopen_ms"])
    recovery = sorted(x for r in results for x in r["recovery_ms"])
    statuses = {}
    for r in results:
        for k, v in r["statuses"].items():
            statuses[k] = statuses.get(k, 0) + v
    started = lambda a, b: sum(b[m]["sse_feeds_started"] - a[m]["sse_feeds_started"]  # noqa: E731
                               for m in fleet.members)
    return {
        "arm": arm, "subscribers": args.subscribers, "streams": len(streams),
        "window_s": w["wall"],
        "owner_feeds_live_max": w["live_max"],
        # from before the clients connected: their first feeds, and every feed opened again
        "owner_feeds_opened": started(c_pre, c1),
        "owner_event_bytes": sum(c1[m]["sse_event_bytes"] - c0[m]["sse_event_bytes"]
                                 for m in fleet.members),
        "expected": tot("expected"), "delivered": tot("delivered"), "short": tot("short"),
        "missing": tot("missing"), "duplicates": tot("duplicates"),
        "control_mismatch": tot("control_mismatch"),
        "latency_ms_p50": pct(lat, 50) / 1e6 if lat else None,
        "latency_ms_p99": pct(lat, 99) / 1e6 if lat else None,
        "ferry_cpu_s": w["cpu_s"]["ferry"], "client_cpu_s": w["cpu_s"]["client"],
        "emulator_cpu_s": w["cpu_s"]["emulator"],
        "machine_busy_cores": w["busy_cores"],
        "ferry_rss_max_kib": w["rss_max"], "ferry_hwm_kib": w["hwm"],
        "feeds_ended": tot("feeds_ended"),
        "subscribers_with_an_end": tot("subscribers_with_an_end"),
        "connects": tot("connects"), "statuses": statuses,
        "reopen_ms_p50": pct(reopen, 50), "reopen_ms_p99": pct(reopen, 99),
        "never_reopened": tot("never_reopened"),
        "owner_feeds_opened_in_rebalance": started(c1, c2),
        "recovery_ms_p50": pct(recovery, 50), "recovery_ms_p99": pct(recovery, 99),
        "recovery_missing": tot("recovery_missing"),
    }


def finish_figures(res, ferry_pids):
    """Ferry CPU per delivered event (the whole run's events: the drain after the window is
    short) and the arm's verdict: every event delivered once, in order, none missing."""
    delivered = res["delivered"]
    res["ferry_cpu_us_per_event"] = (res["ferry_cpu_s"] / delivered * 1e6
                                     if delivered and ferry_pids else None)
    res["ok"] = (res["missing"] == 0 and res["duplicates"] == 0 and res["short"] == 0
                 and res["control_mismatch"] == 0 and delivered == res["expected"]
                 and delivered > 0)
    return res
