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

  /usr/bin/python3 docker/run_without_engine.py --build build-docker -v
  /usr/bin/python3 docker/run_without_engine.py --build build-docker --cell-tls on   # https cell

Needs python3-yaml (Debian's, hence /usr/bin/python3) and haproxy, like the bench itself.
Every process started here is stopped on exit, on failure and on Ctrl-C.
"""
import argparse
import ctypes
import fnmatch
import glob
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

# debian:12-slim is the Required-priority set plus apt: apt links libstdc++6 and libgcc-s1,
# and zlib1g is Required, so these libraries are in the base image without being installed.
BASE_IMAGE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"}
# The base image's PATH; /usr/local/* is where the image's COPY put our binaries.
IMAGE_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
ANY_HOSTS = {"0.0.0.0"}                 # a bind to every address of the service's namespace
LOOPBACK_HOSTS = {"127.0.0.1", "localhost"}  # the service's own namespace
PORT_FLAGS = {"--port"}                 # a bare port to bind (streams-emulator --port 8080)
HOST_PORT = re.compile(r"^([A-Za-z0-9_.-]+):(\d+)$")
STOP_GRACE_S = 10                       # compose's default stop_grace_period
FERRY_DRAIN_S = 26                      # ferry's default drain_delay + drain + 1 s
# The release build (scripts/build-release.sh): profile-guided, its training run is
# scripts/pgo-train.sh, whose TOOLS=(...) line names the programs it runs besides the build's.
RELEASE_SCRIPT = "scripts/build-release.sh"
TRAINING_SCRIPT = "scripts/pgo-train.sh"
RELEASE_FLAVOR = "release-pgo"          # what build-release.sh's ferry --version says
# Service keys that would change what runs and that this checker does not reproduce.
NOT_EMULATED = ("entrypoint", "working_dir", "env_file", "user")


class CheckFailed(Exception):
    pass


def log(msg):
    print(f"[run_without_engine] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- Dockerfile

class Instruction:
    def __init__(self, line, keyword, text):
        self.line, self.keyword, self.text = line, keyword, text

    def where(self, dockerfile):
        return f"{os.path.relpath(dockerfile, REPO)}:{self.line}: {self.keyword} {self.text[:70]}"


def parse_dockerfile(path):
    """Stages: name -> list of Instruction (continuations joined, comments dropped)."""
    stages, current, pending, start = {}, None, "", 0
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if line.lstrip().startswith("#") or (not pending and not line.strip()):
                continue
            if not pending:
                start = n
            pending += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
            if line.endswith("\\"):
                continue
            keyword, _, text = pending.strip().partition(" ")
            pending = ""
            ins = Instruction(start, keyword.upper(), text.strip())
            if ins.keyword == "FROM":
                words = ins.text.split()
                current = words[2] if len(words) >= 3 and words[1].upper() == "AS" else words[0]
                stages[current] = []
            stages[current].append(ins)
    return stages


def shell_commands(ins):
    """The simple commands of a RUN line (split on &&), as word lists, env assignments dropped."""
    out = []
    for part in ins.text.split("&&"):
        words = shlex.split(part)
        while words and re.match(r"^[A-Z_]+=", words[0]):
            words.pop(0)
        if words:
            out.append(words)
    return out


def run_commands(stage, program):
    return [(ins, w) for ins in stage if ins.keyword == "RUN"
            for w in shell_commands(ins) if w[0] == program]


def apt_packages(stage):
    for ins, words in run_commands(stage, "apt-get"):
        if "install" in words:
            rest = words[words.index("install") + 1:]
            return {w for w in rest if not w.startswith("-")}
    return set()


def script_array(path, name):
    """The words of a bash array assignment `NAME=(a b c)` in the script at path."""
    with open(path) as f:
        m = re.search(rf"^{name}=\(([^)]*)\)", f.read(), re.M)
    if not m:
        raise CheckFailed(f"{os.path.relpath(path, REPO)}: no `{name}=(...)` line")
    return m.group(1).split()


def release_build(stage, dockerfile):
    """The build stage's run of scripts/build-release.sh [DIR]: (Instruction, DIR, the targets
    it builds, from the script's TARGETS=(...)), or None. The script configures DIR itself
    (`cmake -B DIR`, twice: instrumented, then with the profile)."""
    for ins in (i for i in stage if i.keyword == "RUN"):
        for words in shell_commands(ins):
            if words[0] in ("bash", "sh") and len(words) > 1:
                words = words[1:]
            if os.path.normpath(words[0]) != RELEASE_SCRIPT:
                continue
            script = os.path.join(REPO, RELEASE_SCRIPT)
            with open(script) as f:
                default = re.search(r"^BUILD_DIR=\$\{1:-([^}]+)\}", f.read(), re.M)
            args = [w for w in words[1:] if not w.startswith("-")]
            build_dir = args[0] if args else default.group(1)
            return ins, build_dir, set(script_array(script, "TARGETS"))
    return None


def build_outputs(stage, dockerfile, out_dir):
    """Paths (relative to the build dir) and names of what the build stage copies to out_dir,
    e.g. build/proxy/server/ferry -> ("proxy/server/ferry", "ferry"); checks each is a target
    the stage builds: by scripts/build-release.sh DIR (the release build) or by a `cmake
    --build DIR --target ...` in the same DIR."""
    build_dir, targets = None, set()
    release = release_build(stage, dockerfile)
    if release:
        build_dir, targets = release[1], set(release[2])
    for ins, words in run_commands(stage, "cmake"):
        if "-B" in words:
            build_dir = words[words.index("-B") + 1]
        if "--build" in words and build_dir is not None \
                and os.path.normpath(words[words.index("--build") + 1]) != \
                os.path.normpath(build_dir):
            raise CheckFailed(f"{ins.where(dockerfile)}: builds in "
                              f"{words[words.index('--build') + 1]}, not in the build dir "
                              f"{build_dir} the copied binaries come from")
        if "--target" in words:
            targets.update(w for w in words[words.index("--target") + 1:] if not w.startswith("-"))
    if build_dir is None:
        raise CheckFailed(f"{dockerfile}: no `cmake ... -B DIR` nor `{RELEASE_SCRIPT} DIR` in "
                          f"the build stage")
    for ins, words in run_commands(stage, "cp"):
        if words[-1].rstrip("/") != out_dir.rstrip("/"):
            continue
        outputs = []
        for src in (w for w in words[1:-1] if not w.startswith("-")):
            rel = os.path.relpath(src, build_dir)
            name = os.path.basename(src)
            if rel.startswith(".."):
                raise CheckFailed(f"{ins.where(dockerfile)}: {src} is not in the build dir "
                                  f"{build_dir}")
            if name not in targets:
                raise CheckFailed(f"{ins.where(dockerfile)}: {name} is copied but not built "
                                  f"(cmake --build --target lists {sorted(targets)})")
            outputs.append((rel, name))
        return ins, outputs
    raise CheckFailed(f"{dockerfile}: no `cp ... {out_dir}` in the build stage")


def dockerignored(rel, patterns):
    """Whether BuildKit leaves `rel` (or a folder above it) out of the context; the last
    matching pattern wins, `!` re-includes."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    ignored = False
    for pat in patterns:
        negate = pat.startswith("!")
        pat = pat.lstrip("!").strip("/")
        if any(fnmatch.fnmatchcase(p, pat) or fnmatch.fnmatchcase(p, pat.replace("**/", ""))
               for p in prefixes):
            ignored = not negate
    return ignored


def read_dockerignore(dockerfile):
    path = dockerfile + ".dockerignore"
    if not os.path.exists(path):
        path = os.path.join(REPO, ".dockerignore")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")]


# ---------------------------------------------------------------- 1. the image's files

class Image:
    """A target's staged filesystem: its root, the instructions of its chain of stages (base
    first), the packages their apt-get lines install, the binaries COPY'd from other stages."""

    def __init__(self, target, root):
        self.target, self.root = target, root
        self.chain, self.packages, self.binaries = [], set(), []

    def last(self, keyword):
        """The instruction in force (the last CMD, HEALTHCHECK, USER along the chain)."""
        found = [i for i in self.chain if i.keyword == keyword]
        return found[-1] if found else None

    def cmd(self, keyword="CMD"):
        """The exec-form argv of the CMD (or HEALTHCHECK ... CMD) in force, or None."""
        ins = self.last(keyword)
        if ins is None:
            return None
        text = ins.text
        if keyword == "HEALTHCHECK":  # HEALTHCHECK [--options] CMD [...]
            text = text[text.index("CMD ") + 4:] if "CMD " in text else ""
        try:
            return json.loads(text)
        except ValueError:
            raise CheckFailed(f"{keyword} of target {self.target}: the exec form (a JSON list) "
                              f"is expected: {ins.text}")


def stage_chain(stages, target, dockerfile):
    """[stage names], base first, following FROM <stage>; the first must be FROM debian:12*."""
    if target not in stages:
        raise CheckFailed(f"{dockerfile}: no stage {target}")
    chain, name = [], target
    while name in stages:
        if name in chain:
            raise CheckFailed(f"{dockerfile}: FROM cycle at {name}")
        chain.insert(0, name)
        name = [w for w in stages[name][0].text.split() if not w.startswith("--")][0]
    if not name.startswith("debian:12"):
        raise CheckFailed(f"{dockerfile}: target {target} starts FROM {name}: this checker "
                          f"knows debian:12(-slim) only (BASE_IMAGE_PACKAGES)")
    return chain


def stage_image(dockerfile, stages, target, build, root):
    """Fills root like the target's filesystem; returns its Image."""
    image = Image(target, root)
    ignore = read_dockerignore(dockerfile)
    for name in stage_chain(stages, target, dockerfile):
        stage = stages[name]
        image.chain += stage
        image.packages |= apt_packages(stage)
        for _, words in run_commands(stage, "mkdir"):
            for d in (w for w in words[1:] if not w.startswith("-")):
                os.makedirs(root + d, exist_ok=True)
        for ins in (i for i in stage if i.keyword == "COPY"):
            words = shlex.split(ins.text)
            opts = {w.split("=", 1)[0]: w.split("=", 1)[-1] for w in words if w.startswith("--")}
            srcs, dest = [w for w in words if not w.startswith("--")][:-1], words[-1]
            if "--from" in opts:
                image.binaries += copy_from_stage(stages[opts["--from"]], srcs, dest, build,
                                                  root, dockerfile, ins)
            else:
                copy_from_context(srcs, dest, root, ignore, dockerfile, ins)
    return image


def copy_from_stage(stage, srcs, dest, build, root, dockerfile, copy_ins):
    staged = []
    for src in srcs:
        cp_ins, outputs = build_outputs(stage, dockerfile, src)
        for rel, name in outputs:
            path = os.path.join(build, rel)
            if not os.access(path, os.X_OK):
                raise CheckFailed(f"{cp_ins.where(dockerfile)}: {path} not built (build the "
                                  f"targets of that line in {build})")
            target = root + dest.rstrip("/") + "/" + name
            os.makedirs(os.path.dirname(target), exist_ok=True)
            staged.append(shutil.copy2(path, target))
    return staged


def copy_from_context(srcs, dest, root, ignore, dockerfile, ins):
    for src in srcs:
        matches = sorted(glob.glob(os.path.join(REPO, src)))
        if not matches:
            raise CheckFailed(f"{ins.where(dockerfile)}: {src} does not exist in the repository")
        for path in matches:
            rel = os.path.relpath(path, REPO)
            if dockerignored(rel, ignore):
                raise CheckFailed(f"{ins.where(dockerfile)}: {rel} is excluded by the "
                                  f".dockerignore, the build would not find it")
            target = root + (dest + os.path.basename(path) if dest.endswith("/") else dest)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(path, target)


# ---------------------------------------------------------------- 2. packages

_owners = {}


def package_of(path):
    """The Debian package that owns path (trying its /usr-merged twin), or None."""
    real = os.path.realpath(path)
    candidates = []
    for p in (path, real):
        candidates += [p, p[4:] if p.startswith("/usr/") else "/usr" + p]
    for p in candidates:
        if p not in _owners:
            out = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
            _owners[p] = out.stdout.split(":")[0].strip() if out.returncode == 0 else None
        if _owners[p]:
            return _owners[p]
    return None


def direct_dependencies(packages):
    """Depends and Pre-Depends of the installed packages (every alternative)."""
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Depends}, ${Pre-Depends}\n", *packages],
                         capture_output=True, text=True)
    return {re.split(r"[ :(]", d.strip())[0] for d in re.split(r"[,|\n]", out.stdout) if d.strip()}


