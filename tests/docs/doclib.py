"""Helpers shared by the docs checks (tests/docs/*_test.py): reading Markdown the way the
checks need it, and failing loudly. Standard library only."""
import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


def without_code_blocks(text):
    """The text with fenced code blocks blanked (line numbers kept): a link or a table row in an
    example is not one of the page's own."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else line)
    return "\n".join(out)


def table_first_cells(text):
    """The backticked names that open a table row (`| `name` | ...`), in order."""
    names = []
    for line in without_code_blocks(text).split("\n"):
        m = re.match(r"^\|\s*`([^`]+)`", line)
        if m:
            names.append(m.group(1))
    return names


def backticked(text):
    """Every `code span` of the text, as written."""
    return re.findall(r"`([^`\n]+)`", without_code_blocks(text))


def heading_slugs(text):
    """GitHub's anchors for the page's headings: lower case, punctuation dropped (but `-` and
    `_`), spaces to `-`; a repeated heading gets -1, -2..."""
    slugs, seen = set(), {}
    for line in without_code_blocks(text).split("\n"):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))  # a link's text only
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        slugs.add(slug if n == 0 else f"{slug}-{n}")
    return slugs


def links(text):
    """(line number, target) of every inline Markdown link outside code blocks."""
    found = []
    for i, line in enumerate(without_code_blocks(text).split("\n"), 1):
        for m in re.finditer(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line):
            found.append((i, m.group(1)))
    return found


def require(what, items, at_least):
    """Fails when a parse found fewer than `at_least` items: a check that reads nothing must
    not pass."""
    if len(items) < at_least:
        fail([f"found only {len(items)} {what} (expected at least {at_least}): "
              f"a check with nothing to check fails"])


def fail(problems):
    print("FAILED:", file=sys.stderr)
    for p in problems:
        print("  " + p, file=sys.stderr)
    sys.exit(1)


def admin_get(ferry, config_yaml, path):
    """Starts `ferry` with `config_yaml` (its admin on a free port), GETs `path` from the admin
    listener, stops ferry (SIGTERM) and returns the body. Fails when ferry does not print its
    ready line within 20 s or the GET fails."""
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "ferry.yaml")
        with open(config, "w") as f:
            f.write(config_yaml)
        proc = subprocess.Popen([ferry, "--config", config], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            admin = _wait_for_ready(proc)
            try:
                with urllib.request.urlopen(f"http://{admin}{path}", timeout=10) as r:
                    return r.read().decode()
            except OSError as e:
                fail([f"GET http://{admin}{path}: {e}"])
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_for_ready(proc):
    """The admin address from `ferry ready listener=H:P admin=H:P`."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + 20
    seen = ""
    while time.monotonic() < deadline:
        if not sel.select(timeout=deadline - time.monotonic()):
            break
        line = proc.stdout.readline()
        if not line:
            break
        seen += line
        m = re.search(r"^ferry ready .*admin=(\S+)", line)
        if m:
            return m.group(1)
    proc.kill()
    fail([f"ferry did not print 'ferry ready ... admin=...': stdout {seen!r}, "
          f"stderr {proc.stderr.read()!r}"])
