#!/usr/bin/env python3
"""Cell bench: PINNED vs UNPINNED WITHOUT FERRY vs UNPINNED WITH FERRY, interleaved.

Local launcher (default): starts a cell with ferry-cell (4 streams-emulators, a ferry beside
each), a HAProxy edge, the delay relay, then runs cell-loadgen once per arm per round in a
shuffled order. Compose launcher (--launcher compose): the same rounds and report against the
services of docker/docker-compose.yml (fixed addresses); nothing is started.

  bench/cell/run.py --quick                       # 2 rounds x 5 s per arm, 141 ms edge RTT
  bench/cell/run.py --quick --delay-ms 20         # short edge, for a smoke run
  bench/cell/run.py --quick --tls on              # + arm ferry-tls: https between ferries
  bench/cell/run.py --quick --h2 on               # + arm ferry-h2: https, HTTP/2 between ferries
  bench/cell/run.py --quick --arms pinned --handover on   # + arm handover (bench/cell/handover.py)
  bench/cell/run.py --quick --delay-ms 20 --routing on --routing-peers instances --hop-arms on
                                                  # + what one ferry / HAProxy hop costs (pinned)
  bench/cell/run.py --quick --delay-ms 20 --routing on --routing-peers instances --hop-arms on \
                    --count-syscalls             # + each arm's proxies' syscalls per request
  bench/cell/run.py                               # 3 rounds x 30 s per arm
  bench/cell/run.py gen-configs --out DIR         # haproxy.cfg, ferry-*.yaml, urls.json (compose)
  bench/cell/run.py gen-configs --out DIR --layout FILE   # the same with other addresses
  bench/cell/run.py gen-configs --out DIR --tls on        # https between ferries (mTLS), DIR/tls

See bench/README.md, "Cell bench".
"""
import argparse
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import benchlib  # noqa: E402  (bench/benchlib/)
from benchlib.cell_configs import (  # noqa: E402  (the arms and configs of both launchers)
    ARM_TITLES, ARMS, FERRY_ARMS, H2_ARM, HOP_ARMS, LAYOUT_HELP, PINNED_FERRY, PINNED_HAPROXY,
    ROUTING_ARM, TLS_ARM, frontends, gen_compose_configs, haproxy_config,
    hop_haproxy_config, load_layout, loopback_layout)
from benchlib.cell_report import TLS_FAMILIES, write_report  # noqa: E402  (cell.md, cell.json)
from benchlib.syscall_count import SyscallCount  # noqa: E402  (--count-syscalls)


def handover_arm():
    """bench/cell/handover.py (the arm of --handover on), imported only when it runs: the
    compose image copies run.py and bench/benchlib/ alone (docker/Dockerfile), and the arm is the
    local launcher's."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import handover
    return handover


H2_FAMILIES = ("ferry_downstream_http2_connections_total",)
# Per ferry, for the routing arm's figures: routed requests by outcome, forwards, CPU.
ROUTING_FAMILIES = ("ferry_owner_routing_requests_total", "ferry_forward_attempts_total",
                    "ferry_requests_total", "process_cpu_seconds_total")


# ---------------------------------------------------------------- helpers

def ferry_families(admins, members, routing):
    """ROUTING_FAMILIES summed over an arm's ferries, plus ferry_owner_routing_requests_total
    by outcome and the ferries' 409s skipped/forwarded (the local instances' 409s)."""
    families = ROUTING_FAMILIES if routing else ROUTING_FAMILIES[1:]  # only it exports the first
    out = {k: 0.0 for k in ROUTING_FAMILIES}
    for m in members:
        s = benchlib.scrape(admins[m], families + ("ferry_forward_skipped_total",))
        for k in ROUTING_FAMILIES:
            out[k] += (s or {}).get(k) or 0
        # Every 409 with Streams-Replay-To a local instance answered is forwarded or skipped.
        out.setdefault("local_409", 0.0)
        out["local_409"] += ((s or {}).get("ferry_forward_attempts_total") or 0) + (
            (s or {}).get("ferry_forward_skipped_total") or 0)
    return out


def scrape_forwards(admin):
    """Sum of ferry_forward_attempts_total over label sets at http://<admin>/stats."""
    s = benchlib.scrape(admin, ["ferry_forward_attempts_total"])
    return None if s is None else s["ferry_forward_attempts_total"]


# ---------------------------------------------------------------- launchers

