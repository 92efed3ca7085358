#!/usr/bin/python3
"""Runs the compose cell bench without a container engine, from the Docker files themselves.

There is no Docker engine where ferry is built and tested, so this is how docker/Dockerfile and
docker/docker-compose.yml are kept honest (docker/README.md, "What was checked here"):

  1. images:   stages each target's files in a temp root (the default target, the sidecar
               image, and every target a compose service builds), following `FROM <stage>`,
               from the Dockerfile's COPY lines and the build stage's `cp ... /out/DIR/` lists
               (binaries from --build); a missing or .dockerignore'd file fails, naming the
               Dockerfile line. The build stage may build with scripts/build-release.sh DIR
               (the release build: the binaries are the script's TARGETS, in DIR, and later
               `cmake --build` lines must use DIR); that stage must install a package for every
               program of scripts/pgo-train.sh's TOOLS=(...) (the training it runs: h2load,
               curl). The staged ferry's --version is printed, with a note when the image's
               ferry would be the release build and the staged one is not (--build of a plain
               tree, as the ctest's: the layout, libraries and commands are the same).
  2. packages: every library the staged binaries load (ldd) and every program the services run
               (commands, healthchecks, CMD, HEALTHCHECK) must come from a package its target
               installs (or debian:12-slim has); the staged Python files must import with the
               standard library alone. The default target must be minimal: one binary,
               `ferry`, and only libraries it loads; every target runs as a non-root USER.
  3. compose:  runs every service's `command` as a local process, in depends_on order, with its
               target's staged /usr/local/bin first on PATH and volumes as temp dirs. The only
               changes are addresses: each (network namespace, port) of the compose network
               becomes a free 127.0.0.1 port (the table is printed with -v), and run.py gets the
               same mapping as `--layout FILE`. `service_healthy` runs the service's
               healthcheck test until it passes; ferry services need a stop_grace_period above
               ferry's drain. Then, as `up --exit-code-from bench bench` would, it waits for the
               bench, requires exit 0 and a sane cell.json / cell.md. With --cell-tls on
               (FERRY_CELL_TLS=on, the https cell) it also requires, from every ferry's admin
               /stats, TLS handshakes on its listener and forwards completed over https.

Steps 1 and 2 are docker/image_files.py's; this file runs them and step 3.

  /usr/bin/python3 docker/run_without_engine.py --build build-docker -v
  /usr/bin/python3 docker/run_without_engine.py --build build-docker --cell-tls on   # https cell

Needs python3-yaml (Debian's, hence /usr/bin/python3) and haproxy, like the bench itself.
Every process started here is stopped on exit, on failure and on Ctrl-C.
"""
import argparse
import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "bench"))
import benchlib  # noqa: E402  (bench/benchlib/: free ports; the cell bench's layout and arms)
sys.path.insert(0, HERE)
from image_files import (  # noqa: E402  (docker/image_files.py: steps 1 and 2, the images)
    IMAGE_PATH, RELEASE_FLAVOR, RELEASE_SCRIPT, CheckFailed, check_image, check_programs,
    check_python_imports, check_release_build, check_sidecar, ferry_version, log,
    parse_dockerfile)

ANY_HOSTS = {"0.0.0.0"}                 # a bind to every address of the service's namespace
LOOPBACK_HOSTS = {"127.0.0.1", "localhost"}  # the service's own namespace
PORT_FLAGS = {"--port"}                 # a bare port to bind (streams-emulator --port 8080)
HOST_PORT = re.compile(r"^([A-Za-z0-9_.-]+):(\d+)$")
STOP_GRACE_S = 10                       # compose's default stop_grace_period
FERRY_DRAIN_S = 26                      # ferry's default drain_delay + drain + 1 s
# Service keys that would change what runs and that this checker does not reproduce.
NOT_EMULATED = ("entrypoint", "working_dir", "env_file", "user")


# ---------------------------------------------------------------- 3. compose: file and addresses

_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}")