def check_libraries(binaries, allowed, root):
    """Returns the packages the binaries' libraries come from."""
    used = set()
    for b in binaries:
        out = subprocess.run(["ldd", b], capture_output=True, text=True)
        if out.returncode != 0:
            raise CheckFailed(f"ldd {b}: {out.stderr.strip()}")
        for line in out.stdout.splitlines():
            line = line.strip()
            if "not found" in line:
                raise CheckFailed(f"{os.path.relpath(b, root)}: {line}")
            m = re.match(r"^(?:\S+ => )?(/\S+) \(0x", line)
            if not m:
                continue  # linux-vdso
            pkg = package_of(m.group(1))
            if pkg is None:
                raise CheckFailed(f"{os.path.relpath(b, root)} loads {m.group(1)}, which no "
                                  f"Debian package installs: the image would not have it")
            if pkg not in allowed:
                raise CheckFailed(f"{os.path.relpath(b, root)} loads {m.group(1)} from package "
                                  f"{pkg}, which the runtime stage does not install (add it to "
                                  f"its apt-get install list)")
            used.add(pkg)
    return used


def image_which(program, root):
    """Where the image's PATH finds program: a staged file, or a host file that the image
    also has if its package is installed there."""
    for d in IMAGE_PATH:
        staged = root + d + "/" + program
        if os.access(staged, os.X_OK):
            return staged, None
        if not d.startswith("/usr/local") and os.access(os.path.join(d, program), os.X_OK):
            return os.path.join(d, program), package_of(os.path.join(d, program))
    return None, None


