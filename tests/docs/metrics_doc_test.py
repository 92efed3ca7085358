#!/usr/bin/python3
"""docs/metrics.md against what ferry exports: starts the built ferry (with the access log, the
readiness probe and fault injection configured, so their families exist too), reads GET /stats, and fails when
an exported family is missing from the page, when the page lists a family ferry does not
export, when a `ferry_*` name in the README or any docs/ page is not exported, or when a
family named in the source (proxy/, filters/) is not exported by this test's ferry (then the
config below must be taught to make it appear).

Usage: metrics_doc_test.py FERRY [REPO]"""
import glob
import os
import re
import sys
import tempfile

import doclib

DOC = "docs/metrics.md"
NAME = r"(?:ferry|process)_[a-z0-9_]+"


def exported_families(ferry):
    with tempfile.TemporaryDirectory() as tmp:
        text = doclib.admin_get(ferry, f"""instance_name: docs-metrics
listener: {{address: 127.0.0.1, port: 0}}
admin: {{address: 127.0.0.1, port: 0}}
local_instance:
  address: 127.0.0.1
  port: 9
  readiness: {{path: /readyz, interval: 1h, timeout: 100ms}}
workers: 1
limits: {{max_connections: 64}}
access_log: {{path: {os.path.join(tmp, 'access.log')}, format: json}}
fault: {{enabled: true}}
""", "/stats")
    families = {}
    for line in text.split("\n"):
        m = re.match(rf"^# TYPE ({NAME}) (\w+)$", line)
        if m:
            families[m.group(1)] = m.group(2)
    return families


def source_families(repo):
    names = {}
    for path in sorted(glob.glob(os.path.join(repo, "proxy", "**", "*.cc"), recursive=True)
                       + glob.glob(os.path.join(repo, "proxy", "**", "*.h"), recursive=True)
                       + glob.glob(os.path.join(repo, "filters", "**", "*.cc"), recursive=True)
                       + glob.glob(os.path.join(repo, "filters", "**", "*.h"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            for name in re.findall(rf"\"({NAME})\"", f.read()):
                names.setdefault(name, os.path.relpath(path, repo))
    return names


def mentioned(text):
    """Metric names in code spans (`ferry_x_total`, `ferry_x_total{label="v"}`)."""
    return {m.group(1) for span in doclib.backticked(text)
            for m in [re.fullmatch(rf"({NAME})(?:\{{.*\}})?", span)] if m}


def main():
    if len(sys.argv) < 2:
        doclib.fail(["usage: metrics_doc_test.py FERRY [REPO]"])
    ferry = sys.argv[1]
    repo = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else doclib.REPO
    doclib.REPO = repo
    exported = exported_families(ferry)
    doclib.require("metric families in ferry's /stats", exported, 50)
    # A histogram's series (_bucket, _sum, _count) name the family too.
    series = set(exported) | {f"{h}{s}" for h, k in exported.items() if k == "histogram"
                              for s in ("_bucket", "_sum", "_count")}

    problems = []
    rows = [r for r in doclib.table_first_cells(doclib.read(DOC)) if re.fullmatch(NAME, r)]
    doclib.require(f"metric rows in {DOC}", rows, 50)
    for name in sorted(set(exported) - set(rows)):
        problems.append(f"{name} ({exported[name]}) is exported but has no row in {DOC}")
    for name in sorted(set(rows) - set(exported)):
        problems.append(f"{DOC} lists {name}, which ferry does not export")

    pages = ["README.md"] + sorted(os.path.relpath(p, repo)
                                   for p in glob.glob(os.path.join(repo, "docs", "*.md")))
    checked = 0
    for page in pages:
        for name in sorted(mentioned(doclib.read(page))):
            checked += 1
            if name not in series:
                problems.append(f"{page} names {name}, which ferry does not export")
    doclib.require("metric names mentioned in the README and docs/", range(checked), 50)

    declared = source_families(repo)
    doclib.require("metric names in proxy/ and filters/ sources", declared, 50)
    for name, where in sorted(declared.items()):
        if name not in series:
            problems.append(f"{where} names the family {name}, which this test's ferry did not "
                            f"export: configure what makes it appear in metrics_doc_test.py")
    if problems:
        doclib.fail(problems)
    print(f"ok: {len(exported)} exported families = {len(rows)} rows of {DOC}; "
          f"{checked} mentions in {len(pages)} pages; {len(declared)} names in the source")


if __name__ == "__main__":
    main()