def substitute(value, env):
    """Compose interpolation: ${VAR}, ${VAR:-default} (unset or empty), ${VAR-default}, $$."""
    if isinstance(value, dict):
        return {k: substitute(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def one(m):
        if m.group(0) == "$$":
            return "$"
        name, op, default = m.groups()
        v = env.get(name)
        if op == ":-" and not v or op == "-" and v is None:
            return default
        return v or ""
    return _VAR.sub(one, value)


def load_compose(path, env):
    with open(path) as f:
        doc = yaml.safe_load(f)  # resolves the `<<:` merge keys
    services = substitute(doc["services"], env)
    for name, svc in services.items():
        if not isinstance(svc.get("command"), list):
            raise CheckFailed(f"{path}: service {name}: command must be a list (exec form)")
        for key in NOT_EMULATED:
            if key in svc:
                raise CheckFailed(f"{path}: service {name}: `{key}` is not emulated by "
                                  f"{os.path.basename(__file__)}; teach it first")
        if not all(isinstance(v, str) for v in svc.get("volumes") or []):
            raise CheckFailed(f"{path}: service {name}: volumes in the short form only")
    return services


def service_env(svc):
    """A service's `environment` (map or KEY=VALUE list)."""
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env)
    return {k: str(v) for k, v in env.items()}


def depends_on(svc):
    """name -> condition (the list form means service_started)."""
    deps = svc.get("depends_on") or {}
    if isinstance(deps, list):
        return {d: "service_started" for d in deps}
    return {d: (c or {}).get("condition", "service_started") for d, c in deps.items()}


def start_order(services):
    for name, svc in services.items():
        unknown = set(depends_on(svc)) - set(services)
        if unknown:
            raise CheckFailed(f"service {name} depends on unknown {sorted(unknown)}")
    order, done = [], set()
    while len(order) < len(services):
        ready = [n for n in services if n not in done and set(depends_on(services[n])) <= done]
        if not ready:
            raise CheckFailed(f"depends_on cycle among {sorted(set(services) - done)}")
        order.append(ready[0])
        done.add(ready[0])
    return order


class Network:
    """The compose network on 127.0.0.1. A network namespace is a service with its own network;
    `network_mode: service:X` puts a service in X's (the ferry sidecars). Every (namespace,
    port) gets one free 127.0.0.1 port; binds and references are recorded so that a reference
    nobody listens on fails before anything starts."""

    def __init__(self, services):
        self.services = services
        self.hosts = {}  # service name or fixed IP -> namespace
        for name, svc in services.items():
            if svc.get("network_mode"):
                continue  # not on the network itself: no DNS name, no address
            self.hosts[name] = name
            nets = svc.get("networks") or {}
            for net in (nets.values() if isinstance(nets, dict) else []):
                if (net or {}).get("ipv4_address"):
                    self.hosts[net["ipv4_address"]] = name
        self.ports = {}  # (ns, port) -> local port
        self.binds = {}  # (ns, port) -> service listening there
        self.refs = []   # (ns, port, what)

    def netns(self, service):
        mode = self.services[service].get("network_mode") or ""
        if not mode.startswith("service:"):
            return service
        if mode[8:] not in self.services:
            raise CheckFailed(f"service {service}: network_mode {mode}: no such service")
        return self.netns(mode[8:])

    def ns_of_host(self, host, service, what):
        """The namespace `host` names, as `service` sees it (None: as any other service)."""
        if host in ANY_HOSTS or host in LOOPBACK_HOSTS:
            if service is None:
                raise CheckFailed(f"{what}: {host} is no address other services can reach")
            return self.netns(service)
        if host not in self.hosts:
            raise CheckFailed(f"{what}: host {host} is no service or fixed address on the "
                              f"compose network")
        return self.hosts[host]

    def local_port(self, ns, port):
        key = (ns, int(port))
        if key not in self.ports:
            self.ports[key] = free_port()
        return self.ports[key]

    def bind(self, service, port, what):
        key = (self.netns(service), int(port))
        if self.binds.get(key, service) != service:
            raise CheckFailed(f"{what}: {self.binds[key]} already listens on {key[0]}:{port}")
        self.binds[key] = service
        return self.local_port(*key)

    def ref(self, ns, port, what):
        self.refs.append((ns, int(port), what))
        return self.local_port(ns, port)

    def address(self, service, text, what):
        """A "host:port" as `service` uses it -> "127.0.0.1:port"."""
        host, port = HOST_PORT.match(text).groups()
        if host in ANY_HOSTS:
            return f"127.0.0.1:{self.bind(service, port, what)}"
        return f"127.0.0.1:{self.ref(self.ns_of_host(host, service, what), port, what)}"

    def check_refs(self):
        for ns, port, what in self.refs:
            if (ns, port) not in self.binds:
                raise CheckFailed(f"{what}: nothing in the compose file listens on port {port} "
                                  f"in {ns}'s network namespace")

    def table(self):
        rows = []
        names = {ns: [h for h, n in self.hosts.items() if n == ns] for ns in self.services}
        for (ns, port), local in sorted(self.ports.items()):
            rows.append(f"  {'/'.join(names.get(ns) or [ns])}:{port} -> 127.0.0.1:{local} "
                        f"(listens: {self.binds.get((ns, port), '?')})")
        return "\n".join(rows)


def free_port():
    """A free 127.0.0.1 port for a service to bind later, held until this checker exits (the
    benches' own: two checkers run side by side under ctest, each opening hundreds of
    connections while its services start, and a port picked and released may be taken in
    between as any connection's source port; bench/benchlib/procs.py says how holding works)."""
    return benchlib.free_port()


def seconds(text):
    """A compose (or ferry) duration: "40s", "1m30s", "500ms", "2h", or a number of seconds."""
    if isinstance(text, (int, float)):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text).strip():
        raise CheckFailed(f"duration {text!r}: not understood")
    unit = {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 1e-6}
    return sum(float(n) * unit[u] for n, u in parts)


