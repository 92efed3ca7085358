#!/usr/bin/python3
"""Unit tests of bench/benchlib/cell_report.py's issue #23 lines: owner routing ÷ pinned through
one ferry, paired per round, with its goal (≥ 1.00), the hop HAProxy's CPU per request (its
CPU over the requests its stats page counted) beside the ferries' CPU per client request, and
--count-syscalls' system calls per client request; and bench/benchlib/syscall_count.py's
reading of perf stat's output."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
from benchlib import cell_report, syscall_count  # noqa: E402

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


def families(ferry_requests, routed=0, forwards=0):
    return {"ferry_requests_total": ferry_requests, "ferry_owner_routing_requests_total": routed,
            "ferry_forward_attempts_total": forwards, "process_cpu_seconds_total": 0.1,
            "local_409": 0}


def calls(syscalls, epoll_wait, switches):
    out = {k: 0 for k in syscall_count.EVENTS}
    out.update(syscalls=syscalls, epoll_wait=epoll_wait, read=2000, writev=2000,
               context_switches=switches)
    return out


class SyscallsPerClientRequest(unittest.TestCase):
    def report(self, routing_peers):
        arms = ["ferry-routing", "pinned-ferry", "pinned-haproxy"]
        runs = []
        for rnd in range(2):
            # 1000 client requests per run behind each arm's counters: ferry-routing's
            # ferries count 1000 requests of which 600 routed (with peers = ferries each
            # routed one is counted again by the owner's ferry: 1600), pinned-ferry's 1020
            # with 20 forwards (the owner's ferry counts each forward again).
            fr = 1600 if routing_peers == "ferries" else 1000
            by_ferry = {"inst-1": dict(calls(1000, 100, 150), requests=500),
                        "inst-2": dict(calls(4000, 1000, 1050), requests=500)}
            runs += [run("ferry-routing", rnd, 2000.0, ferry_families=families(fr, routed=600),
                         syscalls=calls(5000 + rnd * 400, 1100 + rnd * 200, 1200),
                         syscalls_by_ferry=by_ferry),
                     run("pinned-ferry", rnd, 2000.0,
                         ferry_families=families(1020, forwards=20),
                         syscalls=calls(5000, 800, 850)),
                     run("pinned-haproxy", rnd, 2000.0, hop_haproxy_cpu_s=0.05,
                         hop_haproxy_requests=1000, syscalls=calls(6000, 600, 640))]
        a = args(tempfile.mkdtemp())
        a.routing_peers = routing_peers
        rep = cell_report.CellReport(a, arms, MEMBERS, runs)
        return "\n".join(rep.syscall_lines()), rep.summary

    def test_counts_are_per_client_request_of_each_arm(self):
        for peers in ("instances", "ferries"):
            md, summary = self.report(peers)
            self.assertIn("ferry-routing: its proxies' system calls per client request 5.20 "
                          "(epoll_wait 1.20, read 2.00, writev 2.00), context switches 1.20 "
                          "(perf stat over the measured runs, 2000 requests).", md, peers)
            self.assertIn("pinned-ferry: its proxies' system calls per client request 5.00 "
                          "(epoll_wait 0.80, read 2.00, writev 2.00), context switches 0.85", md)
            self.assertIn("pinned-haproxy: its proxies' system calls per client request 6.00 "
                          "(epoll_wait 0.60, read 2.00, writev 2.00), context switches 0.64", md)
            self.assertAlmostEqual(
                summary["ferry-routing"]["syscalls_per_client_request"]["epoll_wait"], 1.2)
            # Each ferry's switches over the requests it served, not over the arm's.
            self.assertIn("Per ferry: inst-1 50% of the requests, 0.30 switches per request; "
                          "inst-2 50% of the requests, 2.10 switches per request.", md)
            self.assertEqual(summary["ferry-routing"]["syscalls_by_ferry"]["inst-2"]["requests"],
                             1000)

    def test_no_client_request_is_an_error(self):
        run0 = run("pinned-ferry", 0, 2000.0, ferry_families=families(0),
                   syscalls=calls(10, 1, 1))
        rep = cell_report.CellReport(args(tempfile.mkdtemp()), ["pinned-ferry"], MEMBERS, [run0])
        with self.assertRaises(ValueError):
            rep.syscall_lines()


class PerfStatOutput(unittest.TestCase):
    # perf stat --per-thread -x,: "comm-tid,count,unit,event,run time,percentage,,".
    TIDS = {"101": "100", "102": "100", "201": "200"}  # threads 101 and 102 of process 100

    def parse(self, lines):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("# started on Sun Dec  6 16:00:00 2026\n\n" + "\n".join(lines) + "\n")
        try:
            return syscall_count.parse(f.name, self.TIDS)
        finally:
            os.unlink(f.name)

    def lines(self, value=lambda tid, i: 5):
        return [f"ferry-{tid},{value(tid, i)},,{event},1000,100.00,,"
                for tid in self.TIDS for i, event in enumerate(syscall_count.EVENTS.values())]

    def test_every_event_is_read_by_its_name_and_threads_sum_into_their_process(self):
        got = self.parse(self.lines(lambda tid, i: int(tid) * 100 + i))
        self.assertEqual(sorted(got), ["100", "200"])
        self.assertEqual(list(got["100"]), list(syscall_count.EVENTS))
        self.assertEqual(got["100"]["syscalls"], 10100 + 10200)
        self.assertEqual(got["200"]["syscalls"], 20100)
        self.assertEqual(got["200"]["context_switches"], 20100 + len(syscall_count.EVENTS) - 1)

    def test_an_event_perf_could_not_count_is_an_error_not_zero(self):
        lines = self.lines()
        self.assertEqual(self.parse(lines)["100"]["epoll_wait"], 10)
        epoll = [i for i, line in enumerate(lines) if "ferry-102" in line and "epoll_wait" in line]
        unsupported = list(lines)
        unsupported[epoll[0]] = "ferry-102,<not supported>,,syscalls:sys_enter_epoll_wait,0,,"
        with self.assertRaisesRegex(RuntimeError, "sys_enter_epoll_wait for thread 102"):
            self.parse(unsupported)
        with self.assertRaisesRegex(RuntimeError, "sched_switch for thread 201"):  # missing
            self.parse(lines[:-1])

    def test_filtered_events_are_counted_under_their_own_name(self):
        # counts.py's set: a tracepoint filter keeps only the calls that returned EAGAIN.
        events = {"read": "syscalls:sys_enter_read",
                  "EAGAIN read": ("syscalls:sys_exit_read", "ret == -11")}
        self.assertEqual(syscall_count.event_args(events),
                         ["-e", "syscalls:sys_enter_read", "-e", "syscalls:sys_exit_read",
                          "--filter", "ret == -11"])
        lines = [f"ferry-{tid},{n},,{event},1000,100.00,," for tid in self.TIDS
                 for n, event in ((7, "syscalls:sys_enter_read"), (2, "syscalls:sys_exit_read"))]
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("\n".join(lines) + "\n")
        try:
            got = syscall_count.parse(f.name, self.TIDS, events)
        finally:
            os.unlink(f.name)
        self.assertEqual(got["100"], {"read": 14, "EAGAIN read": 4})
        self.assertEqual(got["200"], {"read": 7, "EAGAIN read": 2})

    def test_a_thread_that_never_ran_counted_nothing(self):
        lines = [line.replace("ferry-201,5,", "ferry-201,<not counted>,") for line in self.lines()]
        got = self.parse(lines)
        self.assertEqual(got["200"], {name: 0 for name in syscall_count.EVENTS})
        self.assertEqual(got["100"]["syscalls"], 10)


class PerfStatAttached(unittest.TestCase):
    SLEEPER = ("import threading, time\n"
               "threading.Thread(target=lambda: [time.sleep(0.01) for _ in range(10 ** 6)],"
               " daemon=True).start()\n"
               "print('up', flush=True)\n"
               "while True: time.sleep(0.01)\n")

    def test_a_perf_that_fails_is_an_error_not_a_hang(self):
        with self.assertRaisesRegex(RuntimeError, "did not acknowledge 'enable'"):
            with syscall_count.SyscallCount([os.getpid()], tempfile.mkdtemp(), perf="/bin/false"):
                pass

    @unittest.skipUnless(shutil.which("perf") and os.geteuid() == 0, "needs perf and root")
    def test_counts_each_process_with_its_threads(self):
        busy = subprocess.Popen([sys.executable, "-c", self.SLEEPER], stdout=subprocess.PIPE)
        idle = subprocess.Popen([sys.executable, "-c", "import time\nprint('up', flush=True)\n"
                                 "time.sleep(3600)\n"], stdout=subprocess.PIPE)
        try:
            for p in (busy, idle):
                self.assertEqual(p.stdout.readline().strip(), b"up")
            with syscall_count.SyscallCount([busy.pid, idle.pid], tempfile.mkdtemp()) as count:
                deadline = time.monotonic() + 0.5
                while time.monotonic() < deadline:
                    time.sleep(0.05)
            # Two threads sleeping 10 ms at a time: ~100 switches in 0.5 s; the idle one none.
            self.assertGreater(count.by_pid[str(busy.pid)]["context_switches"], 40)
            self.assertLess(count.by_pid[str(idle.pid)]["context_switches"], 3)
            self.assertEqual(count.result["context_switches"],
                             sum(c["context_switches"] for c in count.by_pid.values()))
        finally:
            for p in (busy, idle):
                p.kill()
                p.wait()


if __name__ == "__main__":
    unittest.main()
