#!/usr/bin/env python3
"""The compiler refuses a wrong-way include (proxy/README.md, "Layers").

    include_roots_test.py BUILD_DIR SOURCE_DIR [unittest args]

Each probe is a one-file source compiled (-fsyntax-only) with the build's own command line for
a real source of a layer, taken from BUILD_DIR/compile_commands.json: the same compiler, flags
and include path as that layer's targets. A probe including a header the layer may not reach
must fail with "file not found" for that header; a probe of the same layer including headers it
may reach must compile, so a wrong-way probe cannot pass by being broken itself. A last case
reads every layered command line: the layer's include root, never the whole tree."""

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unittest

BUILD, REPO = (os.path.abspath(a) for a in sys.argv[1:3])
ROOTS = os.path.join(BUILD, "include_roots")

spec = importlib.util.spec_from_file_location("check_layers",
                                              os.path.join(REPO, "scripts", "check-layers.py"))
check_layers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_layers)

# (layer, header it may not reach): one per kind of wrong way.
WRONG = [
    ("proxy/http", "filters/router/router_filter.h"),       # the data plane including a filter
    ("proxy/http", "proxy/upstream/conn_pool.h"),           # past the pools' one leaf header
    ("proxy/event", "proxy/http/codec.h"),                  # a lower layer including a higher
    ("config", "proxy/peers/peer_table.h"),                 # config including the data plane
    ("filters/owner_forwarding", "filters/router/router_filter.h"),  # another filter
    ("filters/router", "proxy/server/worker.h"),            # a filter including the server
    ("filters/router", "app/server.h"),                     # ... or the composition root
    ("proxy/server", "filters/router/router_filter.h"),     # the server including a filter
    ("proxy/server", "app/server.h"),
]

# layer -> headers it may reach (its own, listed ones, and through them).
RIGHT = {
    "proxy/http": ["proxy/http/filter.h", "proxy/upstream/upstream_target.h",
                   "proxy/net/connection.h"],
    "proxy/event": ["proxy/event/dispatcher.h", "proxy/common/status.h"],
    "config": ["config/ferry_config.h", "proxy/common/status.h"],
    "filters/owner_forwarding": ["filters/owner_forwarding/owner_forwarding_filter.h",
                                 "proxy/http/filter.h", "proxy/peers/peer_table.h"],
    "filters/router": ["filters/router/router_filter.h", "proxy/upstream/conn_pool.h"],
    "proxy/server": ["proxy/server/worker.h", "proxy/admin/admin_server.h",
                     "config/ferry_config.h"],
    "app": ["app/server.h", "filters/router/router_filter.h", "proxy/server/worker.h"],
}


def commands():
    with open(os.path.join(BUILD, "compile_commands.json")) as f:
        return json.load(f)


def layered(entry):
    """The layer of a compile_commands entry's source, or None (tests, benches, third party)."""
    path = os.path.relpath(entry["file"], REPO)
    return None if path.startswith("..") else check_layers.layer_of(path)


def include_dirs(args):
    dirs = []
    for i, a in enumerate(args):
        if a == "-I":
            dirs.append(args[i + 1])
        elif a.startswith("-I"):
            dirs.append(a[2:])
    return [os.path.normpath(d) for d in dirs]


def compile_probe(layer, headers):
    """Compiles a probe including `headers` as the build compiles `layer`'s sources."""
    entry = next((e for e in commands() if layered(e) == layer and e["file"].endswith(".cc")),
                 None)
    assert entry, f"no source of {layer} in compile_commands.json"
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    probe_dir = tempfile.mkdtemp(prefix="ferry-layer-probe-")
    probe = os.path.join(probe_dir, "probe.cc")
    with open(probe, "w") as f:
        f.write("".join(f'#include "{h}"\n' for h in headers))
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-o", "-MT", "-MF"):
            skip = True
        elif a not in ("-c", "-MD", entry["file"]):
            out.append(a)
    try:
        return subprocess.run(out + ["-fsyntax-only", probe], cwd=entry["directory"],
                              capture_output=True, text=True, timeout=120)
    finally:
        os.remove(probe)
        os.rmdir(probe_dir)


class IncludeRootsTest(unittest.TestCase):
    def test_a_wrong_way_include_does_not_compile(self):
        for layer, header in WRONG:
            with self.subTest(layer=layer, header=header):
                # The header is there: only the layer's include path can miss it.
                self.assertTrue(os.path.exists(os.path.join(REPO, header)), header)
                r = compile_probe(layer, [header])
                self.assertNotEqual(r.returncode, 0, f"{layer} compiled #include \"{header}\"")
                self.assertRegex(r.stderr, re.escape(header) +
                                 r"'?:? (No such file or directory|file not found)")

    def test_a_right_way_include_compiles(self):
        for layer, headers in RIGHT.items():
            with self.subTest(layer=layer):
                r = compile_probe(layer, headers)
                self.assertEqual(r.returncode, 0, r.stderr[-3000:])

    def test_every_layered_source_compiles_against_its_layer_root_only(self):
        checked = 0
        for entry in commands():
            layer = layered(entry)
            if layer is None:
                continue
            args = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
            dirs = include_dirs(args)
            self.assertIn(os.path.join(ROOTS, layer), dirs, entry["file"])
            self.assertNotIn(REPO, dirs, entry["file"])
            self.assertEqual([d for d in dirs if d.startswith(ROOTS)],
                             [os.path.join(ROOTS, layer)], entry["file"])
            checked += 1
        self.assertGreater(checked, 100)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:])