def start_ferry_set(procs, ferry_bin, out, layout):
    """Starts a ferry per member with out/ferry-<m>.yaml and waits for its listener and admin;
    remembers their pids by admin address (arm_pids())."""
    for m in layout["members"]:
        p = procs.start([ferry_bin, "--config", os.path.join(out, f"ferry-{m}.yaml")],
                        os.path.join(out, f"ferry-{m}.log"))
        FERRY_PIDS[layout["admins"][m]] = p.pid
    for a in list(layout["ferries"].values()) + list(layout["admins"].values()):
        benchlib.wait_tcp(a)


# Admin address -> pid of every ferry the local launcher started (--count-syscalls).
FERRY_PIDS = {}


def arm_pids(arm, arm_admins):
    """The pids whose system calls arm's runs count: its ferries' (by their admin addresses),
    for pinned-haproxy the second HAProxy's."""
    if arm == PINNED_HAPROXY:
        return [arm_admins["pid"]]
    return [FERRY_PIDS[a] for a in arm_admins.values()]


def start_tls_ferries(args, tmp, procs, ferry_bin, members, emulators, h2=False):
    """The arm ferry-tls (h2: ferry-h2): one more ferry per member beside the cell's emulators,
    configured by gen_compose_configs(tls=True, h2=h2) with a loopback layout (certificates by
    gen_tls_files() in tmp/tls-cell/tls, h2: tmp/h2-cell/tls). Returns (ferries, admins,
    tls_dir): name -> "host:port", the tls dir."""
    out = os.path.join(tmp, "h2-cell" if h2 else "tls-cell")
    layout = loopback_layout(out, members, emulators)
    gen_compose_configs(out, layout, tls=True, h2=h2)
    start_ferry_set(procs, ferry_bin, out, layout)
    return layout["ferries"], layout["admins"], os.path.join(out, "tls")


def start_routing_ferries(args, tmp, procs, ferry_bin, members, emulators):
    """The arm ferry-routing: one more plain ferry per member beside the cell's emulators, the
    configs of gen_compose_configs() with a loopback layout plus forwarding.owner_routing, and a
    urls.json naming these ferries (a forward crosses the owner's ferry, as in the arm ferry)
    or, with --routing-peers instances, the owners' emulators (a forward or routed request
    goes straight to the owner's instance: one ferry on the path, as the compose launcher's
    plain configs do). Returns (ferries, admins): name -> "host:port"."""
    out = os.path.join(tmp, "routing-cell")
    layout = loopback_layout(out, members, emulators)
    gen_compose_configs(out, layout)
    with open(layout["fleet_file"], "w") as f:
        peers = emulators if args.routing_peers == "instances" else layout["ferries"]
        json.dump({m: f"http://{peers[m]}" for m in members}, f)
    for m in members:
        path = os.path.join(out, f"ferry-{m}.yaml")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("owner_routing: {enabled: false}", "owner_routing: {enabled: true}"))
    start_ferry_set(procs, ferry_bin, out, layout)
    return layout["ferries"], layout["admins"]


