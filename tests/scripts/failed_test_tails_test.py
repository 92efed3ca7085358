#!/usr/bin/python3
"""Unit tests of scripts/failed-test-tails.py on a LastTest.log in ctest's format: the end of
each failed (or timed-out) test's output is printed, a passed test's is not."""
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "failed-test-tails.py")


def section(n, name, output, verdict):
    return (f"{n}/3 Testing: {name}\n{n}/3 Test: {name}\nCommand: \"/bin/{name}\"\n"
            f"Directory: /tmp\n\"{name}\" start time: Dec 02 06:19 UTC\nOutput:\n"
            f"----------------------------------------------------------\n{output}"
            f"<end of output>\nTest time =   1.00 sec\n"
            f"----------------------------------------------------------\n{verdict}\n"
            f"\"{name}\" end time: Dec 02 06:19 UTC\n\"{name}\" time elapsed: 00:00:01\n"
            f"----------------------------------------------------------\n\n")


class FailedTestTails(unittest.TestCase):
    def run_on(self, log, lines):
        with tempfile.TemporaryDirectory() as build:
            os.makedirs(os.path.join(build, "Testing", "Temporary"))
            with open(os.path.join(build, "Testing", "Temporary", "LastTest.log"), "w") as f:
                f.write(log)
            return subprocess.run([sys.executable, SCRIPT, build, str(lines)],
                                  capture_output=True, text=True, check=True).stdout

    def test_prints_the_end_of_failed_and_timed_out_tests_only(self):
        log = ("Start testing: Dec 02 06:19 UTC\n"
               "----------------------------------------------------------\n"
               + section(1, "good", "fine 1\nfine 2\n", "Test Passed.")
               + section(2, "bad", "".join(f"line {i}\n" for i in range(10)) + "FAIL: why\n",
                         "Test Failed.")
               + section(3, "slow", "started\n", "Test time out."))
        out = self.run_on(log, 3)
        self.assertIn("==== bad: last 3 of 11 output lines\nline 8\nline 9\nFAIL: why\n", out)
        self.assertIn("==== slow: last 1 of 1 output lines\nstarted\n", out)
        self.assertNotIn("good", out)
        self.assertNotIn("line 7", out)

    def test_all_passed_prints_nothing(self):
        self.assertEqual(self.run_on(section(1, "good", "fine\n", "Test Passed."), 5), "")


if __name__ == "__main__":
    unittest.main()
