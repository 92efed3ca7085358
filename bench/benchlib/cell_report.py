"""The cell bench's report (bench/cell/run.py): per arm the medians over rounds, the paired
ratios against PINNED with their goal, the ferries' own counters, the load generator's ceiling,
as cell.md and cell.json (bench/README.md, "Cell bench"). Here rather than in bench/cell/ because
the compose image copies run.py and bench/benchlib/ alone (docker/Dockerfile).

stdlib only.
"""
import os
import platform
import statistics
import time

from .cell_configs import (ARM_TITLES, H2_ARM, HOP_ARMS, PINNED_FERRY, PINNED_HAPROXY,
                           ROUTING_ARM, TLS_ARM)
from .tables import write_results

TLS_FAMILIES = ("ferry_downstream_tls_handshakes_total",
                "ferry_downstream_tls_resumed_handshakes_total")
GOAL = ("goal ≥ 0.97 with 0 errors and 0 client-visible 409s")


class CellReport:
    """One report over the measured runs of `arms` (each a dict of cell-loadgen's figures with
    its round and the arm's ferries' counters)."""

    def __init__(self, args, arms, members, runs):
        self.args, self.arms, self.members, self.runs = args, arms, members, runs
        self.by_arm = {a: [r for r in runs if r["arm"] == a] for a in arms}
        self.summary = {a: self.arm_summary(rs) for a, rs in self.by_arm.items()}

    def arm_summary(self, rs):
        fw = {m: sum((r["ferry_forward_attempts"][m] or 0) for r in rs) for m in self.members}
        return {
            "appends_per_s_median": statistics.median(r["appends_per_s"] for r in rs),
            "appends_per_s_min": min(r["appends_per_s"] for r in rs),
            "appends_per_s_max": max(r["appends_per_s"] for r in rs),
            "p50_ms_median": statistics.median(r["p50_ms"] for r in rs),
            "p99_ms_median": statistics.median(r["p99_ms"] for r in rs),
            "appends": sum(r["appends"] for r in rs),
            "client_409": sum(r["client_409"] for r in rs),
            "client_replays": sum(r["client_replays"] for r in rs),
            "errors": sum(r["errors"] for r in rs),
            "forwarded_answers": sum(r["forwarded_answers"] for r in rs),
            "ferry_forward_attempts": fw,
        }

    def paired_ratios(self, arm, base="pinned"):
        """arm / base per round (the runs of one round are paired), median."""
        ratios = []
        if arm in self.by_arm and base in self.by_arm:
            for rnd in range(self.args.rounds):
                f = [r for r in self.by_arm[arm] if r["round"] == rnd]
                p = [r for r in self.by_arm[base] if r["round"] == rnd]
                if f and p and p[0]["appends_per_s"] > 0:
                    ratios.append(f[0]["appends_per_s"] / p[0]["appends_per_s"])
        return (statistics.median(ratios) if ratios else None), ratios

    def goal_met(self, arm, ratio):
        return (ratio is not None and ratio >= 0.97 and self.summary[arm]["errors"] == 0
                and self.summary[arm]["client_409"] == 0)

    def meta(self):
        a = self.args
        return {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpus, "
                       f"{platform.release()}",
            "mode": "quick" if a.quick else "full",
            "launcher": a.launcher, "members": len(self.members), "streams": a.streams,
            "connections": a.connections, "body_bytes": a.body_bytes,
            "edge_rtt_ms": a.delay_ms, "rounds": a.rounds, "duration_s": a.duration,
            "warmup_s": a.warmup, "max_replays": a.max_replays, "seed": a.seed,
        }

    def table_lines(self, meta):
        a = self.args
        lines = [
            f"### Cell bench — {meta['date']}, {meta['mode']} ({meta['launcher']})",
            "",
            f"{meta['members']} instances, edge RTT {a.delay_ms:g} ms (user-space relay) + "
            f"HAProxy round robin, {a.connections} closed-loop appenders, {a.streams} streams, "
            f"{a.body_bytes}-byte appends, {a.rounds} rounds × {a.duration:g} s per arm "
            f"(interleaved, shuffled), machine: {meta['machine']}.",
            "",
            "| arm | appends/s (median, min–max) | p50 ms | p99 ms | client 409s "
            "| client replays | errors | ferry forwards (per ferry) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for arm in self.arms:
            s = self.summary[arm]
            fw = " / ".join(f"{s['ferry_forward_attempts'][m]:.0f}" for m in self.members)
            lines.append(
                f"| {ARM_TITLES[arm]} | {s['appends_per_s_median']:.1f} "
                f"({s['appends_per_s_min']:.1f}–{s['appends_per_s_max']:.1f}) "
                f"| {s['p50_ms_median']:.1f} | {s['p99_ms_median']:.1f} "
                f"| {s['client_409']} | {s['client_replays']} | {s['errors']} | {fw} |")
        return lines + [""]

    def goal_lines(self, ratios):
        """The ferry, ferry-tls and ferry-h2 ratios against PINNED with their goal verdicts."""
        lines = []
        (ratio, per_round), (tls, tls_rounds), (h2, h2_rounds) = (
            ratios["ferry"], ratios[TLS_ARM], ratios[H2_ARM])
        if ratio is not None:
            lines.append(
                f"**unpinned-with-ferry / pinned = {ratio:.3f}** (paired per round, median; "
                "rounds: " + rounds_text(per_round) + f"). Goal ≥ 0.97 with 0 errors and 0 "
                f"client-visible 409s: **{met(self.goal_met('ferry', ratio))}**.")
        if tls is not None:
            lines.append(
                f"**unpinned-with-ferry over https / pinned = {tls:.3f}** (arm {TLS_ARM}; "
                "rounds: " + rounds_text(tls_rounds) + f"); {GOAL}: "
                f"**{met(self.goal_met(TLS_ARM, tls))}**.")
        if h2 is not None:
            lines.append(
                f"**unpinned-with-ferry over https + HTTP/2 between ferries / pinned = "
                f"{h2:.3f}** (arm {H2_ARM}; rounds: " + rounds_text(h2_rounds)
                + f"); {GOAL}: **{met(self.goal_met(H2_ARM, h2))}**.")
        return lines

    def evidence_lines(self, h2_proof, tls_handshakes):
        """What ferry-h2's and ferry-tls's ferries counted: proof they ran over h2 / TLS."""
        lines = []
        if h2_proof:
            lines.append(
                f"{H2_ARM}'s ferries accepted {h2_proof['downstream_http2_connections']:.0f} "
                f"HTTP/2 connections from their peers over the whole run and held "
                f"{h2_proof['owner_connections_h2']:.0f} h2 / "
                f"{h2_proof['owner_connections_http1']:.0f} HTTP/1.1 owner connections at the "
                f"end (ferry_owner_connections_active), for {self.args.connections} appenders.")
        if tls_handshakes:
            lines.append(
                f"{TLS_ARM}'s ferries counted {tls_handshakes[TLS_FAMILIES[0]]:.0f} TLS "
                f"handshakes (any outcome) on their listeners "
                f"({tls_handshakes[TLS_FAMILIES[1]]:.0f} resumed) over the whole run: "
                "HAProxy's and the forwarding ferries' connections, kept alive.")
        return lines

    def other_ratio_lines(self, ratios):
        """No ferry, owner routing and the one-hop arms against PINNED."""
        lines = []
        s = self.summary
        if "noferry" in s and "pinned" in s and s["pinned"]["appends_per_s_median"]:
            r = s["noferry"]["appends_per_s_median"] / s["pinned"]["appends_per_s_median"]
            lines.append(f"unpinned-without-ferry / pinned = {r:.3f}.")
        routing, routing_rounds = ratios[ROUTING_ARM]
        if routing is not None:
            lines.append(
                f"**unpinned-with-ferry-and-owner-routing / pinned = {routing:.3f}** (arm "
                f"{ROUTING_ARM}; rounds: " + rounds_text(routing_rounds) + ").")
        for a, (r, rs) in ratios["hops"].items():
            if r is None:
                continue  # no pinned arm in this run
            lines.append(f"**{a} / pinned = {r:.3f}** (one proxy hop in front of the owner; "
                         "rounds: " + rounds_text(rs) + ").")
        r, rs = ratios["routing_over_hop"]
        if r is not None:
            lines.append(
                f"**{ROUTING_ARM} / {PINNED_FERRY} = {r:.3f}** (paired per round, median; "
                "rounds: " + rounds_text(rs) + "): what owner routing costs beyond the one hop "
                f"every sidecar deployment has; goal ≥ 1.00 (issue #23): **{met(r >= 1.0)}**.")
        return lines

    def hop_cpu_lines(self):
        """The second HAProxy's CPU per request in arm pinned-haproxy (to read next to the
        ferries' CPU per client request, family_lines)."""
        rs = [r for r in self.by_arm.get(PINNED_HAPROXY, []) if "hop_haproxy_cpu_s" in r]
        if not rs:
            return []
        cpu = sum(r["hop_haproxy_cpu_s"] for r in rs)
        reqs = sum(r["hop_haproxy_requests"] for r in rs) or 1
        self.summary[PINNED_HAPROXY]["hop_haproxy_cpu_us_per_request"] = cpu * 1e6 / reqs
        return [f"{PINNED_HAPROXY}: the hop HAProxy's CPU {cpu * 1e6 / reqs:.1f} µs per request "
                f"({cpu:.2f} s for {reqs:.0f} requests over the measured runs, warm-ups "
                "included, as the ferries' counters above)."]

    def family_lines(self):
        """Per ferry arm, its ferries' counters summed over its runs (also kept in the summary
        as ferry_families): local 409s, routed requests, forwards, CPU per request."""
        lines = []
        for a in self.arms:
            fams = [r["ferry_families"] for r in self.by_arm[a] if "ferry_families" in r]
            if not fams:
                continue
            tot = {k: sum(f[k] for f in fams) for k in fams[0]}
            reqs = tot["ferry_requests_total"] or 1
            client_reqs = self.client_requests(a, tot) or 1
            cpu_s = tot["process_cpu_seconds_total"]
            tot["cpu_us_per_client_request"] = cpu_s * 1e6 / client_reqs
            lines.append(
                f"{a}: local instances' 409s {tot['local_409']:.0f} "
                f"({tot['local_409'] / reqs:.1%} of {tot['ferry_requests_total']:.0f} ferry "
                f"requests), routed {tot['ferry_owner_routing_requests_total']:.0f}, forwards "
                f"{tot['ferry_forward_attempts_total']:.0f}, ferry CPU "
                f"{cpu_s * 1e6 / reqs:.1f} µs per ferry request, "
                f"{tot['cpu_us_per_client_request']:.1f} µs per client request (all ferries; "
                f"{cpu_s:.2f} s over the measured runs).")
            self.summary[a]["ferry_families"] = tot
        return lines

    def client_requests(self, arm, fams):
        """The client requests behind an arm's ferry counters `fams` (ROUTING_FAMILIES summed
        over its ferries): a forward or a routed request reaches the owner's ferry as one more
        ferry request, unless the peer table names the owners' instances (--routing-peers
        instances)."""
        second_ferry = not (arm == ROUTING_ARM and self.args.routing_peers == "instances")
        sent_on = (fams["ferry_forward_attempts_total"]
                   + fams["ferry_owner_routing_requests_total"])
        return fams["ferry_requests_total"] - sent_on * second_ferry

    def syscall_lines(self):
        """With --count-syscalls: per arm, its proxies' system calls and context switches per
        client request over its measured runs (also kept in the summary as syscalls)."""
        lines = []
        for a in self.arms:
            rs = [r for r in self.by_arm[a] if "syscalls" in r]
            if not rs:
                continue
            if a == PINNED_HAPROXY:
                reqs = sum(r["hop_haproxy_requests"] for r in rs)
            else:
                reqs = sum(self.client_requests(a, r["ferry_families"]) for r in rs)
            if reqs <= 0:
                raise ValueError(f"{a}: syscalls counted over no client request")
            per = {k: sum(r["syscalls"][k] for r in rs) / reqs for k in rs[0]["syscalls"]}
            self.summary[a]["syscalls_per_client_request"] = per
            calls = ", ".join(f"{k} {v:.2f}" for k, v in per.items()
                              if k not in ("syscalls", "context_switches") and v >= 0.005)
            lines.append(f"{a}: its proxies' system calls per client request {per['syscalls']:.2f} "
                         f"({calls}), context switches {per['context_switches']:.2f} "
                         f"(perf stat over the measured runs, {reqs:.0f} requests)."
                         + self.per_ferry_text(a, rs))
        return lines

    def per_ferry_text(self, arm, rs):
        """Per ferry of arm: its share of the ferry requests and its context switches per
        request it served (an idle ferry: none); the summary keeps them as syscalls_by_ferry."""
        by = [r["syscalls_by_ferry"] for r in rs if r.get("syscalls_by_ferry")]
        if not by:
            return ""
        tot = {m: {k: sum(b[m][k] for b in by) for k in by[0][m]} for m in by[0]}
        self.summary[arm]["syscalls_by_ferry"] = tot
        all_reqs = sum(t["requests"] for t in tot.values()) or 1
        parts = [f"{m} {t['requests'] / all_reqs:.0%} of the requests, "
                 + (f"{t['context_switches'] / t['requests']:.2f}" if t["requests"] else "no")
                 + " switches per request" for m, t in tot.items()]
        return " Per ferry: " + "; ".join(parts) + "."


def rounds_text(ratios):
    return ", ".join(f"{x:.3f}" for x in ratios)


def met(ok):
    return "MET" if ok else "NOT MET"


def ceiling_lines(ceiling):
    if not ceiling:
        return []
    return [f"Load generator ceiling: straight to the owners' emulators (no edge, no ferry) it "
            f"completed {ceiling['appends_per_s']:.0f} appends/s at "
            f"{ceiling['loadgen_cpu_us_per_append']:.1f} µs of its own CPU per append, i.e. "
            f"≈ {ceiling['loadgen_ceiling_per_s']:.0f} appends/s on one core: far above what "
            f"the arms above ask of it."]


def write_report(args, arms, members, runs, ceiling=None, tls_handshakes=None, h2_proof=None,
                 handover_result=None, handover_lines=()):
    """Writes cell.md and cell.json. True unless the h2 arm ran and missed its goal or did not
    run over HTTP/2 (the caller then exits 1)."""
    rep = CellReport(args, arms, members, runs)
    ratios = {a: rep.paired_ratios(a) for a in ("ferry", TLS_ARM, H2_ARM, ROUTING_ARM)}
    ratios["hops"] = {a: rep.paired_ratios(a) for a in HOP_ARMS if a in rep.summary}
    ratios["routing_over_hop"] = rep.paired_ratios(ROUTING_ARM, PINNED_FERRY)
    meta = rep.meta()
    lines = (rep.table_lines(meta) + rep.goal_lines(ratios)
             + rep.evidence_lines(h2_proof, tls_handshakes) + rep.other_ratio_lines(ratios)
             + rep.family_lines() + rep.hop_cpu_lines() + rep.syscall_lines()
             + ceiling_lines(ceiling)
             + list(handover_lines))
    summary = rep.summary
    goal = {a: (rep.goal_met(a, ratios[a][0]) if a in summary else None)
            for a in (TLS_ARM, H2_ARM)}
    write_results(args.out, "cell", "\n".join(lines) + "\n",
                  {"meta": meta, "summary": summary, "loadgen_ceiling": ceiling,
                   "ratio_ferry_over_pinned": ratios["ferry"][0],
                   "ratios_per_round": ratios["ferry"][1],
                   "ratio_ferry_tls_over_pinned": ratios[TLS_ARM][0],
                   "ratio_ferry_routing_over_pinned": ratios[ROUTING_ARM][0],
                   "ratios_per_round_ferry_routing": ratios[ROUTING_ARM][1],
                   "ratios_hop_arms_over_pinned": {a: r for a, (r, _) in ratios["hops"].items()},
                   "ratio_ferry_routing_over_pinned_ferry": ratios["routing_over_hop"][0],
                   "ratios_per_round_routing_over_pinned_ferry": ratios["routing_over_hop"][1],
                   "ratios_per_round_ferry_tls": ratios[TLS_ARM][1],
                   "ferry_tls_listener_handshakes": tls_handshakes,
                   "goal_met": rep.goal_met("ferry", ratios["ferry"][0]),
                   "goal_met_ferry_tls": goal[TLS_ARM],
                   "ratio_ferry_h2_over_pinned": ratios[H2_ARM][0],
                   "ratios_per_round_ferry_h2": ratios[H2_ARM][1],
                   "ferry_h2_evidence": h2_proof,
                   "handover": handover_result,
                   "goal_met_ferry_h2": goal[H2_ARM],
                   "runs": runs})
    # The h2 arm must be MET and must have run over HTTP/2.
    return H2_ARM not in summary or (bool(goal[H2_ARM]) and bool(h2_proof)
                                      and h2_proof["downstream_http2_connections"] > 0)