def check_programs(programs, allowed, root):
    """programs: (who, name). Those not staged must come from an installed package (or one its
    packages depend on: /usr/bin/python3 is python3-minimal's, which python3 pre-depends on)."""
    with_deps = allowed | direct_dependencies(sorted(allowed - BASE_IMAGE_PACKAGES))
    for who, program in programs:
        path, pkg = image_which(program, root)
        if path is None:
            raise CheckFailed(f"{who}: `{program}` is not in the image (not staged, not on "
                              f"this machine)")
        if path.startswith(root):
            continue
        if pkg not in with_deps:
            raise CheckFailed(f"{who}: `{program}` is {path} from package {pkg}, which the "
                              f"runtime stage does not install")


def check_python_imports(scripts, root=None):
    """-I -S: no site-packages, so the script must import with the staged files and the
    standard library alone (the image's python3 has nothing else)."""
    for s in scripts:
        out = subprocess.run(["/usr/bin/python3", "-I", "-S", s, "--help"], capture_output=True,
                             text=True, timeout=30)
        if out.returncode != 0:
            last = (out.stderr.strip().splitlines() or ["?"])[-1]
            raise CheckFailed(f"python3 {s} does not start in the image ({last}): "
                              f"what it imports must be COPY'd by the Dockerfile or be in the "
                              f"standard library")


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


