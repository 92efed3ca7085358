"""The pass-through bench's scenarios (arms and workloads of each family) and its report: the
medians of each arm and workload across rounds, and the Markdown tables of bench/README.md."""
from benchlib.tables import fmt, med
from h2bench import H2_ARMS, H2_WORKLOADS

# floor: bench/floor's epoll relay that parses nothing (issue #23), the cost every proxy is a
# multiple of; plain HTTP/1.1 workloads only.
ARM_ORDER = ["direct", "floor", "haproxy", "nginx", "nghttpx", "ferry"]
# floor-parse (opt-in, --arms): the same relay running llhttp over both directions, the least a
# proxy that frames HTTP/1.1 messages pays; plain HTTP/1.1 only. Relays and the direct
# connection are no one's peer.
PARSE_FLOOR_ARM = "floor-parse"
FLOOR_ARMS = ("floor", PARSE_FLOOR_ARM)
NOT_PEERS = {"direct", *FLOOR_ARMS}
WORKLOADS = {
    "get": "GET / (64-byte response)",
    "post1k": "POST /post with a 1 KiB body (64-byte response)",
    "seq": "GET /, ONE connection, one request at a time; origin, proxy and wrk all on core 0 "
           "(latency: what the hop adds to p50)",
}
# The latency workload: wrk's connection count and the one core everything runs on.
SEQ_WORKLOAD, SEQ_CONNECTIONS, SEQ_CORE = "seq", 1, 0
# HTTP/1.1 over TLS on the client side (the proxy terminates TLS; the origin stays plain HTTP).
# Run against separate TLS-terminating instances of the proxies, so the plain arms' figures
# (CPU, peak RSS) are those of proxies without a TLS context, as before.
TLS_WORKLOADS = {
    "tls-ka": "GET / over TLS, keep-alive (handshakes only at connect)",
    "tls-hs": "GET / over TLS with `Connection: close`: one TLS handshake per request",
}
# ferry-before (--ferry-before): a second ferry binary, e.g. one built before a change, run in the
# same rounds as ferry; the tables then add ferry's CPU/req ÷ ferry-before's.
BEFORE_ARM = "ferry-before"
TLS_ARMS = ["haproxy", "nginx", "ferry", BEFORE_ARM]
# The floor each workload is divided by: its own floor arm where the relay carries it (plain
# HTTP/1.1 and h2c), else the cleartext floor of the same request in the same round (a byte
# relay terminates no TLS, so "÷ floor" on a TLS row includes the TLS work).
FLOOR_OF = {"get": "get", "post1k": "post1k", "tls-ka": "get", "tls-hs": "get",
            "h2c": "h2c", "h2c-post1k": "h2c-post1k", "h2-tls": "h2c"}


def summarize(runs, arms, workloads):
    """Medians per (workload, arm) plus paired per-round ratios vs haproxy and direct."""
    summary = {}
    for wl in workloads:
        by_round = {}
        for r in runs:
            if r["workload"] == wl:
                by_round.setdefault(r["round"], {})[r["arm"]] = r
        floors = {r["round"]: r for r in runs
                  if r["arm"] == "floor" and r["workload"] == FLOOR_OF.get(wl, wl)}
        summary[wl] = {}
        for arm in arms:
            rs = [r for r in runs if r["workload"] == wl and r["arm"] == arm]
            if rs:
                summary[wl][arm] = {**arm_medians(rs), **arm_ratios(arm, by_round, floors)}
    return summary


def arm_medians(rs):
    """One arm's figures in one workload: medians over its runs `rs` (CPU also min and max)."""
    cpu = [r["cpu_us_per_req"] for r in rs if r["cpu_us_per_req"] is not None]
    return {
        "rounds": len(rs),
        "rps": med([r["rps"] for r in rs]),
        "p50_ms": med([r["p50_ms"] for r in rs]),
        "p99_ms": med([r["p99_ms"] for r in rs]),
        "cpu_us_per_req": med([r["cpu_us_per_req"] for r in rs]),
        "sys_us_per_req": med([r.get("sys_us_per_req") for r in rs]),
        "user_us_per_req": med([r["cpu_us_per_req"] - r["sys_us_per_req"] for r in rs
                                if r.get("sys_us_per_req") is not None]),
        "cpu_us_per_req_min": min(cpu, default=None),
        "cpu_us_per_req_max": max(cpu, default=None),
        "peak_rss_mib": (max(r["proxy_rss_kib"] for r in rs) / 1024
                         if rs[0]["proxy_rss_kib"] is not None else None),
        "origin_cpu_us_per_req": med([r["origin_cpu_us_per_req"] for r in rs]),
        "wrk_cpu_us_per_req": med([r["wrk_cpu_us_per_req"] for r in rs]),
        "origin_new_conns": med([r["origin_new_conns"] for r in rs]),
        "errors": sum(r["errors"] for r in rs),
        "foreign_cores": med([r["foreign_cores"] for r in rs]),
    }