class Mounts:
    """Container paths -> local paths: each service's volumes (named volumes and bind mounts
    as temp dirs), else the service's staged image root (roots: service -> root)."""

    def __init__(self, services, roots, work):
        self.roots, self.by_service = roots, {}
        for name, svc in services.items():
            table = []
            for v in svc.get("volumes") or []:
                src, dst = v.split(":")[:2]
                kind = "binds" if src.startswith((".", "/")) else "volumes"
                local = os.path.join(work, kind, os.path.normpath(src).lstrip("./"))
                os.makedirs(local, exist_ok=True)
                table.append((dst.rstrip("/"), local))
            self.by_service[name] = sorted(table, key=lambda t: -len(t[0]))

    def local(self, service, path):
        for dst, src in self.by_service[service]:
            if path == dst or path.startswith(dst + "/"):
                return src + path[len(dst):]
        return self.roots[service] + path


def rewrite_argv(service, argv, net, mounts):
    """The compose command with addresses and container paths made local; nothing else (the
    program name is kept: the image's PATH finds it)."""
    out, prev = argv[:1], None
    for arg in argv[1:]:
        what = f"service {service}: `{prev} {arg}`" if prev else f"service {service}: `{arg}`"
        if prev in PORT_FLAGS and arg.isdigit():
            new = str(net.bind(service, arg, what))
        elif arg in ANY_HOSTS:
            new = "127.0.0.1"
        elif arg in net.hosts and (prev or "").startswith("--"):
            new = "127.0.0.1"  # a bare host as a flag's value (run.py --relay-host relay)
        elif arg.startswith("/"):
            new = mounts.local(service, arg)
        else:  # host:port, alone or in lists such as --map LISTEN=TARGET
            new = "".join(net.address(service, p, what) if HOST_PORT.match(p) else p
                          for p in re.split(r"([=,])", arg))
        out.append(new)
        prev = arg
    return out


# ---------------------------------------------------------------- 3. compose: run.py's layout

def flag_value(argv, flag, default=None):
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else default


def services_running(services, program):
    return [n for n, s in services.items() if s["command"][0] == program]