def launch_local(args, tmp, procs, tls_arm=False, h2_arm=False, routing_arm=False,
                 hop_arms=False):
    """Starts ferry-cell, HAProxy and the relay (tls_arm: and the ferries of arm ferry-tls);
    returns the addresses the rounds use. admins: arm -> name -> admin address (the ferries
    whose forwards an arm counts; "ferry" for every arm but ferry-tls). The fifth value:
    the emulators and (routing_arm) the owner-routing ferries, for the arm handover."""
    cell, binaries = benchlib.start_cell(
        args, tmp, procs, {"cell-loadgen": "bench/cell/cell-loadgen",
                           "cell-delay-relay": "bench/cell/cell-delay-relay"},
        "build it: see bench/README.md, Cell bench")
    members, admins = cell.names(), {"ferry": cell.addrs("admin")}
    for m, a in admins["ferry"].items():
        FERRY_PIDS[a] = cell.member_pids[("ferry", m)]
    emulators, ferries = cell.addrs("emulator"), cell.addrs("ferry")
    tls_ferries = tls_dir = h2_ferries = h2_tls_dir = routing_ferries = None
    if tls_arm:
        tls_ferries, admins[TLS_ARM], tls_dir = start_tls_ferries(
            args, tmp, procs, binaries["ferry"], members, emulators)
    if h2_arm:
        h2_ferries, admins[H2_ARM], h2_tls_dir = start_tls_ferries(
            args, tmp, procs, binaries["ferry"], members, emulators, h2=True)
    if routing_arm:
        routing_ferries, admins[ROUTING_ARM] = start_routing_ferries(
            args, tmp, procs, binaries["ferry"], members, emulators)

    hop_haproxy = None
    if hop_arms:
        hop_ports = {m: benchlib.free_port() for m in members}
        hop_stats = benchlib.free_port()
        hop_cfg = os.path.join(tmp, "haproxy-hop.cfg")
        with open(hop_cfg, "w") as f:
            f.write(hop_haproxy_config(members, emulators, hop_ports, hop_stats))
        hop = procs.start([args.haproxy, "-db", "-f", hop_cfg],
                          os.path.join(tmp, "haproxy-hop.log"))
        hop_haproxy = {m: f"127.0.0.1:{hop_ports[m]}" for m in members}
        # What each hop arm measures the CPU of: the ferries pinned-ferry crosses (their
        # counters), the second HAProxy's process (its /proc ticks).
        admins[PINNED_FERRY] = admins.get(ROUTING_ARM, admins["ferry"])
        admins[PINNED_HAPROXY] = {"pid": hop.pid, "stats": f"127.0.0.1:{hop_stats}"}
        for a in hop_haproxy.values():
            benchlib.wait_tcp(a)
    fes = frontends(members, tls_arm, h2_arm, routing_arm, hop_arms)
    fe_ports = {f: benchlib.free_port() for f in fes}
    cfg = os.path.join(tmp, "haproxy.cfg")
    with open(cfg, "w") as f:
        f.write(haproxy_config(members, emulators, ferries, fe_ports, tls_ferries=tls_ferries,
                               tls_dir=tls_dir, h2_ferries=h2_ferries, h2_tls_dir=h2_tls_dir,
                               routing_ferries=routing_ferries, hop_haproxy=hop_haproxy))
    procs.start([args.haproxy, "-db", "-f", cfg], os.path.join(tmp, "haproxy.log"))
    for p in fe_ports.values():
        benchlib.wait_tcp(f"127.0.0.1:{p}")

    relay_ports = {f: benchlib.free_port() for f in fes}
    relay_argv = [binaries["cell-delay-relay"], "--delay-ms", str(args.delay_ms)]
    for f in fes:
        relay_argv += ["--map", f"127.0.0.1:{relay_ports[f]}=127.0.0.1:{fe_ports[f]}"]
    procs.start(relay_argv, os.path.join(tmp, "relay.log"))
    for p in relay_ports.values():
        benchlib.wait_tcp(f"127.0.0.1:{p}")
    relay = {f: f"127.0.0.1:{relay_ports[f]}" for f in fes}
    # Straight to each emulator, past relay, HAProxy and ferry: the load generator's ceiling.
    relay.update({f"direct_{m}": emulators[m] for m in members})
    return members, relay, admins, binaries["cell-loadgen"], {
        "emulators": emulators, "routing_ferries": routing_ferries}


def launch_compose(args):
    layout = load_layout(args.layout, args.members)
    members, admins = layout["members"], layout["admins"]
    relay = {f: f"{args.relay_host}:{p}" for f, p in layout["relay_ports"].items()}
    for a in list(relay.values()) + list(admins.values()):
        benchlib.wait_tcp(a, timeout=60)
    return members, relay, {"ferry": admins}, args.loadgen, None


# ---------------------------------------------------------------- rounds

def run_loadgen(args, loadgen, members, relay, arm, duration, warmup, create=False,
                pin_prefix="pin_"):
    pinned = arm in ("pinned", "ceiling") or arm in HOP_ARMS
    pin_prefix = HOP_ARMS.get(arm, pin_prefix)
    argv = [loadgen, "--arm", arm, "--mode", "pinned" if pinned else "edge",
            "--members", ",".join(members), "--shards", str(args.shards),
            "--streams", str(args.streams), "--connections", str(args.connections),
            "--duration", str(duration), "--warmup", str(warmup),
            "--body-bytes", str(args.body_bytes), "--max-replays", str(args.max_replays),
            "--prefix", args.prefix]
    if arm in FERRY_ARMS:
        argv += ["--edge", relay[arm]]
    elif arm == "noferry":
        argv += ["--edge", relay["noferry"]]
    for m in members:
        argv += ["--pin", f"{m}={relay[pin_prefix + m]}"]
    if create:
        argv.append("--create")
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(argv, capture_output=True, text=True, timeout=duration + warmup + 120)
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"cell-loadgen failed ({out.returncode}): {out.stderr.strip()}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # The load generator's own CPU (warm-up included), for its ceiling.
    result["loadgen_cpu_s"] = (cpu_after.ru_utime + cpu_after.ru_stime
                               - cpu_before.ru_utime - cpu_before.ru_stime)
    return result