def paired_ratio(by_round, arm, base, key):
    """Median over rounds of arm's `key` ÷ base's `key` in the same round (the same machine
    weather); None when no round has both."""
    vals = []
    for arms_in_round in by_round.values():
        a, b = arms_in_round.get(arm), arms_in_round.get(base)
        if a and b and a[key] is not None and b[key]:
            vals.append(a[key] / b[key])
    return med(vals)


def arm_ratios(arm, by_round, floors):
    """An arm's paired ratios: against HAProxy, direct, the floor of its workload (FLOOR_OF),
    the best other proxy in the round, and (ferry) against ferry-before."""
    s = {}
    vals = [by_round[rnd][arm]["cpu_us_per_req"] / f["cpu_us_per_req"]
            for rnd, f in floors.items()
            if arm in by_round.get(rnd, {}) and f["cpu_us_per_req"]
            and by_round[rnd][arm]["cpu_us_per_req"] is not None]
    s["cpu_us_per_req_vs_floor"] = med(vals)
    for base in ("haproxy", "direct", "floor"):
        for key in ("rps", "p99_ms", "cpu_us_per_req"):
            if base == "floor" and key == "cpu_us_per_req":
                continue  # above: the workload's floor (FLOOR_OF)
            s[f"{key}_vs_{base}"] = paired_ratio(by_round, arm, base, key)
    if arm not in NOT_PEERS:
        s["cpu_us_per_req_vs_best_peer"] = vs_best_peer(arm, by_round)
    if arm != "direct":
        s.update(added_p50(arm, by_round))
    if arm == "ferry" and any(BEFORE_ARM in x for x in by_round.values()):
        s["cpu_us_per_req_vs_before"] = paired_ratio(by_round, arm, BEFORE_ARM,
                                                     "cpu_us_per_req")
    return s


def added_p50(arm, by_round):
    """What the arm adds to the request's p50 over the direct connection in the same round
    (median over rounds, µs), and that ÷ the floor relay's added p50 in the same round."""
    added, vs_floor = [], []
    for arms_in_round in by_round.values():
        a, d, f = (arms_in_round.get(x) for x in (arm, "direct", "floor"))
        if a and d:
            mine = (a["p50_ms"] - d["p50_ms"]) * 1000
            added.append(mine)
            floor = (f["p50_ms"] - d["p50_ms"]) * 1000 if f and arm != "floor" else None
            if floor and floor > 0:
                vs_floor.append(mine / floor)
    return {"added_p50_us": med(added), "added_p50_vs_floor": med(vs_floor)}


def vs_best_peer(arm, by_round):
    """The arm's CPU/req ÷ the best (lowest) of the other proxies in the same round, median over
    rounds. ferry-before is no one's peer (it is ferry at another commit), nor is ferry its;
    nor are the relays and the direct connection (NOT_PEERS)."""
    skip = {arm, BEFORE_ARM} | NOT_PEERS | ({"ferry"} if arm == BEFORE_ARM else set())
    vals = []
    for arms_in_round in by_round.values():
        a = arms_in_round.get(arm)
        peers = [r["cpu_us_per_req"] for p, r in arms_in_round.items()
                 if p not in skip and r["cpu_us_per_req"]]
        if a and a["cpu_us_per_req"] is not None and peers:
            vals.append(a["cpu_us_per_req"] / min(peers))
    return med(vals)


