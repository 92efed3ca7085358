#!/usr/bin/env python3
"""The layer map, and the two checks made from it (proxy/README.md, "Layers").

    scripts/check-layers.py [REPO]            # exit 1 and one line per wrong-way include
    scripts/check-layers.py --include-roots OUT [REPO]
                                              # OUT/<layer>/: what <layer> compiles against

The compiler: CMake runs --include-roots at configure time and compiles every target of a
layer's folder with OUT/<layer>/ as its only project include path (no global one). That root
holds links to the folders the layer may reach (its own, those it lists, what they list, and so
on) and nothing else, so an include of anything above the layer or of another filter is "file
not found". The reach is transitive because a header's own includes resolve through the
includer's path: a filter reaches proxy/net through the pools' headers. ctest label `layers`
(tests/layers/) compiles wrong-way probes with the build's own commands and needs them to fail.

This script (target `layer_check`, part of `all`) checks each include against the direct list:
a filter including proxy/net itself, which the compiler lets through, fails here; so does a
leaf header (below) that stops being a leaf. Its messages name the rule. ctest
`layer_check_catches_wrong_way_includes` checks it on trees made to break it.

Layers (proxy/README.md, "Layers"): each folder below may include only the folders it lists
(and itself). Third-party headers (<...>) are not checked. integration/, bench/ and tests/ are
above everything. Known exceptions, each an open issue item, are listed in EXCEPTIONS:
an exception that is no longer needed is an error too, so the list only shrinks.
"""

import os
import re
import shutil
import sys

# folder -> folders it may include. A folder's subfolders belong to it (proxy/http/http2 is
# proxy/http). "filters/*" means: a filter's own folder only, plus what is listed. An entry
# naming a header (ending in .h) allows that one file of a higher folder; such a header must be
# a leaf (it includes no "..." header), so nothing else of that folder comes in with it.
LOWER = {
    "proxy/common": [],
    "proxy/event": ["proxy/common"],
    "proxy/buffer": ["proxy/common", "proxy/event"],
    "proxy/stats": ["proxy/common"],
    "proxy/tls": ["proxy/common", "proxy/event", "proxy/buffer", "proxy/stats"],
    "proxy/net": ["proxy/common", "proxy/event", "proxy/buffer", "proxy/stats", "proxy/tls"],
    "proxy/access_log": ["proxy/common", "proxy/stats"],
    # The filter API names upstream targets and failures: that one leaf header of upstream/.
    "proxy/http": ["proxy/common", "proxy/event", "proxy/buffer", "proxy/stats", "proxy/tls",
                   "proxy/net", "proxy/access_log", "proxy/upstream/upstream_target.h"],
    "proxy/upstream": ["proxy/common", "proxy/event", "proxy/buffer", "proxy/stats", "proxy/tls",
                       "proxy/net", "proxy/http"],
    "proxy/peers": ["proxy/common", "proxy/event", "proxy/stats"],
    "proxy/admin": ["proxy/common", "proxy/event", "proxy/buffer", "proxy/stats", "proxy/net",
                    "proxy/http"],
    # Filters see the filter API, the per-stream info they write for the access log
    # (proxy/access_log/stream_info.h), the pools, the stats and the peer table; never the
    # connection manager, the server or another filter.
    "filters/*": ["proxy/common", "proxy/event", "proxy/buffer", "proxy/stats", "proxy/http",
                  "proxy/access_log", "proxy/upstream", "proxy/peers"],
    # config turns YAML into typed structs: it includes nothing of the data plane.
    "config": ["proxy/common"],
    # The process machinery (workers, listeners, drain counters, readiness probe): every
    # layer of proxy/ and config's typed structs; no filter, no Streams convention.
    "proxy/server": ["proxy/common", "proxy/event", "proxy/buffer", "proxy/stats", "proxy/tls",
                     "proxy/net", "proxy/access_log", "proxy/http", "proxy/upstream",
                     "proxy/peers", "proxy/admin", "config"],
    # The composition root: which filters run, Streams' conventions; builds everything.
    "app": ["*"],
}

# (file, included folder): wrong-way includes allowed for now, each naming the open issue item
# that removes it. Empty: issue #24 removed the last (config building TLS contexts and peer
# tables moved to app/config_check.cc; the router's percent-decoding to proxy/common).
EXCEPTIONS = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = (".h", ".cc", ".c", ".hpp", ".cpp")


def layer_of(path):
    """The LOWER key a repository path belongs to, or None (not checked)."""
    parts = path.split("/")
    if parts[0] == "filters" and len(parts) > 2:
        return "filters/" + parts[1]
    if parts[0] in ("config", "app"):
        return parts[0]
    if parts[0] == "proxy" and len(parts) > 2:
        return "proxy/" + parts[1]
    return None