def measure_ceiling(args, loadgen, members, relay):
    """Appends/s and CPU per append of the load generator sent straight to the owners."""
    if not all(f"direct_{m}" in relay for m in members):
        return None
    r = run_loadgen(args, loadgen, members, relay, "ceiling", min(args.duration, 5.0), 0.5,
                    pin_prefix="direct_")
    total = r["appends"] + r["client_replays"]
    cpu_us = r["loadgen_cpu_s"] * 1e6 / max(total, 1)
    return {"appends_per_s": r["appends_per_s"], "loadgen_cpu_us_per_append": cpu_us,
            "loadgen_ceiling_per_s": 1e6 / cpu_us if cpu_us > 0 else None, "errors": r["errors"]}


def gen_configs_main(argv):
    ap = argparse.ArgumentParser(prog="run.py gen-configs")
    ap.add_argument("--out", required=True)
    ap.add_argument("--members", type=int, default=4)
    ap.add_argument("--layout", help=LAYOUT_HELP)
    ap.add_argument("--tls", choices=["on", "off"], default="off",
                    help="on: ferries' listeners speak TLS (mTLS required), https peer "
                         "URLs, certificates from a test CA in OUT/tls (openssl CLI)")
    a = ap.parse_args(argv)
    gen_compose_configs(a.out, load_layout(a.layout, a.members), tls=a.tls == "on")
    return 0


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2 rounds x 5 s per arm, 1 s warm-up")
    ap.add_argument("--launcher", choices=["local", "compose"], default="local")
    ap.add_argument("--build", default=os.path.join(ROOT, "build-cellbench"))
    ap.add_argument("--ferry", help="ferry binary (default: BUILD/app/ferry)")
    ap.add_argument("--haproxy", default="/usr/sbin/haproxy")
    ap.add_argument("--loadgen", default="/usr/local/bin/cell-loadgen", help="compose launcher")
    ap.add_argument("--relay-host", default="relay", help="compose launcher")
    ap.add_argument("--layout", help=LAYOUT_HELP + " (compose launcher)")
    ap.add_argument("--members", type=int, default=4)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--streams", type=int, default=16)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--body-bytes", type=int, default=200)
    ap.add_argument("--max-replays", type=int, default=3)
    ap.add_argument("--delay-ms", type=float, default=141.0,
                    help="edge round trip injected by the relay (local launcher)")
    ap.add_argument("--duration", type=float, help="seconds per arm run (default 30, as the motivating measurement; quick 5)")
    ap.add_argument("--warmup", type=float, help="seconds before each measured window (default 2; quick 1)")
    ap.add_argument("--rounds", type=int, help="rounds (default 3; quick 2)")
    ap.add_argument("--arms", default=",".join(ARMS),
                    help=f"comma list of {', '.join(ARMS + (TLS_ARM, H2_ARM))} ({TLS_ARM}, "
                         f"{H2_ARM}: local launcher only; --tls on / --h2 on add them)")
    ap.add_argument("--tls", choices=["on", "off"], default="off",
                    help=f"on: add the arm {TLS_ARM} (local launcher): ferries with TLS "
                         "listeners (mTLS required), https peer URLs, HAProxy verifying them")
    ap.add_argument("--h2", choices=["on", "off"], default="off",
                    help=f"on: add the arm {H2_ARM} (local launcher): as {TLS_ARM}, and HTTP/2 "
                         "between the ferries (listeners offer h2 by ALPN, owner_protocol auto)")
    ap.add_argument("--routing", choices=["on", "off"], default="off",
                    help=f"on: add arm {ROUTING_ARM} (ferries with forwarding.owner_routing; "
                    "local launcher)")
    ap.add_argument("--routing-peers", choices=["ferries", "instances"], default="ferries",
                    help=f"what arm {ROUTING_ARM}'s peer table names: the owners' ferries "
                    "(default; a routed request crosses two ferries) or their instances (one)")
    ap.add_argument("--hop-arms", choices=["on", "off"], default="off",
                    help=f"on: add arms {PINNED_FERRY} and {PINNED_HAPROXY} (local launcher): "
                    "pinned appends through one more proxy hop, the owner's ferry or a second "
                    "HAProxy: what one hop costs in this cell")
    ap.add_argument("--count-syscalls", action="store_true",
                    help="count, per client request, the system calls and context switches "
                         "of each arm's proxies (ferries; the second HAProxy of "
                         f"{PINNED_HAPROXY}): perf stat on syscall and scheduler tracepoints, "
                         "local launcher, needs perf and the right to trace them")
    ap.add_argument("--handover", choices=["on", "off"], default="off",
                    help="on: after every other arm, arm handover (local launcher): idempotent "
                    f"producers append through {ROUTING_ARM}'s ferries while a stream's shard "
                    "moves to another member; exits 1 unless every acknowledged append is in "
                    "the stream once and in order (bench/cell/handover.py)")
    ap.add_argument("--handover-producers", type=int,
                    help="producers of arm handover (default: 2 per member)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prefix", default="cellbench")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--keep-tmp", action="store_true")
    args = ap.parse_args()
    defaults = (2, 5.0, 1.0) if args.quick else (3, 30.0, 2.0)
    for name, value in zip(("rounds", "duration", "warmup"), defaults):
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def choose_arms(args):
    """--arms plus the arms --tls, --h2, --routing and --hop-arms add; exits on an unknown arm
    or one the launcher cannot run."""
    arms = [a for a in args.arms.split(",") if a]
    if args.tls == "on" and TLS_ARM not in arms:
        arms.append(TLS_ARM)
    if args.h2 == "on" and H2_ARM not in arms:
        arms.append(H2_ARM)
    if args.routing == "on" and ROUTING_ARM not in arms:
        arms.append(ROUTING_ARM)
    if args.hop_arms == "on":
        arms += [a for a in HOP_ARMS if a not in arms]
    if args.routing_peers == "instances":
        ARM_TITLES[ROUTING_ARM] += ", peers = the owners' instances"
    for a in arms:
        if a not in ARMS + (TLS_ARM, H2_ARM, ROUTING_ARM) + tuple(HOP_ARMS):
            sys.exit(f"run.py: unknown arm {a}")
        if a in HOP_ARMS and args.launcher != "local":
            sys.exit(f"run.py: arm {a} is the local launcher's")
    if H2_ARM in arms and args.launcher != "local":
        sys.exit(f"run.py: arm {H2_ARM} is the local launcher's")
    if args.count_syscalls and args.launcher != "local":
        sys.exit("run.py: --count-syscalls is the local launcher's (it attaches to the pids)")
    if args.handover == "on" and args.launcher != "local":
        sys.exit("run.py: arm handover is the local launcher's (it starts the owner-routing "
                 "ferries and moves a shard with the emulators' /v1/debug routes)")
    if TLS_ARM in arms and args.launcher != "local":
        sys.exit(f"run.py: arm {TLS_ARM} is the local launcher's (compose: FERRY_CELL_TLS=on "
                 "makes the ferry arm https)")
    return arms


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "gen-configs":
        return gen_configs_main(sys.argv[2:])
    args = parse_args()
    arms = choose_arms(args)
    tmp = args.tmp = tempfile.mkdtemp(prefix="cellbench-")
    procs = benchlib.Procs()
    ceiling = None
    tls_handshakes = None
    h2_proof = None
    handover_result = None
    try:
        if args.launcher == "local":
            members, relay, admins, loadgen, local = launch_local(
                args, tmp, procs, TLS_ARM in arms, H2_ARM in arms,
                ROUTING_ARM in arms or args.handover == "on",
                any(a in HOP_ARMS for a in arms))
        else:
            members, relay, admins, loadgen, local = launch_compose(args)
        print(f"cell: {len(members)} members, edge RTT {args.delay_ms:g} ms (relay), "
              f"{args.connections} appenders, {args.streams} streams, "
              f"{args.body_bytes}-byte appends, {args.rounds} rounds x {args.duration:g} s",
              file=sys.stderr)
        runs = run_rounds(args, arms, loadgen, members, relay, admins)
        if H2_ARM in admins:  # proof the forwards ran over h2: the peers' h2 connections
            h2_proof = h2_evidence(admins[H2_ARM], members)
        ceiling = measure_ceiling(args, loadgen, members, relay)
        if TLS_ARM in admins:  # proof the arm ran on TLS: its ferries' listener handshakes
            tls_handshakes = tls_evidence(admins[TLS_ARM], members)
        if args.handover == "on":
            handover_result = run_handover(args, members, local, admins)
    finally:
        procs.stop(timeout=10)
        if not args.keep_tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept {tmp}", file=sys.stderr)

    ok = report(args, arms, members, runs, ceiling, tls_handshakes, h2_proof, handover_result)
    if handover_result and not handover_result["ok"]:
        print(f"run.py: {handover_arm().failure(handover_result)}", file=sys.stderr)
        return 1
    return 0 if ok or H2_ARM not in arms else 1