def local_layout(layout, services, net, mounts, relay_host):
    """run.py's compose layout with the local addresses: members are found by the address of
    their emulator, and their ferry is the `ferry` service in that emulator's namespace."""
    out = json.loads(json.dumps(layout))
    ferries = services_running(services, "ferry")
    haproxies = services_running(services, "haproxy")
    if len(haproxies) != 1:
        raise CheckFailed(f"expected one service running haproxy (the edge): {haproxies}")
    for m in layout["members"]:
        host, port = HOST_PORT.match(layout["emulators"][m]).groups()
        ns = net.ns_of_host(host, None, f"run.py compose_layout emulators[{m}]")
        emulator = [n for n in services if net.netns(n) == ns
                    and flag_value(services[n]["command"], "--name") == m]
        ferry = [n for n in ferries if net.netns(n) == ns]
        if not emulator or not ferry:
            raise CheckFailed(f"run.py compose_layout: {m} at {host} but the service there "
                              f"does not run streams-emulator --name {m} with a ferry beside it")
        out["emulators"][m] = f"127.0.0.1:{net.ref(ns, port, f'layout emulators[{m}]')}"
        for key in ("ferries", "admins"):
            h, p = HOST_PORT.match(layout[key][m]).groups()
            if net.ns_of_host(h, None, f"layout {key}[{m}]") != ns:
                raise CheckFailed(f"run.py compose_layout {key}[{m}] = {h}: not {m}'s namespace")
            out[key][m] = f"127.0.0.1:{net.bind(ferry[0], p, f'layout {key}[{m}]')}"
        if not flag_value(services[ferry[0]]["command"], "--config", "").endswith(f"-{m}.yaml"):
            raise CheckFailed(f"service {ferry[0]} (beside {emulator[0]}) does not run "
                              f"ferry-{m}.yaml")
    out["fe_ports"] = {f: net.bind(haproxies[0], p, f"layout fe_ports[{f}]")
                       for f, p in layout["fe_ports"].items()}
    relay_ns = net.ns_of_host(relay_host, None, f"run.py --relay-host {relay_host}")
    out["relay_ports"] = {f: net.ref(relay_ns, p, f"layout relay_ports[{f}] (bench -> relay)")
                          for f, p in layout["relay_ports"].items()}
    out["bind_host"] = "127.0.0.1"
    fleet = {mounts.local(f, layout["fleet_file"]) for f in ferries}
    if len(fleet) != 1:
        raise CheckFailed(f"the ferry services see {layout['fleet_file']} in different places")
    out["fleet_file"] = fleet.pop()
    return out


# ---------------------------------------------------------------- 3. compose: processes

def _die_with_parent():
    # A SIGKILLed checker (ctest's timeout) must not leave the cell running.
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Service:
    def __init__(self, name, argv, env, cwd, logs, grace=STOP_GRACE_S):
        self.name, self.argv, self.grace, self.env, self.cwd = name, argv, grace, env, cwd
        self.log_path = os.path.join(logs, f"{name}.log")
        with open(self.log_path, "wb") as logf:
            try:
                self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                             stdout=logf, stderr=subprocess.STDOUT,
                                             start_new_session=True, preexec_fn=_die_with_parent)
            except OSError as e:
                raise CheckFailed(f"service {name}: cannot run {argv[0]}: {e}")

    def exited(self):
        return self.proc.poll() is not None

    def tail(self, n=25):
        with open(self.log_path, errors="replace") as f:
            return "".join(f"    {self.name}| {l}" for l in f.readlines()[-n:])

    def stop(self):
        """SIGTERM to its process group (the bench's load generator too), SIGKILL after
        the service's stop_grace_period; returns how it ended."""
        if self.exited():
            return f"exited {self.proc.returncode}"
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(self.grace)
            return "stopped"
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return f"killed after {self.grace:g} s"


def wait_listening(svc, ports, timeout=15):
    end = time.time() + timeout
    for port in ports:
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if svc.exited():
                    raise CheckFailed(f"service {svc.name} exited ({svc.proc.returncode}) "
                                      f"at start:\n{svc.tail()}")
                if time.time() > end:
                    raise CheckFailed(f"service {svc.name}: nothing listens on 127.0.0.1:"
                                      f"{port} after {timeout} s:\n{svc.tail()}")
                time.sleep(0.1)


def wait_completed(svc, timeout=60):
    try:
        code = svc.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"service {svc.name} did not complete in {timeout} s:\n{svc.tail()}")
    if code != 0:
        raise CheckFailed(f"service {svc.name} exited {code} (service_completed_successfully "
                          f"needs 0):\n{svc.tail()}")


