#!/usr/bin/python3
"""docs/configuration.md against the config: every key of config/examples/ferry.yaml (the
commented-out optional ones included) is in the page, every key the page's tables list is in
the example, and every key name the parser reads (config/*.cc) is in the example.

Usage: config_keys_test.py [REPO]"""
import glob
import os
import re
import sys

import doclib

EXAMPLE = "config/examples/ferry.yaml"
DOC = "docs/configuration.md"
# Mappings whose keys are data (instance names), not config keys.
DATA_MAPS = {"forwarding.peers"}
KEY = re.compile(r"([a-z][a-z0-9_]*):(?:\s|$)")


def example_keys(text):
    """Flattened key paths of the example, in order. A commented-out line counts as a key when,
    without its `#` and one space, it is a `key:` line at an indentation that fits the document
    (`  # tls:` under `listener:` is listener.tls; `  #   cert_file: x` is listener.tls.cert_file).
    Prose comments start with a capital or have no `word:` at their start, and list items
    (`- x`) are values."""
    paths, stack = [], []  # stack: (indent, path)
    for n, line in enumerate(text.split("\n"), 1):
        commented = re.match(r"^( *)#( +)(.*)$", line)
        if commented:
            indent = len(commented.group(1)) + len(commented.group(2)) - 1
            body = commented.group(3)
        else:
            plain = re.match(r"^( *)(.*)$", line)
            indent, body = len(plain.group(1)), plain.group(2)
        m = KEY.match(body)
        if not m:
            continue
        if commented and stack and indent > stack[-1][0] + 2:
            continue  # a comment continued at a deeper indentation: prose, not a key
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if commented and indent > 0 and not stack:
            continue
        parent = stack[-1][1] if stack else ""
        if parent in DATA_MAPS:
            continue
        path = f"{parent}.{m.group(1)}" if parent else m.group(1)
        if path in paths:
            doclib.fail([f"{EXAMPLE}:{n}: {path} appears twice"])
        paths.append(path)
        stack.append((indent, path))
    return paths


def parser_key_names(repo):
    """Every key name the config parser reads or allows: the third argument of the YamlReader
    read*() calls, the names in checkMap() lists, and node["name"] look-ups."""
    names = {}
    for path in sorted(glob.glob(os.path.join(repo, "config", "*.cc"))):
        with open(path, encoding="utf-8") as f:
            src = f.read()
        rel = os.path.relpath(path, repo)
        found = re.findall(r"reader\.read(?:Uint32|Port|Bool|String|Duration|StringList)\(\s*"
                           r"[^,()]+,\s*[^,()]+,\s*\"([a-z0-9_]+)\"", src)
        for allowed in re.findall(r"checkMap\([^{;]*\{([^}]*)\}", src):
            found += re.findall(r"\"([a-z0-9_]+)\"", allowed)
        found += re.findall(r"\bnode\[\"([a-z0-9_]+)\"\]", src)
        for name in found:
            names.setdefault(name, rel)
    return names


def main():
    repo = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else doclib.REPO
    doclib.REPO = repo
    keys = example_keys(doclib.read(EXAMPLE))
    doclib.require(f"keys in {EXAMPLE}", keys, 40)
    sections = {k for k in keys if any(o.startswith(k + ".") for o in keys)}
    leaves = [k for k in keys if k not in sections]

    doc = doclib.read(DOC)
    rows = doclib.table_first_cells(doc)
    doclib.require(f"table rows naming a key in {DOC}", rows, 40)
    spans = set(doclib.backticked(doc))
    problems = []
    for k in leaves:
        if k not in rows:
            problems.append(f"{EXAMPLE}: key {k} has no row in {DOC}'s tables")
    for k in sorted(sections):
        if k not in spans and k not in rows:
            problems.append(f"{EXAMPLE}: section {k} is not named (`{k}`) in {DOC}")
    for k in rows:
        if k not in keys:
            problems.append(f"{DOC}: a row lists {k}, which {EXAMPLE} does not have")
    if len(rows) != len(set(rows)):
        dup = sorted({r for r in rows if rows.count(r) > 1})
        problems.append(f"{DOC}: keys listed twice: {', '.join(dup)}")

    names = parser_key_names(repo)
    doclib.require("key names read by the parser in config/*.cc", names, 30)
    segments = {seg for k in keys for seg in k.split(".")}
    for name, where in sorted(names.items()):
        if name not in segments:
            problems.append(f"{where} reads the key {name!r}, which no key path in {EXAMPLE} has "
                            f"(add it to the example, commented out if optional, and to {DOC})")
    if problems:
        doclib.fail(problems)
    print(f"ok: {len(keys)} example keys ({len(leaves)} leaves) in {DOC}; "
          f"{len(names)} parser key names in the example")


if __name__ == "__main__":
    main()