def run_rounds(args, arms, loadgen, members, relay, admins):
    """Creates the streams, warms every arm up once, then args.rounds rounds of every arm in a
    shuffled order; the measured runs."""
    runs = []
    run_loadgen(args, loadgen, members, relay, "pinned", 0.5, 0, create=True)
    rng = random.Random(args.seed)
    # Warm-up: every arm once, discarded (connections, HAProxy and ferry pools).
    for arm in arms:
        run_loadgen(args, loadgen, members, relay, arm, 1.0, 0)
    for rnd in range(args.rounds):
        order = arms[:]
        rng.shuffle(order)
        for arm in order:
            r = run_arm(args, rnd, arm, loadgen, members, relay,
                        admins.get(arm, admins["ferry"]),
                        routing_counters=admins.get(arm) is admins.get(ROUTING_ARM, False))
            runs.append(r)
            fw = sum(v or 0 for v in r["ferry_forward_attempts"].values())
            print(f"round {rnd} {arm:9s} {r['appends_per_s']:8.1f}/s p50 {r['p50_ms']:7.1f} "
                  f"p99 {r['p99_ms']:7.1f} 409s {r['client_409']} replays "
                  f"{r['client_replays']} errors {r['errors']} forwards {fw:.0f}",
                  file=sys.stderr)
    return runs