def wait_healthy(svc, test, hc):
    """As the engine's healthcheck: run `test` (argv, addresses made local) in the service's
    environment every interval until it exits 0; unhealthy after start_period + retries."""
    interval = seconds(hc.get("interval", "30s"))
    budget = seconds(hc.get("start_period", "0s")) + interval * int(hc.get("retries", 3)) + 1
    end, last = time.time() + budget, None
    while True:
        if svc.exited():
            raise CheckFailed(f"service {svc.name} exited ({svc.proc.returncode}) before it was "
                              f"healthy:\n{svc.tail()}")
        try:
            out = subprocess.run(test, env=svc.env, cwd=svc.cwd, capture_output=True, text=True,
                                 timeout=seconds(hc.get("timeout", "30s")))
            if out.returncode == 0:
                return
            last = (out.stderr or out.stdout).strip() or f"exit {out.returncode}"
        except subprocess.TimeoutExpired:
            last = "timed out"
        except OSError as e:
            raise CheckFailed(f"service {svc.name}: healthcheck {test[0]} does not run: {e}")
        if time.time() > end:
            raise CheckFailed(f"service {svc.name}: unhealthy after {budget:g} s "
                              f"({shlex.join(test)}: {last}):\n{svc.tail()}")
        time.sleep(min(interval, 0.5))  # the check's own period, shortened: nothing else to wait on


def run_services(plan, order, services, net, envs, roots, logs, running, healthchecks):
    """Starts each service once its depends_on conditions hold; `service_started` also waits
    for the ports the service listens on (compose does not, but a clear failure is worth it),
    `service_healthy` runs the dependency's healthcheck (healthchecks: name -> local argv)."""
    for name in order:
        for dep, cond in depends_on(services[name]).items():
            if cond == "service_completed_successfully":
                wait_completed(running[dep])
            elif cond == "service_healthy":
                if dep not in healthchecks:
                    raise CheckFailed(f"service {name}: depends_on {dep} service_healthy, but "
                                      f"{dep} has no healthcheck")
                wait_healthy(running[dep], healthchecks[dep], services[dep]["healthcheck"])
            elif cond != "service_started":
                raise CheckFailed(f"service {name}: depends_on condition {cond} not emulated")
        log(f"start {name}: {shlex.join(plan[name])}")
        grace = seconds(services[name].get("stop_grace_period", f"{STOP_GRACE_S}s"))
        running[name] = Service(name, plan[name], {**envs[name], **service_env(services[name])},
                                roots[name], logs, grace)
        ports = [local for (ns, port), local in net.ports.items()
                 if net.binds.get((ns, port)) == name]
        wait_listening(running[name], ports)


def wait_for_exit(bench, running, one_shots, deadline):
    """As `up --exit-code-from bench`: the bench's exit ends the run. A long-running service
    that exits before it is a failure here (compose would go on, and the bench fail later)."""
    while not bench.exited():
        for svc in running.values():
            if svc is not bench and svc.name not in one_shots and svc.exited():
                raise CheckFailed(f"service {svc.name} exited ({svc.proc.returncode}) while "
                                  f"{bench.name} was running:\n{svc.tail()}")
        if time.time() > deadline:
            raise CheckFailed(f"service {bench.name} still running at the deadline:\n"
                              f"{bench.tail()}")
        time.sleep(0.2)
    if bench.proc.returncode != 0:
        raise CheckFailed(f"service {bench.name} exited {bench.proc.returncode}:\n"
                          f"{bench.tail(40)}")


