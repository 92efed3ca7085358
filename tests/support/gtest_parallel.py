#!/usr/bin/env python3
"""Runs every test of a GoogleTest binary at once, each in its own process, and fails when any
fails (printing that one's output). For tests that mostly wait (a live feed held a minute over
each transport): side by side they take the time of one.

    gtest_parallel.py BINARY
"""
import subprocess
import sys


def list_tests(binary):
    out = subprocess.run([binary, "--gtest_list_tests"], capture_output=True, text=True,
                         check=True).stdout
    tests, suite = [], None
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            tests.append(suite + line.split("#")[0].strip())
    return tests


def main():
    binary = sys.argv[1]
    tests = list_tests(binary)
    if not tests:
        print(f"gtest_parallel: {binary} lists no test", file=sys.stderr)
        return 1
    procs = [(t, subprocess.Popen([binary, f"--gtest_filter={t}"], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)) for t in tests]
    failed = 0
    for name, proc in procs:
        out, _ = proc.communicate()
        ok = proc.returncode == 0 and "[  PASSED  ] 1 test" in out
        print(f"{'PASSED' if ok else 'FAILED'}  {name}")
        if not ok:
            failed += 1
            print(out)
    print(f"gtest_parallel: {len(tests) - failed} of {len(tests)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
