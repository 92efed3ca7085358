#!/usr/bin/python3
"""Unit tests of bench/faults/checks.py, the fault campaign's checker: each check fails on a
planted violation (a duplicated, missing or reordered append, a foreign entry, a reader that
differs from its stream, an answer the contract does not allow) and passes on what a clean
campaign leaves (including an append applied but never acknowledged), and checks.py RECORD
exits 1 on a record with a violation, 0 on a clean one."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKS = os.path.join(REPO, "bench", "faults", "checks.py")
sys.path.insert(0, os.path.dirname(CHECKS))
import checks  # noqa: E402

JSON = {"content-type": "application/json"}


def stream(*entries):
    return "".join(f"{e};" for e in entries).encode()


class Streams(unittest.TestCase):
    def test_every_acknowledged_append_once_and_in_order_passes(self):
        data = stream("p0-0", "p1-0", "p0-1", "p1-1", "p0-2")
        self.assertEqual(checks.check_stream("s", data, {"p0": 3, "p1": 2}), [])

    def test_an_applied_but_unacknowledged_last_append_passes(self):
        self.assertEqual(checks.check_stream("s", stream("p0-0", "p0-1"), {"p0": 1}), [])

    def test_a_duplicate_fails(self):
        v = checks.check_stream("s", stream("p0-0", "p0-1", "p0-1", "p0-2"), {"p0": 3})
        self.assertEqual(len(v), 1)
        self.assertIn("1 duplicated", v[0])

    def test_a_missing_acknowledged_append_fails(self):
        v = checks.check_stream("s", stream("p0-0", "p0-2"), {"p0": 3})
        self.assertIn("1 acknowledged missing (first seq 1)", v[0])

    def test_appends_out_of_producer_order_fail(self):
        v = checks.check_stream("s", stream("p0-1", "p0-0"), {"p0": 2})
        self.assertIn("out of order", v[0])

    def test_an_entry_no_producer_wrote_fails(self):
        v = checks.check_stream("s", stream("p0-0", "p9-0", "junk"), {"p0": 1})
        self.assertEqual(len(v), 2)
        self.assertIn("p9-0", v[0])

    def test_a_producer_with_nothing_in_its_stream_fails(self):
        self.assertIn("2 acknowledged missing", checks.check_stream("s", b"", {"p0": 2})[0])


class Readers(unittest.TestCase):
    def test_equal_bytes_pass(self):
        self.assertEqual(checks.check_reader("r", b"p0-0;", b"p0-0;"), [])

    def test_a_short_or_different_reader_fails(self):
        self.assertIn("first difference at byte 4",
                      checks.check_reader("r", b"p0-0", b"p0-0;")[0])
        self.assertIn("first difference at byte 3",
                      checks.check_reader("r", b"p0-1;", b"p0-0;")[0])

    def test_offset_mismatches_fail(self):
        self.assertIn("2 control frames", checks.check_reader("r", b"x", b"x", 2)[0])


class Answers(unittest.TestCase):
    def allowed(self, status, headers=None, code="", strict=False):
        body = json.dumps({"error": {"code": code, "message": "m"}}).encode() if code else b""
        return checks.classify(status, headers or {}, body, strict)[1]

    def test_what_the_contract_allows(self):
        self.assertTrue(self.allowed(0))
        self.assertTrue(self.allowed(204))
        self.assertTrue(self.allowed(409, {"streams-replay-to": "inst-2"}, "not_ring_owner"))
        self.assertTrue(self.allowed(503, {"retry-after": "1"}, "forward_failed"))
        self.assertTrue(self.allowed(503, {"retry-after": "1"}, "upstream_unavailable"))
        self.assertTrue(self.allowed(503, {"prisma-streams-origin": "inst-1",
                                           "retry-after": "1"}, "shard_moving"))
        self.assertTrue(self.allowed(500, {"prisma-streams-origin": "inst-1"}, "internal"))
        self.assertTrue(self.allowed(502, {}, "upstream_outcome_unknown"))
        self.assertTrue(self.allowed(504, {}, "upstream_response_timeout"))

    def test_a_fake_5xx_fails(self):
        self.assertFalse(self.allowed(500, JSON, "internal"))
        self.assertFalse(self.allowed(503, {}, "forward_failed"))  # no Retry-After
        self.assertFalse(self.allowed(502, {}, "bad_gateway"))
        self.assertFalse(self.allowed(504, {}, "response_timeout"))

    def test_strict_5xx_refuses_the_local_failure_answers(self):
        self.assertFalse(self.allowed(502, {}, "upstream_outcome_unknown", strict=True))
        self.assertFalse(self.allowed(504, {}, "upstream_response_timeout", strict=True))

    def test_a_4xx_other_than_a_replay_409_fails(self):
        self.assertFalse(self.allowed(409, {"prisma-streams-origin": "inst-1"}, "producer_seq_gap"))
        self.assertFalse(self.allowed(404, {"prisma-streams-origin": "inst-1"}, "stream_not_found"))
        self.assertFalse(self.allowed(400, {}, "bad_request"))


class Record(unittest.TestCase):
    """checks.py RECORD.json: the exit status a campaign gets."""

    def record(self, **change):
        r = {"streams": {"s": {"data": "p0-0;p0-1;", "acked": {"p0": 2}}},
             "readers": [{"who": "r0", "stream": "s", "received": "p0-0;p0-1;"}],
             "answers": {"204": 2}, "disallowed": [], "attempts": 2, "faults": {"kill": 1}}
        r.update(change)
        return r

    def run_checker(self, record):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(record, f)
            f.flush()
            return subprocess.run([sys.executable, CHECKS, f.name], capture_output=True,
                                  text=True)

    def test_a_clean_record_exits_0(self):
        out = self.run_checker(self.record())
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("violations 0", out.stdout)

    def test_each_planted_violation_exits_1(self):
        planted = {
            "duplicate": {"streams": {"s": {"data": "p0-0;p0-0;p0-1;", "acked": {"p0": 2}}}},
            "missing": {"streams": {"s": {"data": "p0-0;", "acked": {"p0": 2}}},
                        "readers": []},
            "5xx": {"disallowed": [{"who": "p0", "status": 500, "label": "500 internal (ferry)"}]},
            "reader": {"readers": [{"who": "r0", "stream": "s", "received": "p0-0;"}]},
        }
        for name, change in planted.items():
            with self.subTest(name):
                out = self.run_checker(self.record(**change))
                self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
                self.assertIn("VIOLATION", out.stdout)


if __name__ == "__main__":
    unittest.main()