def check_results(out_dir, arm_titles):
    """cell.json / cell.md of run.py's report: every arm ran, and ferry did its job."""
    try:
        with open(os.path.join(out_dir, "cell.json")) as f:
            cell = json.load(f)
        with open(os.path.join(out_dir, "cell.md")) as f:
            md = f.read()
    except OSError as e:
        raise CheckFailed(f"bench results missing: {e}")
    summary = cell.get("summary", {})
    problems = [f"arm {a} missing" for a in arm_titles if a not in summary]
    problems += [f"{arm_titles[a]} not in cell.md" for a in arm_titles if arm_titles[a] not in md]
    for arm, s in summary.items():
        if s["appends"] <= 0:
            problems.append(f"arm {arm}: no append completed")
    if "ferry" in summary:
        s = summary["ferry"]
        if s["errors"] or s["client_409"]:
            problems.append(f"with-ferry arm: {s['errors']} errors, {s['client_409']} client 409s")
        if sum(s["ferry_forward_attempts"].values()) <= 0:
            problems.append("with-ferry arm: the ferries forwarded nothing (peer table?)")
    if cell.get("meta", {}).get("launcher") != "compose":
        problems.append("the bench did not run with --launcher compose")
    if problems:
        raise CheckFailed("bench results: " + "; ".join(problems))
    ratio = cell.get("ratio_ferry_over_pinned")
    return {a: round(s["appends_per_s_median"], 1) for a, s in summary.items()}, ratio


# ---------------------------------------------------------------- main

def service_targets(services, stages, compose_path, dockerfile):
    """service -> the Dockerfile target its image comes from: its `build.target` (default: the
    last stage), or, for a service with `image` only, the target of the service that builds
    that image."""
    default = list(stages)[-1]
    by_image, targets = {}, {}
    for name, svc in services.items():
        build = svc.get("build")
        if build is None:
            continue
        if not isinstance(build, dict):
            build = {"context": build}
        path = os.path.normpath(os.path.join(os.path.dirname(compose_path),
                                             build.get("context", "."),
                                             build.get("dockerfile", "Dockerfile")))
        if path != dockerfile:
            raise CheckFailed(f"service {name} builds {path}, not {dockerfile}")
        targets[name] = build.get("target", default)
        if by_image.setdefault(svc.get("image"), targets[name]) != targets[name]:
            raise CheckFailed(f"image {svc.get('image')} is built from two targets: "
                              f"{by_image[svc.get('image')]} and {targets[name]}")
    for name, svc in services.items():
        if name not in targets:
            if svc.get("image") not in by_image:
                raise CheckFailed(f"service {name}: image {svc.get('image')} is built by no "
                                  f"service of the compose file")
            targets[name] = by_image[svc["image"]]
    return targets


def check_commands(services, targets, images, mounts):
    """Step 2 for what the services run (commands, healthchecks, each target's CMD)."""
    for target, (image, allowed) in images.items():
        cmd = image.cmd()
        programs = [(f"service {n}", s["command"][0]) for n, s in services.items()
                    if targets[n] == target]
        programs += [(f"service {n} healthcheck", healthcheck_test(n, s)[0])
                     for n, s in services.items() if targets[n] == target and s.get("healthcheck")]
        check_programs(programs + ([(f"target {target} CMD", cmd[0])] if cmd else []), allowed,
                       image.root)
    scripts = sorted({mounts.local(n, s["command"][1]) for n, s in services.items()
                      if s["command"][0] == "python3"})
    check_python_imports(scripts, None)
    if len(scripts) != 1:
        raise CheckFailed(f"expected one Python script (run.py) among the commands: {scripts}")
    log("2. libraries (ldd), programs and Python imports all come with their images")


def healthcheck_test(name, svc):
    test = svc["healthcheck"].get("test")
    if not isinstance(test, list) or not test or test[0] != "CMD":
        raise CheckFailed(f"service {name}: healthcheck test {test!r}: the CMD form "
                          f"([\"CMD\", program, args...]) is what this checker runs")
    return test[1:]


def check_ferry_services(services, targets, images):
    """A ferry service drains on SIGTERM (timeouts.drain_delay + drain + 1 s, FERRY_DRAIN_S by
    default): its stop_grace_period must be longer, or the engine kills it mid-drain; its
    healthcheck must be the image's own HEALTHCHECK program."""
    for name in services_running(services, "ferry"):
        grace = seconds(services[name].get("stop_grace_period", f"{STOP_GRACE_S}s"))
        if grace <= FERRY_DRAIN_S:
            raise CheckFailed(f"service {name}: stop_grace_period {grace:g} s is not longer than "
                              f"ferry's drain ({FERRY_DRAIN_S} s)")
        if not services[name].get("healthcheck"):
            raise CheckFailed(f"service {name}: no healthcheck")
        hc = images[targets[name]][0].cmd("HEALTHCHECK")
        if hc and healthcheck_test(name, services[name])[0] != hc[0]:
            raise CheckFailed(f"service {name}: healthcheck runs "
                              f"{healthcheck_test(name, services[name])[0]}, the image's "
                              f"HEALTHCHECK {hc[0]}")


