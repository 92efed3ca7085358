"""The SSE bench's arms, its paced schedule, and its report: per pacing and fanout, latency,
delivery (every event once and in order), proxy CPU and the ferries' counters, as the tables of
bench/sse/README.md."""
import os
import platform
import statistics
import time

import benchlib

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
    meta = run_meta(args, arms, pacings, fanouts, elapsed, load_before, load_after)
    summary = []
    for pacing in pacings:
        for fanout in fanouts:
            summary += summarize_cell(runs, arms, pacing, fanout)
    lines = table_lines(args, meta, fanouts, summary)
    v = verdicts(args, summary)
    lines.append("")
    lines += hop_lines(summary)
    lines += h2_lines(args, summary)
    owner_text, owner_bad = owner_lines(args, summary)
    lines += owner_text
    lines += verdict_lines(v)
    benchlib.write_results(args.out, "sse", "\n".join(lines) + "\n",
                           {"meta": meta, "summary": summary, "runs": runs})
    # A hold that never bit checked nothing: a failure too on ferry arms.
    return (not v["bad"] and not v["errs"] and not v["unforwarded"] and not owner_bad
            and not [s for s in v["held_bad"] + v["held_loose"] if s["arm"] in FERRY_ARMS])


def run_meta(args, arms, pacings, fanouts, elapsed, load_before, load_after):
    return {
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


def summarize_cell(runs, arms, pacing, fanout):
    """The summary rows of one pacing and fanout: one per arm that ran (direct first, so the
    others' hop figures can be paired with it)."""
    rows, direct_runs = [], {}
    for arm in sorted(arms, key=lambda a: a != "direct"):
        mine = [r for r in runs if r["arm"] == arm and r["pacing"] == pacing
                and r["fanout"] == fanout]
        rs = [r for r in mine if "error" not in r]
        errs = [r for r in mine if "error" in r]
        if not rs and not errs:
            continue
        if not rs:
            rows.append({"pacing": pacing, "fanout": fanout, "arm": arm,
                         "errors": [e["error"] for e in errs]})
            continue
        s = arm_summary(pacing, fanout, arm, rs, errs)
        if arm == "direct":
            direct_runs = {r["round"]: r for r in rs}
        elif pacing != "stall" and direct_runs:
            s.update(hop_figures(rs, direct_runs))
        rows.append(s)
    return rows


def arm_summary(pacing, fanout, arm, rs, errs):
    """One arm's row: medians over its runs `rs`, delivery sums, proxy CPU per delivery, the
    owner side's maxima and the held runs' figures where the runs have them."""
    med = lambda k: statistics.median(r["latency_us"][k] for r in rs)  # noqa: E731
    prefix = ARM_CPU_PREFIX.get(arm)  # None: no proxy on the path
    proxy_cpu = sum(v for r in rs for k, v in r.get("cpu_s", {}).items()
                    if cpu_key_of(k, prefix)) if prefix else None
    total = lambda k: sum(r[k] for r in rs)  # noqa: E731
    delivered, expected = total("delivered"), total("expected")
    s = {
        "pacing": pacing, "fanout": fanout, "arm": arm, "runs": len(rs),
        "publish_rate": statistics.median(r["publish_rate"] for r in rs),
        "achieved_interval_us": statistics.median(r["achieved_interval_us"] for r in rs),
        "p50_us": med("p50"), "p99_us": med("p99"), "p999_us": med("p999"),
        "max_us": max(r["latency_us"]["max"] for r in rs),
        "p50_us_rounds": [r["latency_us"]["p50"] for r in rs],
        "p99_us_rounds": [r["latency_us"]["p99"] for r in rs],
        "published": total("publish_acked"), "publish_errors": total("publish_errors"),
        "delivered": delivered, "expected": expected,
        "delivered_ratio": delivered / expected if expected else None,
        "duplicates": total("duplicates"), "out_of_order": total("out_of_order"),
        "feeds_ended_early": total("feeds_ended_early"),
        "forwarded_to_headers": total("forwarded_to_headers"),
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
        s["held"] = held_summary(held)
    return s


def held_summary(held):
    """The held runs (one h2 stream's window never reopened until the others were done)."""
    return {
        "runs": len(held),
        "delivered_while_held": [h["delivered_while_held"] for h in held],
        "held_bytes": [h["held_bytes"] for h in held],
        "released": sum(1 for h in held if h["released"]),
        "complete_after_release": sum(1 for h in held if h["complete_after_release"]),
        "duplicates": sum(h["duplicates"] for h in held),
        "out_of_order": sum(h["out_of_order"] for h in held),
        "release_to_complete_ms": [h["release_to_complete_ms"] for h in held],
        "others_complete_after_last_ack_ms": [
            h["others_complete_after_last_ack_ms"] for h in held],
    }


def hop_figures(rs, direct_runs):
    """Paired: this arm minus direct in the same round (interleaved, so both saw the same
    machine), median over rounds, for p50 and p99."""
    out = {}
    for q in ("p50", "p99"):
        diffs = [r["latency_us"][q] - direct_runs[r["round"]]["latency_us"][q]
                 for r in rs if r["round"] in direct_runs]
        if diffs:
            out[f"hop_{q}_us"] = statistics.median(diffs)
    return out


def table_lines(args, meta, fanouts, summary):
    """The report's heading, what was run, and the table of every row."""
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
    return lines + [table_row(s) for s in summary]


def table_row(s):
    if "p50_us" not in s:
        return (f"| {s['pacing']} | {s['fanout']} | {ARM_TITLES[s['arm']]} | ERROR: "
                f"{'; '.join(s['errors'])[:200]} ||||||||||||")
    hop = (f"{s['hop_p50_us']:+.1f} / {s['hop_p99_us']:+.1f}" if "hop_p50_us" in s else "–")
    ratio = f"{s['delivered']:,} / {s['expected']:,.0f} ({s['delivered_ratio']:.4f})"
    return (
        f"| {s['pacing']} | {s['fanout']} | {ARM_TITLES[s['arm']]} | {fmt(s['publish_rate'], 0)} "
        f"| {fmt(s['p50_us'])} | {fmt(s['p99_us'])} | {fmt(s['p999_us'])} | {fmt(s['max_us'])} "
        f"| {hop} | {ratio} | {s['duplicates']} | {s['out_of_order']} "
        f"| {s['feeds_ended_early']} | {fmt(s['proxy_cpu_us_per_delivery'], 2)} "
        f"| {s['ferry_watermark_pauses']:.0f} |")


def verdicts(args, summary):
    """The rows that fail a check: bad (a ferry arm lost, duplicated, reordered or ended
    feeds), unforwarded, held_bad (a hold never released), held_loose (a hold that never
    bit), errs (a ferry arm's run failed)."""
    return {
        "bad": [s for s in summary if "p50_us" in s and s["arm"] in FERRY_ARMS
                and (s["delivered_ratio"] != 1.0 or s["duplicates"] or s["out_of_order"]
                     or s["feeds_ended_early"])],
        # A forwarded arm whose feeds lack Streams-Forwarded-To measured something else.
        "unforwarded": [s for s in summary if "p50_us" in s
                        and (s["arm"].startswith("forwarded") or s["arm"] == "h2fwd"
                             or s["arm"] in OWNER_ARMS)
                        and s["forwarded_to_headers"] != s["runs"] * s["fanout"]],
        # held: the others completed while one stream was held (else it was never released),
        # and the hold bit (the held subscriber had fewer than every event when the others
        # were done).
        "held_bad": [s for s in summary if "held" in s and s["held"]["released"] != s["runs"]],
        "held_loose": [s for s in summary if "held" in s
                       and any(d >= args.h2_events for d in s["held"]["delivered_while_held"])],
        "errs": [s for s in summary if s.get("errors") and s["arm"] in FERRY_ARMS],
    }


def verdict_lines(v):
    lines = []
    for s in v["held_bad"]:
        lines.append(f"**FAILED: {ARM_TITLES[s['arm']]}, held: the other subscribers did not all "
                     f"get every event while one stream was held ({s['held']['released']} of "
                     f"{s['runs']} runs released it)**  ")
    for s in v["held_loose"]:
        lines.append(f"**NOT CHECKED: {ARM_TITLES[s['arm']]}, held: the held subscriber got every "
                     f"event before the others were done: its window never closed (raise "
                     f"--events or --h2-pad, or lower --h2-window)**  ")
    for s in v["unforwarded"]:
        lines.append(f"**WARNING: {ARM_TITLES[s['arm']]}, {s['pacing']} fanout {s['fanout']}: "
                     f"{s['forwarded_to_headers']} of {s['runs'] * s['fanout']} feeds were "
                     "forwarded (Streams-Forwarded-To)**  ")
    lines.append("**Every event delivered exactly once, in order, on every ferry arm: "
                 + ("YES**" if not v["bad"] and not v["errs"]
                    else "NO** — see the rows above and sse.json"))
    return lines


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