def render_markdown(meta, summary, arms):
    lines = [f"## Pass-through results — {meta['date']}", "",
             f"Machine: {meta['cores']} cores ({meta['cpu_model']}), kernel {meta['kernel']}; "
             f"wrk 1 thread, {meta['connections']} keep-alive connections, "
             f"{meta['duration_s']} s per run, {meta['rounds']} interleaved rounds "
             f"(median shown); load average {meta['loadavg_start']} → {meta['loadavg_end']}."]
    for key, label in (("ferry_note", "ferry"), ("ferry_before_note", BEFORE_ARM)):
        if meta.get(key):
            lines.extend(["", f"**{label}:** {meta[key]}"])
    for wl, desc in WORKLOADS.items():
        if wl in summary:
            columns = SEQ_COLUMNS if wl == SEQ_WORKLOAD else PLAIN_COLUMNS
            lines.extend(render_plain_workload(wl, desc, summary[wl], arms, columns))
    lines.extend(render_tls_markdown(meta, summary, arms))
    lines.extend(render_h2_markdown(meta, summary))
    for name, why in meta.get("arm_failures", {}).items():
        lines.extend(["", f"**{name} did not start:** `{why[:600]}`"])
    lines.extend(headline(summary))
    lines.extend(before_headline(summary))
    lines.append("")
    lines.append("Versions: " + "; ".join(f"{k}: {v}" for k, v in meta["versions"].items()))
    return "\n".join(lines) + "\n"


def render_plain_workload(wl, desc, rows, arms, columns):
    """A plain HTTP/1.1 workload's heading, its table of every arm, and the load generator's
    and the box's figures under it."""
    lines = ["", f"### {wl}: {desc}", ""] + arm_table(arms, rows, columns)
    d = rows.get("direct")
    if d:
        fc = foreign_cores(rows)
        lines.append("")
        lines.append(
            f"Load generator: wrk spent {d['wrk_cpu_us_per_req']:.1f} µs CPU/req on the "
            f"direct arm (its own ceiling ≈ {1e6 / d['wrk_cpu_us_per_req']:,.0f} req/s on "
            f"one core); origin {d['origin_cpu_us_per_req']:.1f} µs/req. "
            f"Foreign CPU during runs (other jobs on the box): median {fc:.2f} cores.")
    return lines


def headline(summary):
    """The plain workloads' headline: ferry CPU/req ÷ HAProxy (÷ best other, ÷ floor)."""
    head = []
    for wl in summary:
        if wl in TLS_WORKLOADS or wl in H2_WORKLOADS:
            continue
        if wl == SEQ_WORKLOAD:
            f = summary[wl].get("ferry")
            if f and f.get("added_p50_vs_floor") is not None:
                head.append(f"{wl} added p50 {f['added_p50_us']:.1f} µs, "
                            f"÷ floor's {f['added_p50_vs_floor']:.2f}")
            continue
        f, h = summary[wl].get("ferry"), summary[wl].get("haproxy")
        if f and h and f.get("cpu_us_per_req_vs_haproxy") is not None:
            floor = f.get("cpu_us_per_req_vs_floor")
            best = f.get("cpu_us_per_req_vs_best_peer")
            head.append(f"{wl} {f['cpu_us_per_req_vs_haproxy']:.2f}"
                        + (f" (÷ best other {best:.2f})" if best is not None else "")
                        + (f" (÷ floor {floor:.2f})" if floor is not None else ""))
    if head:
        return ["", "**Headline — ferry CPU µs/req ÷ HAProxy (goal < 1.0): "
                + ", ".join(head) + "**"]
    if not any(wl in summary for wl in WORKLOADS):
        return [""]  # --tls only / --h2 only: no plain workloads ran
    return ["", "**Headline — ferry CPU µs/req ÷ HAProxy: not measured (no ferry arm).**"]


def before_headline(summary):
    """With --ferry-before: ferry's CPU/req ÷ ferry-before's in every workload both ran."""
    head = [f"{wl} {rows['ferry']['cpu_us_per_req_vs_before']:.2f}"
            for wl, rows in summary.items()
            if rows.get("ferry", {}).get("cpu_us_per_req_vs_before") is not None]
    if not head:
        return []
    return ["", f"**Before/after — ferry CPU µs/req ÷ {BEFORE_ARM} (paired per round, median; "
            "< 1.0: ferry is cheaper): " + ", ".join(head) + "**"]


def arm_cells(arm, s):
    """The arm's name (ferry in bold) and its "CPU µs/req (min–max)" cell, for both tables."""
    cpu = (f"{s['cpu_us_per_req']:.1f} ({s['cpu_us_per_req_min']:.1f}–"
           f"{s['cpu_us_per_req_max']:.1f})" if s["cpu_us_per_req"] is not None else "–")
    return (f"**{arm}**" if arm == "ferry" else arm), cpu


