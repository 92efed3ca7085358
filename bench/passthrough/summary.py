"""The pass-through bench's scenarios (arms and workloads of each family) and its report: the
medians of each arm and workload across rounds, and the Markdown tables of bench/README.md."""
from benchlib.tables import fmt, med
from h2bench import H2_ARMS, H2_WORKLOADS

# floor: bench/floor's epoll relay that parses nothing (issue #23), the cost every proxy is a
# multiple of; plain HTTP/1.1 workloads only.
ARM_ORDER = ["direct", "floor", "haproxy", "nginx", "nghttpx", "ferry"]
WORKLOADS = {
    "get": "GET / (64-byte response)",
    "post1k": "POST /post with a 1 KiB body (64-byte response)",
}
# HTTP/1.1 over TLS on the client side (the proxy terminates TLS; the origin stays plain HTTP).
# Run against separate TLS-terminating instances of the proxies, so the plain arms' figures
# (CPU, peak RSS) are those of proxies without a TLS context, as before.
TLS_WORKLOADS = {
    "tls-ka": "GET / over TLS, keep-alive (handshakes only at connect)",
    "tls-hs": "GET / over TLS with `Connection: close`: one TLS handshake per request",
}
TLS_ARMS = ["haproxy", "nginx", "ferry"]
# The floor each workload is divided by: its own floor arm where the relay carries it (plain
# HTTP/1.1 and h2c), else the cleartext floor of the same request in the same round (a byte
# relay terminates no TLS, so "÷ floor" on a TLS row includes the TLS work).
FLOOR_OF = {"get": "get", "post1k": "post1k", "tls-ka": "get", "tls-hs": "get",
            "h2c": "h2c", "h2c-post1k": "h2c-post1k", "h2-tls": "h2c"}


def summarize(runs, arms, workloads):
    """Medians per (workload, arm) plus paired per-round ratios vs haproxy and direct."""
    summary = {}
    for wl in workloads:
        summary[wl] = {}
        by_round = {}
        for r in runs:
            if r["workload"] == wl:
                by_round.setdefault(r["round"], {})[r["arm"]] = r
        for arm in arms:
            rs = [r for r in runs if r["workload"] == wl and r["arm"] == arm]
            if not rs:
                continue
            s = {
                "rounds": len(rs),
                "rps": med([r["rps"] for r in rs]),
                "p50_ms": med([r["p50_ms"] for r in rs]),
                "p99_ms": med([r["p99_ms"] for r in rs]),
                "cpu_us_per_req": med([r["cpu_us_per_req"] for r in rs]),
                "cpu_us_per_req_min": min((r["cpu_us_per_req"] for r in rs
                                           if r["cpu_us_per_req"] is not None), default=None),
                "cpu_us_per_req_max": max((r["cpu_us_per_req"] for r in rs
                                           if r["cpu_us_per_req"] is not None), default=None),
                "peak_rss_mib": (max(r["proxy_rss_kib"] for r in rs) / 1024
                                 if rs[0]["proxy_rss_kib"] is not None else None),
                "origin_cpu_us_per_req": med([r["origin_cpu_us_per_req"] for r in rs]),
                "wrk_cpu_us_per_req": med([r["wrk_cpu_us_per_req"] for r in rs]),
                "origin_new_conns": med([r["origin_new_conns"] for r in rs]),
                "errors": sum(r["errors"] for r in rs),
                "foreign_cores": med([r["foreign_cores"] for r in rs]),
            }
            # Paired ratios: same round, so the same machine weather; median over rounds.
            floors = {r["round"]: r for r in runs
                      if r["arm"] == "floor" and r["workload"] == FLOOR_OF.get(wl, wl)}
            vals = [by_round[rnd][arm]["cpu_us_per_req"] / f["cpu_us_per_req"]
                    for rnd, f in floors.items()
                    if arm in by_round.get(rnd, {}) and f["cpu_us_per_req"]
                    and by_round[rnd][arm]["cpu_us_per_req"] is not None]
            s["cpu_us_per_req_vs_floor"] = med(vals)
            for base in ("haproxy", "direct", "floor"):
                for key in ("rps", "p99_ms", "cpu_us_per_req"):
                    vals = []
                    if base == "floor" and key == "cpu_us_per_req":
                        continue  # above: the workload's floor (FLOOR_OF)
                    for rnd, arms_in_round in by_round.items():
                        a, b = arms_in_round.get(arm), arms_in_round.get(base)
                        if a and b and a[key] is not None and b[key]:
                            vals.append(a[key] / b[key])
                    s[f"{key}_vs_{base}"] = med(vals)
            if arm not in ("direct", "floor"):
                # The arm ÷ the best (lowest CPU/req) of the other proxies in the same round.
                vals = []
                for arms_in_round in by_round.values():
                    a = arms_in_round.get(arm)
                    peers = [r["cpu_us_per_req"] for p, r in arms_in_round.items()
                             if p not in (arm, "direct", "floor") and r["cpu_us_per_req"]]
                    if a and a["cpu_us_per_req"] is not None and peers:
                        vals.append(a["cpu_us_per_req"] / min(peers))
                s["cpu_us_per_req_vs_best_peer"] = med(vals)
            summary[wl][arm] = s
    return summary


