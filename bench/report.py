#!/usr/bin/python3
"""Summary and plots for bench/run.sh: reads the benches' JSON/Markdown in --out and writes
summary.md (a header: date, machine, git commit; then every bench's Markdown table),
summary.json, cell_appends.png (appends/s per arm of the cell bench) and latency.png
(p50/p99 per arm: pass-through workloads and the forwarded-request arms).

Runs with the Debian python (/usr/bin/python3) and python3-matplotlib; exits 2 with a clear
message when matplotlib is missing. Only benches that run.sh marked "ok" in --status are
included (older results lying in --out are ignored).
"""

import argparse
import datetime
import json
import os
import platform
import socket
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BENCHES = [  # name, markdown file, json file, title
    ("passthrough", "passthrough.md", "passthrough.json", "Pass-through (ferry vs HAProxy, nginx, nghttpx, direct)"),
    ("forwarded", "forwarded.md", "forwarded.json", "Forwarded requests (2-member cell)"),
    ("cell", "cell.md", "cell.json", "Cell bench (pinned / unpinned / unpinned with ferry)"),
    ("sse", "sse.md", "sse.json", "SSE"),
]


def git(*args):
    try:
        return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except Exception:  # noqa: BLE001
        return ""


def machine():
    model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                  if ln.startswith("model name")), platform.machine())
    mem = next((int(ln.split()[1]) for ln in open("/proc/meminfo")
                if ln.startswith("MemTotal:")), 0)
    return (f"{socket.gethostname()}: {os.cpu_count()} cores ({model}), "
            f"{mem / 1048576:.0f} GiB RAM, {platform.system()} {platform.release()}, "
            f"{platform.machine()}")


def read_status(path):
    rows = []
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if len(f) >= 5:
            rows.append({"bench": f[0], "status": f[1], "seconds": int(f[2] or 0),
                         "command": f[3], "note": f[4]})
    return rows


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# ----------------------------------------------------------------------------- plots

