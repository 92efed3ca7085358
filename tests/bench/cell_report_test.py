#!/usr/bin/python3
"""Unit tests of bench/benchlib/cell_report.py's issue #23 lines: owner routing ÷ pinned through
one ferry, paired per round, with its goal (≥ 1.00), and the hop HAProxy's CPU per request (its
CPU over the requests its stats page counted) beside the ferries' CPU per client request."""
import argparse
import os
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
from benchlib import cell_report  # noqa: E402

MEMBERS = ["inst-1", "inst-2"]


def run(arm, rnd, rate, **extra):
    return {"arm": arm, "round": rnd, "appends_per_s": rate, "p50_ms": 25.0, "p99_ms": 30.0,
            "appends": int(rate * 10), "client_409": 0, "client_replays": 0, "errors": 0,
            "forwarded_answers": 0, "ferry_forward_attempts": {m: 0 for m in MEMBERS}, **extra}


def args(out):
    return argparse.Namespace(rounds=2, quick=True, launcher="local", streams=16, connections=64,
                              body_bytes=200, delay_ms=20.0, duration=10.0, warmup=1.0,
                              max_replays=3, seed=1, out=out, routing_peers="instances")


class RoutingOverOneHop(unittest.TestCase):
    def report(self, routing_rates):
        # Round 1: routing 2000 vs one ferry hop 1600 (1.25); round 2: 1500 vs 2000 (0.75);
        # median 1.00. Unpaired medians (1750 / 1800) would say 0.97.
        arms = ["pinned", "ferry-routing", "pinned-ferry", "pinned-haproxy"]
        runs = []
        for rnd, (routed, hop) in enumerate(zip(routing_rates, (1600.0, 2000.0))):
            runs += [run("pinned", rnd, 2100.0), run("ferry-routing", rnd, routed),
                     run("pinned-ferry", rnd, hop),
                     run("pinned-haproxy", rnd, 2050.0, hop_haproxy_cpu_s=0.5,
                         hop_haproxy_requests=10000)]
        with tempfile.TemporaryDirectory() as out:
            cell_report.write_report(args(out), arms, MEMBERS, runs)
            with open(os.path.join(out, "cell.md")) as f:
                return f.read()

    def test_paired_ratio_meets_the_goal_at_one(self):
        md = self.report((2000.0, 1500.0))
        self.assertIn("**ferry-routing / pinned-ferry = 1.000** (paired per round, median; "
                      "rounds: 1.250, 0.750)", md)
        self.assertIn("goal ≥ 1.00 (issue #23): **MET**", md)

    def test_below_one_is_not_met(self):
        md = self.report((1900.0, 1500.0))
        self.assertIn("**ferry-routing / pinned-ferry = 0.969**", md)
        self.assertIn("goal ≥ 1.00 (issue #23): **NOT MET**", md)

    def test_hop_haproxy_cpu_is_per_request_it_served(self):
        md = self.report((2000.0, 1500.0))
        # 2 runs x 0.5 s over 2 x 10,000 requests: 50 µs each.
        self.assertIn("pinned-haproxy: the hop HAProxy's CPU 50.0 µs per request (1.00 s for "
                      "20000 requests", md)


if __name__ == "__main__":
    unittest.main()