def user_kernel(s):
    """"user / kernel" µs per request (medians over rounds; they need not add up to the CPU
    column's median exactly)."""
    if s.get("sys_us_per_req") is None:
        return "–"
    return f"{s['user_us_per_req']:.1f} / {s['sys_us_per_req']:.1f}"


def ratio(key):
    return lambda s: fmt(s.get(key), ".2f")


# (heading, cell of an arm's summary) for the tables; "÷ before" only where ferry-before ran.
HEAD_COLUMNS = [
    ("req/s", lambda s: f"{s['rps']:,.0f}"),
    ("p50 ms", lambda s: f"{s['p50_ms']:.2f}"),
    ("p99 ms", lambda s: f"{s['p99_ms']:.2f}"),
    ("proxy CPU µs/req (min–max)", None),  # arm_cells
    ("of it user / kernel µs", lambda s: user_kernel(s)),
    ("peak RSS MiB", lambda s: fmt(s["peak_rss_mib"], ".1f")),
    ("CPU/req ÷ HAProxy", ratio("cpu_us_per_req_vs_haproxy")),
    ("CPU/req ÷ floor", ratio("cpu_us_per_req_vs_floor")),
    ("CPU/req ÷ best other", ratio("cpu_us_per_req_vs_best_peer")),
]
BEFORE_COLUMN = ("CPU/req ÷ before", ratio("cpu_us_per_req_vs_before"))
PLAIN_COLUMNS = HEAD_COLUMNS + [
    ("req/s ÷ HAProxy", ratio("rps_vs_haproxy")),
    ("req/s ÷ direct", ratio("rps_vs_direct")),
    ("p99 ÷ direct", ratio("p99_ms_vs_direct")),
]
# The latency workload's table: p50 in µs and what each arm adds to the direct connection's.
SEQ_COLUMNS = [
    ("req/s", lambda s: f"{s['rps']:,.0f}"),
    ("p50 µs", lambda s: f"{s['p50_ms'] * 1000:.1f}"),
    ("p99 µs", lambda s: f"{s['p99_ms'] * 1000:.1f}"),
    ("added p50 µs", lambda s: fmt(s.get("added_p50_us"), ".1f")),
    ("added p50 ÷ floor's", ratio("added_p50_vs_floor")),
    ("proxy CPU µs/req (min–max)", None),  # arm_cells
    ("of it user / kernel µs", lambda s: user_kernel(s)),
    ("CPU/req ÷ floor", ratio("cpu_us_per_req_vs_floor")),
    ("CPU/req ÷ best other", ratio("cpu_us_per_req_vs_best_peer")),
]
TAIL_COLUMNS = [("origin conns/run", lambda s: f"{s['origin_new_conns']:.0f}")]


def arm_table(arms, rows, columns, mark_errors=False):
    """Markdown lines: one row per arm of `arms` that ran, `columns` then the origin's
    connections and the errors (`mark_errors`: a row whose run had errors says it is invalid).
    The "÷ before" column follows "÷ best other" when ferry-before ran."""
    if BEFORE_ARM in rows:
        at = [c[0] for c in columns].index("CPU/req ÷ best other") + 1
        columns = columns[:at] + [BEFORE_COLUMN] + columns[at:]
    columns = columns + TAIL_COLUMNS
    lines = ["| arm | " + " | ".join(c[0] for c in columns) + " | errors |",
             "|---|" + "---:|" * (len(columns) + 1)]
    for arm in arms:
        s = rows.get(arm)
        if not s:
            continue
        name, cpu = arm_cells(arm, s)
        err = f"**{s['errors']} (row invalid)**" if mark_errors and s["errors"] else s["errors"]
        cells = [cpu if cell is None else cell(s) for _, cell in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {err} |")
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
    """A workload's heading and its table of every arm (arm_table)."""
    return ["", f"#### {wl}: {title}", ""] + arm_table(arms, rows, HEAD_COLUMNS,
                                                      mark_errors=mark_errors)


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
             "Each proxy terminates TLS with the same self-signed ECDSA P-256 certificate "
             "(openssl CLI), TLS 1.2 minimum, TLS 1.3 negotiated (wrk's OpenSSL default), session "
             "tickets on in all three (their default; no server-side session cache in nginx or "
             "ferry; HAProxy keeps its default one). Separate TLS-only instances of each proxy "
             "(one worker each), so the plain-HTTP arms' figures are unaffected."]
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
