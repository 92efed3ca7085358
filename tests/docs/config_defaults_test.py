#!/usr/bin/python3
"""The defaults in docs/configuration.md against the parser's: starts the built ferry with only
instance_name and free ports, reads admin GET /config (the effective config under its YAML key
paths) and compares each value with the first code span of the key's "default" cell. Keys whose
value is null or empty there (optional files and sections: none by default), and the ports
this test sets, are not compared. /config leaves out timeouts.drain_delay and
local_instance.readiness; those are not compared either.

Usage: config_defaults_test.py FERRY [REPO]"""
import json
import os
import re
import sys

import doclib

DOC = "docs/configuration.md"
SET_BY_TEST = {"instance_name", "listener.port", "admin.port"}
UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def flatten(node, prefix=""):
    out = {}
    for key, value in node.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict) and value and path != "forwarding.peers":
            out.update(flatten(value, path))
        else:
            out[path] = value
    return out


def millis(text):
    m = re.fullmatch(r"(\d+)(ms|s|m|h|d)?", text)
    return None if not m else int(m.group(1)) * UNITS[m.group(2) or "ms"]


def same(value, written):
    written = written.strip().strip('"')
    if isinstance(value, bool):
        return written == ("true" if value else "false")
    if isinstance(value, int):
        return written == str(value)
    if isinstance(value, list):
        items = [i.strip() for i in written.strip("[]").split(",") if i.strip()]
        return items == value
    if isinstance(value, str) and millis(value) is not None and millis(written) is not None:
        return millis(value) == millis(written)
    return written == value


def doc_defaults(text):
    """key -> the first code span of its row's second cell ('' when the cell has none)."""
    defaults = {}
    for line in doclib.without_code_blocks(text).split("\n"):
        m = re.match(r"^\|\s*`([^`]+)`\s*\|([^|]*)\|", line)
        if m:
            span = re.search(r"`([^`]*)`", m.group(2))
            defaults[m.group(1)] = span.group(1) if span else ""
    return defaults


def main():
    if len(sys.argv) < 2:
        doclib.fail(["usage: config_defaults_test.py FERRY [REPO]"])
    ferry = sys.argv[1]
    doclib.REPO = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else doclib.REPO
    body = doclib.admin_get(ferry, "instance_name: docs-defaults\n"
                                   "listener: {address: 127.0.0.1, port: 0}\n"
                                   "admin: {address: 127.0.0.1, port: 0}\n", "/config")
    effective = flatten(json.loads(body)["config"])
    doclib.require("keys in ferry's /config", effective, 40)
    documented = doc_defaults(doclib.read(DOC))
    problems, compared = [], 0
    for path, value in sorted(effective.items()):
        if path in SET_BY_TEST or value is None or value == {} or value == []:
            continue
        if path not in documented:
            problems.append(f"/config has {path} = {value!r}, which has no row in {DOC}")
            continue
        compared += 1
        if not same(value, documented[path]):
            problems.append(f"{DOC}: {path} default `{documented[path]}`, but ferry's is "
                            f"{json.dumps(value)}")
    doclib.require(f"defaults compared with {DOC}", range(compared), 35)
    if problems:
        doclib.fail(problems)
    print(f"ok: {compared} defaults in {DOC} are ferry's")


if __name__ == "__main__":
    main()