def check_image(args, stages, target, root):
    """Steps 1 and 2 for one target's image alone; returns (Image, packages it has)."""
    image = stage_image(os.path.abspath(args.dockerfile), stages, target,
                        os.path.abspath(args.build), root)
    user = image.last("USER")
    if user is None or user.text.split(":")[0] in ("root", "0"):
        raise CheckFailed(f"target {target}: runs as root (no non-root USER)")
    log(f"1. target {target} staged in {root}: binaries "
        f"{' '.join(os.path.basename(b) for b in image.binaries) or 'none'}; packages "
        f"{' '.join(sorted(image.packages))}; USER {user.text}")
    allowed = image.packages | BASE_IMAGE_PACKAGES
    used = check_libraries(image.binaries, allowed, root)
    unused = sorted(p for p in image.packages - used if p.startswith("lib"))
    if unused:  # not an error (a library may be dlopen'ed), but worth a look
        log(f"note: target {target} installs, and no binary loads: {' '.join(unused)}")
    return image, allowed


def check_release_build(stages, dockerfile):
    """When a stage runs scripts/build-release.sh, the training it runs (scripts/pgo-train.sh)
    must find its tools there: every program of the training script's TOOLS=(...) comes from a
    package that stage installs (or debian:12 has), and both scripts are in the build context.
    Returns the stage's name, or None when no stage runs it (the plain build)."""
    ignore = read_dockerignore(dockerfile)
    for name, stage in stages.items():
        release = release_build(stage, dockerfile)
        if release is None:
            continue
        ins, build_dir, targets = release
        for script in (RELEASE_SCRIPT, TRAINING_SCRIPT):
            if dockerignored(script, ignore):
                raise CheckFailed(f"{ins.where(dockerfile)}: {script} is excluded by the "
                                  f".dockerignore, the build would not find it")
        packages = apt_packages(stage)
        with_deps = packages | BASE_IMAGE_PACKAGES | direct_dependencies(sorted(packages))
        found = []
        for tool in script_array(os.path.join(REPO, TRAINING_SCRIPT), "TOOLS"):
            path = shutil.which(tool, path="/usr/bin:/bin:/usr/sbin:/sbin")
            if path is None:
                raise CheckFailed(f"{TRAINING_SCRIPT} runs `{tool}`, which this machine lacks: "
                                  f"cannot tell which package the {name} stage needs for it")
            pkg = package_of(path)
            if pkg not in with_deps:
                raise CheckFailed(f"{ins.where(dockerfile)}: the release build's training "
                                  f"({TRAINING_SCRIPT}) runs `{tool}` ({path}, package {pkg}), "
                                  f"which stage {name} does not install")
            found.append(f"{tool} ({pkg})")
        log(f"1. stage {name}: the release build ({RELEASE_SCRIPT} {build_dir}: "
            f"{' '.join(sorted(targets))}); its training's tools {', '.join(found)} installed "
            f"there")
        return name
    return None


