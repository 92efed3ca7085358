#!/usr/bin/python3
"""The pass-through bench with its parsing floor (bench/README.md, "The parsing floor"):
run.py --arms direct,floor,floor-parse,ferry over get and seq, one 1-second round; the report
must have a floor-parse row in each workload, without errors, divided by the floor of the same
round, and no best other peer for ferry (the relays are no one's peer).

    passthrough_floor_parse_test.py FERRY_BINARY OUT_DIR
"""
import json
import os
import subprocess
import sys
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FERRY, OUT = None, None


class FloorParseArm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        subprocess.run(
            ["/usr/bin/python3", os.path.join(REPO, "bench", "passthrough", "run.py"),
             "--ferry", FERRY, "--arms", "direct,floor,floor-parse,ferry",
             "--workloads", "get,seq", "--tls", "off", "--h2", "off",
             "--duration", "1", "--rounds", "1", "--warmup", "0", "--out", OUT],
            check=True, cwd=REPO, timeout=240)
        with open(os.path.join(OUT, "passthrough.json")) as f:
            cls.summary = json.load(f)["summary"]

    def test_the_parsing_floor_ran_every_plain_workload_without_errors(self):
        for wl in ("get", "seq"):
            row = self.summary[wl]["floor-parse"]
            self.assertEqual(row["rounds"], 1, wl)
            self.assertEqual(row["errors"], 0, wl)
            self.assertGreater(row["rps"], 0, wl)
            self.assertIsNotNone(row["cpu_us_per_req_vs_floor"], wl)

    def test_the_relays_are_no_ones_peer(self):
        self.assertIsNone(self.summary["get"]["ferry"]["cpu_us_per_req_vs_best_peer"])
        self.assertNotIn("cpu_us_per_req_vs_best_peer", self.summary["get"]["floor-parse"])


if __name__ == "__main__":
    FERRY, OUT = sys.argv.pop(1), sys.argv.pop(1)
    unittest.main()