def allowed(layer, target_layer, included):
    if target_layer is None or target_layer == layer:
        return True
    rules = LOWER.get("filters/*" if layer.startswith("filters/") else layer)
    if rules is None:
        return False  # a folder the map does not know: add it to LOWER
    return "*" in rules or target_layer in rules or included in rules


def leaf_headers():
    """The single headers LOWER allows across a layer line."""
    return sorted({r for rules in LOWER.values() for r in rules if r.endswith(".h")})


def check(repo):
    errors, seen, checked = [], set(), 0
    for top in ("proxy", "filters", "config", "app"):
        for root, _, files in os.walk(os.path.join(repo, top)):
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.relpath(os.path.join(root, name), repo)
                layer = layer_of(path)
                if layer is None:
                    continue
                if layer not in LOWER and not layer.startswith("filters/"):
                    errors.append(f"{path}: folder {layer} has no layer in scripts/check-layers.py")
                    continue
                checked += 1
                with open(os.path.join(repo, path), encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for included in INCLUDE.findall(text):
                    target = layer_of(included)
                    if allowed(layer, target, included):
                        continue
                    if (path, target) in EXCEPTIONS:
                        seen.add((path, target))
                        continue
                    errors.append(f"{path}: includes {included}: {layer} may not include "
                                  f"{target} (a layer above it, or another filter)")
    for header in leaf_headers():
        full = os.path.join(repo, header)
        if not os.path.exists(full):
            errors.append(f"{header}: allowed in LOWER as a leaf header but missing")
            continue
        with open(full, encoding="utf-8", errors="replace") as f:
            for included in INCLUDE.findall(f.read()):
                errors.append(f"{header}: includes {included}: a leaf header allowed across a "
                              "layer line may include no project header")
    for path, target in sorted(EXCEPTIONS - seen):
        errors.append(f"{path}: no longer includes {target}: remove the exception from "
                      "scripts/check-layers.py")
    if checked == 0:
        errors.append(f"{repo}: no source file found under proxy/, filters/, config/ or app/")
    return errors, checked


ALL_LAYERED = ["proxy", "filters", "config", "app"]


def layers(repo):
    """Every layer: the LOWER keys, with "filters/*" as one layer per folder below filters/."""
    names = [k for k in LOWER if k != "filters/*"]
    filters = os.path.join(repo, "filters")
    if os.path.isdir(filters):
        names += sorted("filters/" + d for d in os.listdir(filters)
                        if os.path.isdir(os.path.join(filters, d)))
    return names


def rules_of(layer):
    return LOWER["filters/*" if layer.startswith("filters/") else layer]


def reach(layer):
    """What `layer` compiles against: its own folder and every folder or leaf header its list
    reaches, transitively; a header is dropped when its folder is reached whole."""
    seen, todo = {layer}, [layer]
    while todo:
        for rule in rules_of(todo.pop()):
            names = ALL_LAYERED if rule == "*" else [rule]
            for name in names:
                if name in seen:
                    continue
                seen.add(name)
                if name in LOWER:
                    todo.append(name)
    folders = {n for n in seen if not n.endswith(".h")}
    return sorted(n for n in seen
                  if not any(n != f and n.startswith(f + "/") for f in folders))


def write_include_roots(repo, out):
    """OUT/<layer>/<path> -> REPO/<path> for each path `layer` reaches. Rewritten only when the
    map or the folders change, so a configure run leaves the links (and the build) alone."""
    wanted = {layer: reach(layer) for layer in layers(repo)}
    manifest = "".join(f"{layer}: {' '.join(paths)}\n" for layer, paths in sorted(wanted.items()))
    manifest = f"repo: {repo}\n" + manifest
    stamp = os.path.join(out, "layers.txt")
    if os.path.exists(stamp):
        with open(stamp) as f:
            if f.read() == manifest:
                return
    if os.path.isdir(out):
        shutil.rmtree(out)  # unlinks the links, never what they point to
    for layer, paths in wanted.items():
        for path in paths:
            link = os.path.join(out, layer, path)
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.symlink(os.path.join(repo, path), link)
    with open(stamp, "w") as f:
        f.write(manifest)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--include-roots":
        if len(sys.argv) < 3:
            print("usage: check-layers.py --include-roots OUT [REPO]", file=sys.stderr)
            return 2
        repo = os.path.abspath(sys.argv[3] if len(sys.argv) > 3 else
                               os.path.join(os.path.dirname(__file__), ".."))
        write_include_roots(repo, os.path.abspath(sys.argv[2]))
        return 0
    repo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    errors, checked = check(repo)
    for e in errors:
        print("check-layers: " + e, file=sys.stderr)
    if errors:
        print(f"check-layers: {len(errors)} wrong-way include(s) in {checked} files",
              file=sys.stderr)
        return 1
    print(f"check-layers: {checked} files, every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