def plan_services(args, services, net, mounts, work):
    """Every service's local argv: its compose command with addresses and paths made local,
    run.py given the same mapping (--layout), and the bench shortened (--bench-args)."""
    plan = {n: rewrite_argv(n, s["command"], net, mounts) for n, s in services.items()}
    configs = next((s["command"] for s in services.values() if "gen-configs" in s["command"]), [])
    layout = benchlib.cell_configs.compose_layout(int(flag_value(configs, "--members", 4)))
    bench_argv = services[args.exit_code_from]["command"]
    relay_host = flag_value(bench_argv, "--relay-host", "relay")  # run.py's default
    layout_file = os.path.join(work, "layout.json")
    with open(layout_file, "w") as f:
        json.dump(local_layout(layout, services, net, mounts, relay_host), f, indent=1)
    for n, s in services.items():
        if s["command"][0] == "python3":
            plan[n] += ["--layout", layout_file]
    plan[args.exit_code_from] += shlex.split(args.bench_args)
    # Healthchecks run in their service's namespace: 127.0.0.1:9901 there is its ferry's admin.
    healthchecks = {n: rewrite_argv(n, healthcheck_test(n, s), net, mounts)
                    for n, s in services.items() if s.get("healthcheck")}
    net.check_refs()
    if args.verbose:
        log("address map (compose -> local):\n" + net.table())
        for n in services:
            log(f"{n}:\n    compose: {shlex.join(services[n]['command'])}\n"
                f"    local:   {shlex.join(plan[n])}")
            if n in healthchecks:
                log(f"    healthcheck: {shlex.join(healthchecks[n])}")
    return plan, healthchecks


def check_tls_cell(services, healthchecks):
    """FERRY_CELL_TLS=on: the bench's traffic really crossed TLS. Every ferry's listener
    completed handshakes (HAProxy's and its peers'), and the ferries forwarded (over https,
    the only peer URLs there are). Read from each ferry's admin /stats, at the address its
    healthcheck uses, while the ferries still run."""
    ok_series = 'ferry_downstream_tls_handshakes_total{outcome="ok"}'
    forwarded = 0
    for name, argv in healthchecks.items():
        if "ferry" not in services[name]["command"][0]:
            continue
        with urllib.request.urlopen(f"http://{argv[-1]}/stats", timeout=5) as r:
            stats = r.read().decode()
        values = {}
        for line in stats.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                values[key] = float(value)
        if values.get(ok_series, 0) <= 0:
            raise CheckFailed(f"{name}: no TLS handshake on its listener ({ok_series})")
        forwarded += sum(v for k, v in values.items()
                         if k.startswith("ferry_forward_completed_total"))
    if forwarded <= 0:
        raise CheckFailed("FERRY_CELL_TLS=on: no ferry forwarded (ferry_forward_completed_total)")
    log(f"TLS cell OK: every ferry's listener did TLS handshakes; {forwarded:.0f} forwards "
        "over https")


def run_compose(args, services, plan, healthchecks, net, roots, logs):
    """Step 3: start in depends_on order, wait for the bench, stop everything."""
    one_shots = {d for s in services.values() for d, c in depends_on(s).items()
                 if c == "service_completed_successfully"}
    envs = {n: {"PATH": ":".join(roots[n] + d if d.startswith("/usr/local") else d
                                 for d in IMAGE_PATH)} for n in services}
    deadline = time.time() + args.timeout
    running = {}
    try:
        run_services(plan, start_order(services), services, net, envs, roots, logs, running,
                     healthchecks)
        log(f"3. every service started; waiting for {args.exit_code_from}")
        wait_for_exit(running[args.exit_code_from], running, one_shots, deadline)
        if args.cell_tls == "on":
            check_tls_cell(services, healthchecks)
    finally:
        for name in reversed(list(running)):
            how = running[name].stop()
            if args.verbose:
                log(f"{name}: {how}")