def render_markdown(meta, summary, arms):
    lines = []
    lines.append(f"## Pass-through results — {meta['date']}")
    lines.append("")
    lines.append(
        f"Machine: {meta['cores']} cores ({meta['cpu_model']}), kernel {meta['kernel']}; "
        f"wrk 1 thread, {meta['connections']} keep-alive connections, "
        f"{meta['duration_s']} s per run, {meta['rounds']} interleaved rounds "
        f"(median shown); load average {meta['loadavg_start']} → {meta['loadavg_end']}.")
    if meta.get("ferry_note"):
        lines.append("")
        lines.append(f"**ferry:** {meta['ferry_note']}")
    for wl, desc in WORKLOADS.items():
        if wl not in summary:
            continue
        lines.append("")
        lines.append(f"### {wl}: {desc}")
        lines.append("")
        lines.append("| arm | req/s | p50 ms | p99 ms | proxy CPU µs/req (min–max) | peak RSS MiB "
                     "| CPU/req ÷ HAProxy | CPU/req ÷ floor | CPU/req ÷ best other "
                     "| req/s ÷ HAProxy | req/s ÷ direct | p99 ÷ direct | origin conns/run "
                     "| errors |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for arm in arms:
            s = summary[wl].get(arm)
            if not s:
                continue
            name, cpu = arm_cells(arm, s)
            lines.append(
                f"| {name} | {s['rps']:,.0f} | {s['p50_ms']:.2f} | {s['p99_ms']:.2f} | {cpu} "
                f"| {fmt(s['peak_rss_mib'], '.1f')} | {fmt(s['cpu_us_per_req_vs_haproxy'], '.2f')} "
                f"| {fmt(s.get('cpu_us_per_req_vs_floor'), '.2f')} "
                f"| {fmt(s.get('cpu_us_per_req_vs_best_peer'), '.2f')} "
                f"| {fmt(s['rps_vs_haproxy'], '.2f')} | {fmt(s['rps_vs_direct'], '.2f')} "
                f"| {fmt(s['p99_ms_vs_direct'], '.2f')} | {s['origin_new_conns']:.0f} "
                f"| {s['errors']} |")
        d = summary[wl].get("direct")
        fc = foreign_cores(summary[wl])
        if d:
            lines.append("")
            lines.append(
                f"Load generator: wrk spent {d['wrk_cpu_us_per_req']:.1f} µs CPU/req on the "
                f"direct arm (its own ceiling ≈ {1e6 / d['wrk_cpu_us_per_req']:,.0f} req/s on "
                f"one core); origin {d['origin_cpu_us_per_req']:.1f} µs/req. "
                f"Foreign CPU during runs (other jobs on the box): median {fc:.2f} cores.")
    lines.extend(render_tls_markdown(meta, summary, arms))
    lines.extend(render_h2_markdown(meta, summary))
    for name, why in meta.get("arm_failures", {}).items():
        lines.append("")
        lines.append(f"**{name} did not start:** `{why[:600]}`")
    head = []
    for wl in summary:
        if wl in TLS_WORKLOADS or wl in H2_WORKLOADS:
            continue
        f, h = summary[wl].get("ferry"), summary[wl].get("haproxy")
        if f and h and f.get("cpu_us_per_req_vs_haproxy") is not None:
            floor = f.get("cpu_us_per_req_vs_floor")
            best = f.get("cpu_us_per_req_vs_best_peer")
            head.append(f"{wl} {f['cpu_us_per_req_vs_haproxy']:.2f}"
                        + (f" (÷ best other {best:.2f})" if best is not None else "")
                        + (f" (÷ floor {floor:.2f})" if floor is not None else ""))
    lines.append("")
    if head:
        lines.append("**Headline — ferry CPU µs/req ÷ HAProxy (goal < 1.0): "
                     + ", ".join(head) + "**")
    elif not any(wl in summary for wl in WORKLOADS):
        pass  # --tls only / --h2 only: no plain workloads ran
    else:
        lines.append("**Headline — ferry CPU µs/req ÷ HAProxy: not measured (no ferry arm).**")
    lines.append("")
    lines.append("Versions: " + "; ".join(f"{k}: {v}" for k, v in meta["versions"].items()))
    return "\n".join(lines) + "\n"


def arm_cells(arm, s):
    """The arm's name (ferry in bold) and its "CPU µs/req (min–max)" cell, for both tables."""
    cpu = (f"{s['cpu_us_per_req']:.1f} ({s['cpu_us_per_req_min']:.1f}–"
           f"{s['cpu_us_per_req_max']:.1f})" if s["cpu_us_per_req"] is not None else "–")
    return (f"**{arm}**" if arm == "ferry" else arm), cpu


def peer_table(arms, rows, mark_errors=False):
    """The TLS and HTTP/2 scenarios' table (markdown lines): one row per arm of `arms` that ran,
    with CPU per request against HAProxy and against the best other peer. `mark_errors`: a row
    whose run had errors says it is invalid."""
    lines = ["| arm | req/s | p50 ms | p99 ms | proxy CPU µs/req (min–max) | peak RSS MiB "
             "| CPU/req ÷ HAProxy | CPU/req ÷ floor | CPU/req ÷ best other | origin conns/run "
             "| errors |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for arm in arms:
        s = rows.get(arm)
        if not s:
            continue
        name, cpu = arm_cells(arm, s)
        err = f"**{s['errors']} (row invalid)**" if mark_errors and s["errors"] else s["errors"]
        lines.append(
            f"| {name} | {s['rps']:,.0f} | {s['p50_ms']:.2f} | {s['p99_ms']:.2f} | {cpu} "
            f"| {fmt(s['peak_rss_mib'], '.1f')} | {fmt(s['cpu_us_per_req_vs_haproxy'], '.2f')} "
            f"| {fmt(s.get('cpu_us_per_req_vs_floor'), '.2f')} "
            f"| {fmt(s.get('cpu_us_per_req_vs_best_peer'), '.2f')} "
            f"| {s['origin_new_conns']:.0f} | {err} |")
    return lines


def ferry_vs_best_peer(summary, workloads):
    """["<workload> <ferry CPU/req ÷ best peer> (÷ floor <x>)", ...] for the headline lines."""
    head = []
    for wl in workloads:
        f = summary[wl].get("ferry")
        if f and f.get("cpu_us_per_req_vs_best_peer") is not None:
            floor = f.get("cpu_us_per_req_vs_floor")
            head.append(f"{wl} {f['cpu_us_per_req_vs_best_peer']:.2f}"
                        + (f" (÷ floor {floor:.2f})" if floor is not None else ""))
    return head


def workload_table(wl, title, arms, rows, mark_errors=False):
    """A workload's heading and its table of every arm (peer_table)."""
    return ["", f"#### {wl}: {title}", ""] + peer_table(arms, rows, mark_errors=mark_errors)


def foreign_cores(rows):
    """Median of the cores that other jobs on the box used during a workload's runs."""
    return med([s["foreign_cores"] for s in rows.values()])


def render_h2_markdown(meta, summary):
    wls = [wl for wl in H2_WORKLOADS if wl in summary]
    if not wls:
        return []
    lines = ["", "### HTTP/2 on the client side (origin HTTP/1.1 keep-alive)", "",
             f"h2load (1 thread, {meta['h2_connections']} connections × {meta['h2_streams']} "
             f"concurrent streams, {meta['duration_s']} s per run, no h2load warm-up) against a "
             f"separate h2c instance and h2-over-TLS instance of each proxy (one worker each); "
             f"h2-tls uses the TLS scenarios' certificate and negotiates h2 by ALPN (h2load "
             f"offers only h2). Latency: h2load's per-request log (request sent → response end)."]
    for wl in wls:
        lines.extend(workload_table(wl, H2_WORKLOADS[wl], H2_ARMS, summary[wl], mark_errors=True))
        fc = foreign_cores(summary[wl])
        lg = med([s["wrk_cpu_us_per_req"] for s in summary[wl].values()])
        lines.append("")
        lines.append(f"h2load's own CPU: median {fmt(lg, '.1f')} µs/req. Foreign CPU during runs "
                     f"(other jobs on the box): median {fmt(fc, '.2f')} cores.")
    head = ferry_vs_best_peer(summary, wls)
    lines.append("")
    lines.append("**HTTP/2 headline — ferry CPU µs/req ÷ best of HAProxy/nginx/nghttpx/h2o "
                 "(goal ≤ 1.0): " + (", ".join(head) if head else "not measured (no ferry "
                                     "HTTP/2 arm)") + "**")
    return lines


def render_tls_markdown(meta, summary, arms):
    tls_wls = [wl for wl in TLS_WORKLOADS if wl in summary]
    if not tls_wls:
        return []
    lines = ["", "### HTTP/1.1 over TLS (client side; origin plain HTTP)", "",
             f"Each proxy terminates TLS with the same self-signed ECDSA P-256 certificate "
             f"(openssl CLI), TLS 1.2 minimum, TLS 1.3 negotiated (wrk's OpenSSL default), session "
             f"tickets on in all three (their default; no server-side session cache in nginx or "
             f"ferry; HAProxy keeps its default one). Separate TLS-only instances of each proxy "
             f"(one worker each), so the plain-HTTP arms' figures are unaffected."]
    for wl in tls_wls:
        lines.extend(workload_table(wl, TLS_WORKLOADS[wl], TLS_ARMS, summary[wl]))
        fc = foreign_cores(summary[wl])
        lines.append("")
        lines.append(f"Foreign CPU during runs (other jobs on the box): median {fc:.2f} cores.")
        res = meta.get("ferry_tls_handshakes", {}).get(wl)
        if res:
            lines.append(f"ferry's TLS handshakes in these runs: {res}.")
        hp = meta.get("haproxy_reuse_pct", {}).get(wl)
        if hp is not None:
            lines.append(f"HAProxy's SslFrontendSessionReuse_pct at the end of its runs "
                         f"(median): {hp:.0f} %.")
    head = ferry_vs_best_peer(summary, tls_wls)
    lines.append("")
    if head:
        lines.append("**TLS headline — ferry CPU µs/req ÷ best of HAProxy/nginx (goal ≤ 1.0): "
                     + ", ".join(head) + "**")
    return lines