def ferry_version(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    return out.stdout.strip()


def check_sidecar(image, allowed):
    """The default target is what a sidecar deployment pulls: ferry and its libraries only,
    and a HEALTHCHECK that runs in it."""
    names = sorted(os.path.basename(b) for b in image.binaries)
    if names != ["ferry"]:
        raise CheckFailed(f"default target {image.target}: binaries {names}, expected ferry only")
    used = check_libraries(image.binaries, allowed, image.root)
    extra = sorted(image.packages - used)
    if extra:
        raise CheckFailed(f"default target {image.target}: installs {' '.join(extra)}, which "
                          f"ferry does not load (the sidecar image has ferry and its libraries)")
    cmd, hc = image.cmd(), image.cmd("HEALTHCHECK")
    if not cmd or cmd[0] != "ferry":
        raise CheckFailed(f"default target {image.target}: CMD {cmd} does not run ferry")
    if not hc:
        raise CheckFailed(f"default target {image.target}: no HEALTHCHECK CMD")
    check_programs([("HEALTHCHECK", hc[0]), ("CMD", cmd[0])], allowed, image.root)
    log(f"2. default target {image.target}: ferry and the libraries it loads only; "
        f"HEALTHCHECK {shlex.join(hc)}; staged: {ferry_version(image.binaries[0])}")


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
