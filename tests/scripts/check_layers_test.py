#!/usr/bin/env python3
"""scripts/check-layers.py (the build's layer check): a wrong-way include fails it, a filter
including another filter fails it, an exception no longer needed fails it, and the real tree
passes. Each case runs the script on a small tree made for it."""

import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(REPO, "scripts", "check-layers.py")


def run(tree):
    return subprocess.run([sys.executable, SCRIPT, tree], capture_output=True, text=True)


class CheckLayersTest(unittest.TestCase):
    def tree(self, files):
        """A temporary repository holding `files` ({path: text}) and a few lawful files, so
        that only what a case adds can fail."""
        d = tempfile.mkdtemp(prefix="ferry-layers-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", d]))
        base = {
            "proxy/http/codec.h": '#include "proxy/buffer/buffer.h"\n',
            "proxy/upstream/upstream_target.h": "#include <string>\n",
        }
        base.update(files)
        for path, text in base.items():
            os.makedirs(os.path.join(d, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(d, path), "w") as f:
                f.write(text)
        return d

    def test_the_real_tree_passes(self):
        r = run(REPO)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("every include points down", r.stdout)

    def test_downward_includes_pass(self):
        r = run(self.tree({"proxy/upstream/pool.cc": '#include "proxy/http/codec.h"\n'}))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_the_filter_api_includes_the_upstream_leaf_header_only(self):
        r = run(self.tree({"proxy/http/filter.h": '#include "proxy/upstream/upstream_target.h"\n'}))
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run(self.tree({"proxy/http/filter.h": '#include "proxy/upstream/conn_pool.h"\n'}))
        self.assertEqual(r.returncode, 1)
        self.assertIn("proxy/http may not include proxy/upstream", r.stderr)

    def test_a_leaf_header_that_includes_a_project_header_fails(self):
        r = run(self.tree({"proxy/upstream/upstream_target.h": '#include "proxy/http/codec.h"\n'}))
        self.assertEqual(r.returncode, 1)
        self.assertIn("proxy/upstream/upstream_target.h: includes proxy/http/codec.h: a leaf", r.stderr)

    def test_a_lower_layer_including_a_higher_one_fails(self):
        r = run(self.tree({"proxy/event/timer.h": '#include "proxy/http/codec.h"\n'}))
        self.assertEqual(r.returncode, 1)
        self.assertIn("proxy/event/timer.h: includes proxy/http/codec.h", r.stderr)

    def test_the_data_plane_including_config_fails(self):
        r = run(self.tree({"proxy/http/x.cc": '#include "config/ferry_config.h"\n'}))
        self.assertEqual(r.returncode, 1)
        self.assertIn("proxy/http may not include config", r.stderr)

    def test_a_filter_including_another_filter_fails(self):
        r = run(self.tree({"filters/owner_forwarding/x.cc": '#include "filters/router/y.h"\n'}))
        self.assertEqual(r.returncode, 1)
        self.assertIn("filters/owner_forwarding may not include filters/router", r.stderr)

    def test_a_filter_including_the_server_fails(self):
        r = run(self.tree({"filters/router/z.cc": '#include "proxy/server/worker.h"\n'}))
        self.assertEqual(r.returncode, 1)
        self.assertIn("may not include proxy/server", r.stderr)
        r = run(self.tree({"filters/router/z.cc": '#include "app/server.h"\n'}))
        self.assertEqual(r.returncode, 1)
        self.assertIn("filters/router may not include app", r.stderr)

    def test_the_process_machinery_including_a_filter_or_the_app_fails(self):
        r = run(self.tree({"proxy/server/worker.cc": '#include "filters/router/router_filter.h"\n'}))
        self.assertEqual(r.returncode, 1)
        self.assertIn("proxy/server may not include filters/router", r.stderr)
        r = run(self.tree({"proxy/server/worker.cc": '#include "app/server.h"\n'}))
        self.assertEqual(r.returncode, 1)
        self.assertIn("proxy/server may not include app", r.stderr)

    def test_the_composition_root_includes_anything(self):
        r = run(self.tree({"app/server.cc": '#include "filters/router/router_filter.h"\n'
                                            '#include "proxy/server/worker.h"\n'}))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_an_exception_no_longer_needed_fails(self):
        # The real map has none left; a copy of the script with one shows the mechanism.
        d = self.tree({"filters/router/live_feed.cc": "// routes are a setting now\n"})
        script = os.path.join(d, "check-layers.py")
        with open(SCRIPT) as f:
            text = f.read()
        self.assertIn("EXCEPTIONS = set()", text)
        with open(script, "w") as f:
            f.write(text.replace("EXCEPTIONS = set()", 'EXCEPTIONS = {("filters/router/live_feed.cc", '
                                 '"filters/owner_forwarding")}'))
        r = subprocess.run([sys.executable, script, d], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("live_feed.cc: no longer includes filters/owner_forwarding: remove the "
                      "exception", r.stderr)

    def test_config_including_the_data_plane_fails(self):
        r = run(self.tree({"config/forwarding_section.cc": '#include "proxy/peers/peer_table.h"\n'}))
        self.assertEqual(r.returncode, 1)
        self.assertIn("config may not include proxy/peers", r.stderr)

    def include_roots(self, tree):
        out = os.path.join(tree, "out")
        r = subprocess.run([sys.executable, SCRIPT, "--include-roots", out, tree],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return lambda layer, path: os.path.exists(os.path.join(out, layer, path))

    def test_an_include_root_holds_what_its_layer_reaches_and_nothing_else(self):
        # The build compiles each layer against its root (tests/layers/ shows the compiler).
        d = self.tree({"proxy/upstream/conn_pool.h": '#include "proxy/http/codec.h"\n',
                       "proxy/tls/client_context.h": "\n",
                       "filters/router/router_filter.h": "\n",
                       "filters/owner_forwarding/owner_routing.h": "\n"})
        sees = self.include_roots(d)
        self.assertTrue(sees("proxy/http", "proxy/http/codec.h"))
        self.assertTrue(sees("proxy/http", "proxy/upstream/upstream_target.h"))
        self.assertFalse(sees("proxy/http", "proxy/upstream/conn_pool.h"))
        self.assertFalse(sees("proxy/http", "filters/router/router_filter.h"))
        self.assertFalse(sees("proxy/event", "proxy/http/codec.h"))
        self.assertFalse(sees("config", "proxy/http/codec.h"))
        # Transitively: a filter reaches the pools, so what the pools' headers may include too
        # (proxy/tls, which no filter lists).
        self.assertTrue(sees("filters/router", "proxy/upstream/conn_pool.h"))
        self.assertTrue(sees("filters/router", "proxy/tls/client_context.h"))
        self.assertTrue(sees("filters/router", "filters/router/router_filter.h"))
        self.assertFalse(sees("filters/router", "filters/owner_forwarding/owner_routing.h"))
        self.assertFalse(sees("filters/owner_forwarding", "filters/router/router_filter.h"))
        self.assertTrue(sees("app", "filters/router/router_filter.h"))

    def test_include_roots_follow_new_files_and_new_filter_folders(self):
        d = self.tree({"filters/router/router_filter.h": "\n"})
        sees = self.include_roots(d)
        self.assertFalse(sees("filters/live_feeds", "filters/live_feeds/feed.h"))
        for path in ("filters/live_feeds/feed.h", "proxy/http/internal_request.h"):
            os.makedirs(os.path.dirname(os.path.join(d, path)), exist_ok=True)
            with open(os.path.join(d, path), "w") as f:
                f.write("\n")
        self.assertTrue(sees("proxy/http", "proxy/http/internal_request.h"))  # no rerun needed
        sees = self.include_roots(d)  # what configuring does when a folder appears
        self.assertTrue(sees("filters/live_feeds", "filters/live_feeds/feed.h"))
        self.assertFalse(sees("filters/router", "filters/live_feeds/feed.h"))

    def test_a_tree_without_sources_fails(self):
        d = tempfile.mkdtemp(prefix="ferry-layers-empty-")
        self.addCleanup(lambda: os.rmdir(d))
        r = run(d)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no source file found", r.stderr)


if __name__ == "__main__":
    unittest.main()
