#!/usr/bin/env python3
"""Prints the last lines of every failed test's output from ctest's LastTest.log.

    scripts/failed-test-tails.py BUILD_DIR [LINES]

scripts/test.sh calls it after a failed ctest run, so that the reason of a failure is in the
last lines of the run's output too (a CI log is often read from its end, and ctest's
--output-on-failure prints each output in the middle of the run)."""
import os
import re
import sys


def failed_sections(log_text):
    """(name, output lines) of every test in LastTest.log that did not say "Test Passed."."""
    starts = list(re.finditer(r"^\d+/\d+ Testing: (.+)$", log_text, re.M))
    for i, start in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(log_text)
        section = log_text[start.end():end]
        if "\nTest Passed." in section:
            continue
        out = re.search(r"^Output:\n-+\n(.*?)^<end of output>", section, re.M | re.S)
        yield start.group(1), (out.group(1) if out else section).rstrip("\n").splitlines()


def main():
    build, lines = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30
    path = os.path.join(build, "Testing", "Temporary", "LastTest.log")
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError as e:
        print(f"failed-test-tails: {e}")
        return
    for name, out in failed_sections(text):
        print(f"==== {name}: last {min(lines, len(out))} of {len(out)} output lines")
        print("\n".join(out[-lines:]))


if __name__ == "__main__":
    main()