def check(args, work):
    logs = os.path.join(work, "logs")
    os.makedirs(logs)
    dockerfile = os.path.abspath(args.dockerfile)
    stages = parse_dockerfile(dockerfile)
    env = {"EDGE_RTT_MS": args.edge_rtt_ms, "BENCH_MODE": args.bench_mode,
           "FERRY_CELL_TLS": args.cell_tls}
    services = load_compose(os.path.abspath(args.compose), env)
    if args.exit_code_from not in services:
        raise CheckFailed(f"{args.compose}: no service {args.exit_code_from}")
    targets = service_targets(services, stages, os.path.abspath(args.compose), dockerfile)
    default = list(stages)[-1]
    release_stage = check_release_build(stages, dockerfile)
    images = {t: check_image(args, stages, t, os.path.join(work, f"root-{t}"))
              for t in [default] + sorted(set(targets.values()) - {default})}
    check_sidecar(*images[default])
    staged = ferry_version(images[default][0].binaries[0])
    if release_stage and f"build: {RELEASE_FLAVOR})" not in staged:
        # Not an error: the layout, libraries and commands are the same; the ctest stages the
        # plain build of its own tree. The image's ferry is the release build.
        log(f"note: the image's ferry is the release build ({RELEASE_FLAVOR}); the staged one "
            f"from --build {args.build} says `{staged}` (stage a tree of {RELEASE_SCRIPT} to run "
            f"that very build)")
    check_ferry_services(services, targets, images)
    roots = {n: images[t][0].root for n, t in targets.items()}
    net, mounts = Network(services), Mounts(services, roots, work)
    check_commands(services, targets, images, mounts)
    plan, healthchecks = plan_services(args, services, net, mounts, work)
    run_compose(args, services, plan, healthchecks, net, roots, logs)
    bench_out = flag_value(services[args.exit_code_from]["command"], "--out")
    # The compose bench's arms (run.py's ferry-tls arm is the local launcher's).
    compose_arms = {a: benchlib.cell_configs.ARM_TITLES[a] for a in benchlib.cell_configs.ARMS}
    rates, ratio = check_results(mounts.local(args.exit_code_from, bench_out), compose_arms)
    log(f"bench OK: appends/s (median) {rates}; ferry/pinned {ratio} (not judged here: "
        f"a short run on a shared machine)")


def interrupted(signum, frame):
    raise KeyboardInterrupt


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="build dir with the image's binaries")
    ap.add_argument("--dockerfile", default=os.path.join(HERE, "Dockerfile"))
    ap.add_argument("--compose", default=os.path.join(HERE, "docker-compose.yml"))
    ap.add_argument("--exit-code-from", default="bench")
    ap.add_argument("--edge-rtt-ms", default="5", help="EDGE_RTT_MS (default 5)")
    ap.add_argument("--cell-tls", choices=["off", "on"], default="off",
                    help="FERRY_CELL_TLS (on: the https cell, mTLS between ferries)")
    ap.add_argument("--bench-mode", default="--quick",
                    help="BENCH_MODE (default --quick; pass as --bench-mode=--rounds=3)")
    ap.add_argument("--bench-args", default="--rounds 1 --duration 1 --warmup 0.25",
                    help="appended to the bench's command, to keep CI short ('' = as is)")
    ap.add_argument("--timeout", type=float, default=200, help="seconds for the whole run")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (image, logs)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    # SIGTERM (ctest, a CI runner) takes the same way out as Ctrl-C: stop what we started.
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    work = tempfile.mkdtemp(prefix="ferry-compose-")
    ok = False
    try:
        check(args, work)
        ok = True
    except CheckFailed as e:
        log(f"FAIL: {e}")
    except KeyboardInterrupt:
        log("interrupted; every process started here was stopped")
    finally:
        if args.keep or not ok:
            log(f"kept {work} (staged images in root-TARGET/, service logs in logs/)")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if ok:
        log("PASS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