def plot_cell(plt, cell, path):
    order = [a for a in ("pinned", "noferry", "ferry") if a in cell["summary"]]
    titles = {"pinned": "PINNED\n(owner via the edge)", "noferry": "UNPINNED,\nno ferry",
              "ferry": "UNPINNED,\nwith ferry"}
    colors = {"pinned": "#4c72b0", "noferry": "#c44e52", "ferry": "#55a868"}
    s = cell["summary"]
    med = [s[a]["appends_per_s_median"] for a in order]
    lo = [s[a]["appends_per_s_median"] - s[a]["appends_per_s_min"] for a in order]
    hi = [s[a]["appends_per_s_max"] - s[a]["appends_per_s_median"] for a in order]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    bars = ax.bar(range(len(order)), med, yerr=[lo, hi], capsize=6,
                  color=[colors[a] for a in order])
    for b, a in zip(bars, order):
        ax.annotate(f"{s[a]['appends_per_s_median']:,.0f}/s\n409s {s[a]['client_409']}, "
                    f"errors {s[a]['errors']}",
                    (b.get_x() + b.get_width() / 2, b.get_height()), xytext=(0, 4),
                    textcoords="offset points", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(order)), [titles[a] for a in order])
    ax.set_ylabel("appends/s (median over rounds; whiskers: min–max)")
    ax.set_ylim(0, max(s[a]["appends_per_s_max"] for a in order) * 1.3)
    m = cell["meta"]
    ratio = cell.get("ratio_ferry_over_pinned")
    ax.set_title(f"Cell bench: {m['members']} instances, edge RTT {m['edge_rtt_ms']:g} ms, "
                 f"{m['connections']} appenders\n"
                 + (f"with ferry ÷ pinned = {ratio:.3f} (goal ≥ 0.97), " if ratio else "")
                 + f"{m['mode']} mode, {m['rounds']} × {m['duration_s']:g} s, {m['date']}",
                 fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def latency_groups(pt, fw):
    """[(title, [(label, p50, p99, p50 range, p99 range, highlight)])]"""
    groups = []
    if pt:
        for wl, title in (("get", "pass-through: GET /"),
                          ("post1k", "pass-through: POST 1 KiB")):
            arms = pt["meta"].get("arms") or list(pt["summary"].get(wl, {}))
            rows = []
            for arm in arms:
                s = pt["summary"].get(wl, {}).get(arm)
                if not s:
                    continue
                rs = [r for r in pt["runs"] if r["workload"] == wl and r["arm"] == arm]
                rows.append((arm, s["p50_ms"], s["p99_ms"],
                             (min(r["p50_ms"] for r in rs), max(r["p50_ms"] for r in rs)),
                             (min(r["p99_ms"] for r in rs), max(r["p99_ms"] for r in rs)),
                             arm == "ferry"))
            if rows:
                groups.append((title, rows))
    if fw:
        labels = {"direct": "owner\ndirect", "owner-ferry": "owner via\nits ferry",
                  "forwarded": "forwarded"}
        rows = []
        for arm in fw["meta"]["arms"]:
            s = fw["summary"].get(arm)
            if not s:
                continue
            rs = [r for r in fw["runs"] if r["arm"] == arm]
            rows.append((labels.get(arm, arm), s["p50_ms"], s["p99_ms"],
                         (min(r["p50_ms"] for r in rs), max(r["p50_ms"] for r in rs)),
                         (min(r["p99_ms"] for r in rs), max(r["p99_ms"] for r in rs)),
                         arm == "forwarded"))
        if rows:
            groups.append(("forwarded: JSON append [{\"n\":1}]", rows))
    return groups


def plot_latency(plt, pt, fw, path):
    groups = latency_groups(pt, fw)
    if not groups:
        return False
    fig, axes = plt.subplots(1, len(groups), figsize=(5.2 * len(groups), 4.8), dpi=110,
                             squeeze=False)
    for ax, (title, rows) in zip(axes[0], groups):
        x = range(len(rows))
        w = 0.38
        for off, idx, rng_idx, name, color in ((-w / 2, 1, 3, "p50", "#4c72b0"),
                                               (w / 2, 2, 4, "p99", "#dd8452")):
            vals = [r[idx] for r in rows]
            err = [[r[idx] - r[rng_idx][0] for r in rows], [r[rng_idx][1] - r[idx] for r in rows]]
            bars = ax.bar([i + off for i in x], vals, w, yerr=err, capsize=3, label=name,
                          color=color, edgecolor=["black" if r[5] else color for r in rows],
                          linewidth=1.5)
            for b, v, r in zip(bars, vals, rows):
                # Above the whisker, so the number never sits on the error bar.
                ax.annotate(f"{v:.2f}", (b.get_x() + b.get_width() / 2, r[rng_idx][1]),
                            xytext=(0, 2), textcoords="offset points", ha="center",
                            va="bottom", fontsize=7)
        ax.set_yscale("log")
        ax.set_xticks(list(x), [r[0] for r in rows], fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel("latency ms (log scale; own axis per panel)")
        ax.margins(y=0.15)
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    meta = (pt or fw)["meta"]
    fig.suptitle(f"wrk latency per arm (median over rounds; whiskers: min–max over rounds; "
                 f"wrk 1 thread, {meta['connections']} connections, closed loop), "
                 f"{meta['date']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


# ----------------------------------------------------------------------------- main

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    ap.add_argument("--status", help="run.sh's run_status.tsv (default OUT/run_status.tsv)")
    ap.add_argument("--mode", default="?")
    ap.add_argument("--elapsed", type=int, default=None)
    ap.add_argument("--ferry", default="")
    return ap.parse_args()


def import_pyplot():
    """matplotlib.pyplot with the Agg backend, or None (and a message) when it is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        sys.stderr.write(f"report.py: {sys.executable} cannot import matplotlib; the plots need "
                         "it: apt-get install python3-matplotlib\n")
        return None


def run_meta(a, status):
    commit = git("rev-parse", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    now = datetime.datetime.now().astimezone()
    return {
        "date": now.strftime("%Y-%m-%d %H:%M %Z"),
        "machine": machine(),
        "loadavg": " ".join(open("/proc/loadavg").read().split()[:3]),
        "git_commit": commit + (" (+ uncommitted changes)" if dirty else ""),
        "git_subject": git("log", "-1", "--format=%s")[:100],
        "mode": a.mode,
        "elapsed_s": a.elapsed,
        "ferry": a.ferry,
        "benches": status,
    }


def nested_markdown(md):
    """A bench's Markdown with its headings nested under the summary's "##" (its top heading
    becomes "###")."""
    lines = md.splitlines()
    levels = [len(ln) - len(ln.lstrip("#")) for ln in lines if ln.startswith("#")]
    shift = 3 - min(levels) if levels else 0
    return "\n".join("#" * shift + ln if ln.startswith("#") and shift > 0 else ln
                     for ln in lines)


def bench_results(out, ok):
    """(bench -> its JSON without per-run data (SSE's whole), [a "##" section per bench with
    its Markdown]) for the benches that ran ok."""
    data, md_parts = {}, []
    for name, md_file, json_file, title in BENCHES:
        if name not in ok:
            continue
        j = load_json(os.path.join(out, json_file))
        if j is not None:
            data[name] = {k: v for k, v in j.items() if k != "runs"} if name != "sse" else j
        try:
            md = open(os.path.join(out, md_file)).read().strip()
        except OSError:
            md = "(no Markdown report written)"
        md_parts.append(f"## {title}\n\n{nested_markdown(md)}\n")
    return data, md_parts


def header_lines(a, meta, status):
    L = ["# ferry benchmarks — summary", "",
         f"- **Date:** {meta['date']}",
         f"- **Machine:** {meta['machine']} (load average at the end {meta['loadavg']})",
         f"- **Git commit:** `{meta['git_commit']}` — {meta['git_subject']}",
         f"- **Mode:** `bench/run.sh --{a.mode}`"
         + (f", {a.elapsed} s for all benches" if a.elapsed is not None else ""),
         f"- **ferry:** {a.ferry}", "",
         "| bench | status | seconds | note |", "|---|---|---:|---|"]
    for r in status:
        L.append(f"| {r['bench']} | {r['status']} | {r['seconds']} | {r['note'] or '–'} |")
    return L + [""]


def draw_plots(plt, out, data, ok):
    """name -> path of the plots drawn (a plot without data this time is not)."""
    plots = {}
    if "cell" in data:
        p = os.path.join(out, "cell_appends.png")
        plot_cell(plt, data["cell"], p)
        plots["cell_appends"] = p
    pt = load_json(os.path.join(out, "passthrough.json")) if "passthrough" in ok else None
    fw = load_json(os.path.join(out, "forwarded.json")) if "forwarded" in ok else None
    p = os.path.join(out, "latency.png")
    if plot_latency(plt, pt, fw, p):
        plots["latency"] = p
    return plots


def plot_lines(plots):
    if not plots:
        return []
    L = ["Plots: " + ", ".join(f"[{os.path.basename(v)}]({os.path.basename(v)})"
                               for v in plots.values()), ""]
    L += [f"![{k}]({os.path.basename(v)})" for k, v in plots.items()]
    return L + [""]


def remove_stale_plots(out, plots):
    missing = [n for n in ("cell_appends", "latency") if n not in plots]
    for n in missing:  # a PNG from an earlier run would pass for this run's
        try:
            os.remove(os.path.join(out, f"{n}.png"))
        except OSError:
            pass
    if missing:
        print(f"report.py: no data for plot(s) {', '.join(missing)} (bench not run or failed)",
              file=sys.stderr)


def main():
    a = parse_args()
    plt = import_pyplot()
    if plt is None:
        return 2
    status = read_status(a.status or os.path.join(a.out, "run_status.tsv"))
    ok = {r["bench"] for r in status if r["status"] == "ok"}
    meta = run_meta(a, status)
    data, md_parts = bench_results(a.out, ok)
    L = header_lines(a, meta, status)
    plots = draw_plots(plt, a.out, data, ok)
    meta["plots"] = plots
    L += plot_lines(plots)
    summary_md = "\n".join(L) + "\n" + "\n".join(md_parts)
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(summary_md)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump({"meta": meta, "results": data}, f, indent=1)
    print(f"report.py: wrote {a.out}/summary.md, summary.json"
          + "".join(f", {os.path.basename(v)}" for v in plots.values()), file=sys.stderr)
    remove_stale_plots(a.out, plots)
    return 0


if __name__ == "__main__":
    sys.exit(main())
