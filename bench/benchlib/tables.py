"""What a bench prints and leaves behind: log lines, medians, table cells, results files."""
import json
import os
import statistics
import sys
import time


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(v, spec):
    return "–" if v is None else format(v, spec)


def write_results(out_dir, name, md, payload, indent=2):
    """Prints the Markdown table and writes OUT/<name>.md and OUT/<name>.json (`payload`): what
    every bench leaves behind, and what bench/report.py reads."""
    print(md)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, f"{name}.md"), "w") as f:
        f.write(md)
    with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
        json.dump(payload, f, indent=indent)
    print(f"wrote {out_dir}/{name}.md and {name}.json", file=sys.stderr)
