#!/usr/bin/python3
"""Unit tests of bench/passthrough/summary.py. With a ferry-before arm (--ferry-before): ferry's
row gets its CPU/req ÷ ferry-before's, paired per round; the tables get a "CPU/req ÷ before"
column and the report a "Before/after" line only when ferry-before ran; ferry-before is no
one's "best other" peer, nor is the parsing floor (floor-parse), which is divided by the floor
like the proxies. The user / kernel split of the CPU column; the latency workload's
added p50 over the direct connection and its ratio to the floor's, paired per round."""
import os
import sys
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, os.path.join(REPO, "bench", "passthrough"))
import summary  # noqa: E402

META = {"date": "d", "cores": 2, "cpu_model": "c", "kernel": "k", "connections": 32,
        "duration_s": 1, "rounds": 2, "loadavg_start": "0", "loadavg_end": "0",
        "versions": {}, "h2_connections": 8, "h2_streams": 8}


def run(arm, wl, rnd, cpu, p50_ms=1.0, sys_us=None):
    return {"arm": arm, "workload": wl, "round": rnd, "rps": 1000.0, "p50_ms": p50_ms,
            "p99_ms": 2.0, "cpu_us_per_req": cpu, "proxy_rss_kib": 1024, "errors": 0,
            "origin_cpu_us_per_req": 5.0, "wrk_cpu_us_per_req": 5.0, "origin_new_conns": 0,
            "foreign_cores": 0.0, **({"sys_us_per_req": sys_us} if sys_us is not None else {})}


def runs(cpu_by_arm, workloads=("get", "h2c")):
    """Two rounds; cpu_by_arm: arm -> (round 1 CPU/req, round 2 CPU/req)."""
    return [run(arm, wl, rnd, cpus[rnd - 1]) for wl in workloads
            for arm, cpus in cpu_by_arm.items() for rnd in (1, 2)]


def render(rs, arms):
    s = summary.summarize(rs, arms, ["get"])
    s.update(summary.summarize(rs, [a for a in summary.H2_ARMS if a in arms], ["h2c"]))
    return s, summary.render_markdown(META, s, arms)


class FerryBefore(unittest.TestCase):
    def test_ferry_over_before_is_paired_per_round(self):
        # Round 1: 10 / 20 = 0.5, round 2: 30 / 20 = 1.5; median 1.0. Unpaired medians would
        # give 20 / 20 too, so make round 2's before differ: 30 / 10 = 3.0 -> median 1.75.
        rs = runs({"haproxy": (20, 20), "ferry": (10, 30), "ferry-before": (20, 10)})
        s, _ = render(rs, ["haproxy", "ferry", "ferry-before"])
        self.assertAlmostEqual(s["get"]["ferry"]["cpu_us_per_req_vs_before"], 1.75)
        self.assertAlmostEqual(s["h2c"]["ferry"]["cpu_us_per_req_vs_before"], 1.75)

    def test_column_and_headline_only_with_ferry_before(self):
        with_before = runs({"haproxy": (20, 20), "ferry": (10, 10), "ferry-before": (20, 20)})
        _, md = render(with_before, ["haproxy", "ferry", "ferry-before"])
        self.assertIn("| CPU/req ÷ before |", md)
        self.assertIn("| **ferry** | 1,000 | 1.00 | 2.00 | 10.0 (10.0–10.0) | – | 1.0 | 0.50 | – "
                      "| 0.50 | 0.50 |", md)
        self.assertIn(": get 0.50, h2c 0.50**", md)
        without = [r for r in with_before if r["arm"] != "ferry-before"]
        _, md = render(without, ["haproxy", "ferry"])
        self.assertNotIn("÷ before", md)
        self.assertNotIn("Before/after", md)

    def test_ferry_before_is_no_ones_best_other_peer(self):
        rs = runs({"haproxy": (20, 20), "ferry": (10, 10), "ferry-before": (5, 5)})
        s, _ = render(rs, ["haproxy", "ferry", "ferry-before"])
        self.assertAlmostEqual(s["get"]["ferry"]["cpu_us_per_req_vs_best_peer"], 0.5)
        self.assertAlmostEqual(s["get"]["haproxy"]["cpu_us_per_req_vs_best_peer"], 2.0)
        self.assertAlmostEqual(s["get"]["ferry-before"]["cpu_us_per_req_vs_best_peer"], 0.25)

    def test_the_parsing_floor_is_no_ones_peer_and_is_divided_by_the_floor(self):
        rs = runs({"floor": (10, 10), "floor-parse": (11, 12), "haproxy": (20, 20),
                   "ferry": (15, 15)}, workloads=("get",))
        s = summary.summarize(rs, ["floor", "floor-parse", "haproxy", "ferry"], ["get"])
        self.assertAlmostEqual(s["get"]["ferry"]["cpu_us_per_req_vs_best_peer"], 0.75)
        self.assertAlmostEqual(s["get"]["haproxy"]["cpu_us_per_req_vs_best_peer"], 20 / 15)
        self.assertNotIn("cpu_us_per_req_vs_best_peer", s["get"]["floor-parse"])
        self.assertAlmostEqual(s["get"]["floor-parse"]["cpu_us_per_req_vs_floor"], 1.15)


class UserKernelAndLatency(unittest.TestCase):
    def test_cpu_splits_into_user_and_kernel(self):
        rs = [run("ferry", "get", rnd, 20.0, sys_us=15.0) for rnd in (1, 2)]
        s, md = render(rs, ["ferry"])
        self.assertAlmostEqual(s["get"]["ferry"]["sys_us_per_req"], 15.0)
        self.assertAlmostEqual(s["get"]["ferry"]["user_us_per_req"], 5.0)
        self.assertIn("| 20.0 (20.0–20.0) | 5.0 / 15.0 |", md)

    def test_seq_added_p50_is_over_direct_and_paired_with_the_floor(self):
        # Round 1: ferry adds 30 µs, the floor 20 (1.5); round 2: 44 and 40 (1.1). Median of
        # the paired ratios 1.3; the unpaired medians (37 / 30) would say 1.23.
        p50 = {"direct": (0.020, 0.030), "floor": (0.040, 0.070), "ferry": (0.050, 0.074)}
        rs = [run(arm, "seq", rnd, None if arm == "direct" else 10.0, p50_ms=p50[arm][rnd - 1])
              for arm in p50 for rnd in (1, 2)]
        s = summary.summarize(rs, ["direct", "floor", "ferry"], ["seq"])
        self.assertAlmostEqual(s["seq"]["ferry"]["added_p50_us"], 37.0)
        self.assertAlmostEqual(s["seq"]["floor"]["added_p50_us"], 30.0)
        self.assertAlmostEqual(s["seq"]["ferry"]["added_p50_vs_floor"], 1.3)
        self.assertIsNone(s["seq"]["floor"]["added_p50_vs_floor"])
        md = summary.render_markdown(META, s, ["direct", "floor", "ferry"])
        self.assertIn("| added p50 µs | added p50 ÷ floor's |", md)
        self.assertIn("seq added p50 37.0 µs, ÷ floor's 1.30", md)


if __name__ == "__main__":
    unittest.main()
