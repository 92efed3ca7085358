#!/usr/bin/python3
"""The README's and docs/'s links: every relative link resolves to a file or folder in the
repository (a clone must stand alone, so none leaves it), and a `#anchor` to a heading of its
page. Also that the README still has the test command between its markers (.ci/run runs it).

Usage: links_test.py [REPO]"""
import glob
import os
import re
import sys

import doclib


def main():
    repo = os.path.realpath(sys.argv[1]) if len(sys.argv) > 1 else doclib.REPO
    doclib.REPO = repo
    pages = ["README.md"] + sorted(os.path.relpath(p, repo)
                                   for p in glob.glob(os.path.join(repo, "docs", "*.md")))
    problems, checked, readme_links = [], 0, 0
    for page in pages:
        text = doclib.read(page)
        for line, target in doclib.links(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            checked += 1
            readme_links += page == "README.md"
            where = f"{page}:{line}: {target}"
            path, _, anchor = target.partition("#")
            resolved = os.path.realpath(os.path.join(repo, os.path.dirname(page), path)) \
                if path else os.path.join(repo, page)
            if target.startswith("/") or not (resolved + os.sep).startswith(repo + os.sep):
                problems.append(f"{where}: leaves the repository (links must be relative, "
                                f"within it)")
                continue
            if not os.path.exists(resolved):
                problems.append(f"{where}: no such file")
                continue
            if anchor:
                if not resolved.endswith(".md") or os.path.isdir(resolved):
                    problems.append(f"{where}: an anchor into something not a Markdown page")
                    continue
                with open(resolved, encoding="utf-8") as f:
                    if anchor not in doclib.heading_slugs(f.read()):
                        problems.append(f"{where}: no heading with the anchor #{anchor}")
    doclib.require("relative links in README.md", range(readme_links), 15)

    readme = doclib.read("README.md")
    m = re.search(r"<!-- test-command -->\n(.*?)<!-- /test-command -->", readme, re.S)
    if not m or "scripts/test.sh" not in m.group(1):
        problems.append("README.md: `scripts/test.sh` is not between the <!-- test-command --> "
                        "markers that .ci/run reads")
    if problems:
        doclib.fail(problems)
    print(f"ok: {checked} relative links in {len(pages)} pages resolve")


if __name__ == "__main__":
    main()