def run_arm(args, rnd, arm, loadgen, members, relay, arm_admins, routing_counters=False):
    """One measured run of `arm` in round `rnd`, with what its ferries counted meanwhile
    (arm_admins: name -> admin address; for arm pinned-haproxy the second HAProxy's pid, whose
    CPU is read instead; routing_counters: the ferries export the owner-routing families)."""
    if arm == PINNED_HAPROXY:
        cpu0, req0 = process_cpu_s(arm_admins["pid"]), haproxy_requests(arm_admins["stats"])
        r = counted_run(args, loadgen, members, relay, arm, arm_admins)
        r["hop_haproxy_cpu_s"] = process_cpu_s(arm_admins["pid"]) - cpu0
        r["hop_haproxy_requests"] = haproxy_requests(arm_admins["stats"]) - req0
        r["round"] = rnd
        r["ferry_forward_attempts"] = {m: 0 for m in members}
        return r
    before = {m: scrape_forwards(arm_admins[m]) for m in members}
    counted = arm in FERRY_ARMS or arm == PINNED_FERRY
    fam_before = ferry_families(arm_admins, members, routing_counters) if counted else None
    r = counted_run(args, loadgen, members, relay, arm, arm_admins if counted else None)
    after = {m: scrape_forwards(arm_admins[m]) for m in members}
    if fam_before is not None:
        fam_after = ferry_families(arm_admins, members, routing_counters)
        r["ferry_families"] = {k: fam_after[k] - fam_before[k] for k in fam_after}
    r["round"] = rnd
    r["ferry_forward_attempts"] = {
        m: (after[m] - before[m]) if None not in (after[m], before[m]) else None
        for m in members}
    return r


def counted_run(args, loadgen, members, relay, arm, arm_admins):
    """One measured loadgen run; with --count-syscalls and arm_admins (an arm whose proxy CPU
    is measured), r["syscalls"] holds what its proxies asked the kernel for meanwhile."""
    if not (args.count_syscalls and arm_admins):
        return run_loadgen(args, loadgen, members, relay, arm, args.duration, args.warmup)
    ferries = {} if arm == PINNED_HAPROXY else arm_admins
    requests0 = {m: ferry_requests(a) for m, a in ferries.items()}
    with SyscallCount(arm_pids(arm, arm_admins), args.tmp) as count:
        r = run_loadgen(args, loadgen, members, relay, arm, args.duration, args.warmup)
    r["syscalls"] = count.result
    # Per ferry: the requests it served and its calls (how busy a ferry is moves how many
    # events one wake-up finds).
    r["syscalls_by_ferry"] = {
        m: {"requests": ferry_requests(a) - requests0[m], **count.by_pid[str(FERRY_PIDS[a])]}
        for m, a in ferries.items()}
    return r


def ferry_requests(admin):
    """ferry_requests_total at `admin`; raises when it does not answer."""
    s = benchlib.scrape(admin, ("ferry_requests_total",))
    if s is None:
        raise RuntimeError(f"{admin}/stats did not answer")
    return s["ferry_requests_total"]


def process_cpu_s(pid):
    """User + system CPU seconds of process `pid` so far (/proc/<pid>/stat); raises when it is
    gone (a hop HAProxy that died must not read as a free hop)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def haproxy_requests(stats):
    """HTTP requests HAProxy's frontends fe_hop_* received so far (req_tot of their FRONTEND
    rows on the statistics page at `stats`); raises when the page has no such row."""
    with urllib.request.urlopen(f"http://{stats}/stats;csv", timeout=5) as r:
        rows = r.read().decode().splitlines()
    head = rows[0].lstrip("# ").split(",")
    name, kind, req = head.index("pxname"), head.index("svname"), head.index("req_tot")
    counts = [int(f[req]) for f in (row.split(",") for row in rows[1:])
              if len(f) > req and f[name].startswith("fe_hop_") and f[kind] == "FRONTEND"]
    if not counts:
        raise ValueError(f"{stats}/stats;csv has no fe_hop_* frontend")
    return sum(counts)


def tls_evidence(admins, members):
    """TLS_FAMILIES summed over the ferry-tls ferries: their listeners' handshakes."""
    tls_handshakes = {}
    for m in members:
        s = benchlib.scrape(admins[m], TLS_FAMILIES) or {}
        for k in TLS_FAMILIES:
            tls_handshakes[k] = tls_handshakes.get(k, 0) + (s.get(k) or 0)
    return tls_handshakes


def run_handover(args, members, local, admins):
    # Last: the hand-over takes the old owner out of the member set, which moves the other
    # arms' streams too (and the ownership cell-loadgen computes goes stale).
    producers = args.handover_producers or 2 * len(members)
    print(f"arm handover: {producers} producers through the owner-routing ferries, "
          f"{args.duration:g} s", file=sys.stderr)
    result = handover_arm().run(
        members, local["emulators"], local["routing_ferries"], admins[ROUTING_ARM],
        args.shards, producers, args.duration, args.prefix)
    result["routing_peers"] = args.routing_peers
    return result


def h2_evidence(admins, members):
    """What the ferry-h2 ferries say about HTTP/2 between them: HTTP/2 connections their
    listeners accepted (from the peers: HAProxy speaks HTTP/1.1) and owner connections open
    by protocol (ferry_owner_connections_active, issue 13), summed over the members."""
    out = {"downstream_http2_connections": 0.0, "owner_connections_h2": 0.0,
           "owner_connections_http1": 0.0}
    for m in members:
        s = benchlib.scrape(admins[m], H2_FAMILIES) or {}
        out["downstream_http2_connections"] += s.get(H2_FAMILIES[0]) or 0
        try:
            with urllib.request.urlopen(f"http://{admins[m]}/stats", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            continue
        for proto in ("h2", "http1"):
            mm = re.search(r'^ferry_owner_connections_active\{protocol="%s"\} (\S+)$' % proto,
                           text, re.M)
            if mm:
                out[f"owner_connections_{proto}"] += float(mm.group(1))
    return out


def report(args, arms, members, runs, ceiling=None, tls_handshakes=None, h2_proof=None,
           handover_result=None):
    """cell.md and cell.json (benchlib/cell_report.py) with the hand-over arm's lines; False
    when the h2 arm missed its goal or did not run over HTTP/2."""
    lines = handover_arm().report_lines(handover_result) if handover_result else []
    return write_report(args, arms, members, runs, ceiling, tls_handshakes, h2_proof,
                        handover_result, lines)


if __name__ == "__main__":
    sys.exit(main())
