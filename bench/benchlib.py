"""Shared helpers of the cell-based bench drivers (bench/cell, bench/sse, bench/forwarded).

stdlib only. The drivers run as bench/<x>/run.py and put bench/ on sys.path to import this.

  Procs          a process group started in their own sessions, stopped together
  find_bin       BUILD/<rel>, or exit with a build hint
  stage_binaries private copies of the binaries (others rebuild the tree while a bench runs)
  Server         a process in its own session with a log (bench/passthrough's servers)
  Cell           ferry-cell: members (name -> emulator/ferry/admin "host:port"), pids per kind
  scrape         /stats counter families, each summed over its label sets
  request        one HTTP request; HTTP errors are answers, not exceptions
  OwnedStreams   fresh streams owned by one member, found by PUT at its emulator
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

FERRY_REL = "proxy/server/ferry"
CELL_BINS = {"ferry-cell": "integration/cell/ferry-cell",
             "streams-emulator": "integration/streams_emulator/streams-emulator"}


# ---------------------------------------------------------------- binaries

def find_bin(build, rel, hint):
    """BUILD/<rel> (or rel itself when absolute); exits with `hint` when it is missing."""
    path = rel if os.path.isabs(rel) else os.path.join(build, rel)
    if not os.access(path, os.X_OK):
        sys.exit(f"run.py: {path} not found ({hint})")
    return path


def stage_binaries(build, tmp, rels, hint, ferry=None):
    """Copies each name -> BUILD/<rel> of `rels`, and the ferry binary (`ferry`, default
    BUILD/proxy/server/ferry), into tmp; returns name -> copy (names: rels' keys + "ferry")."""
    paths = {name: find_bin(build, rel, hint) for name, rel in rels.items()}
    paths["ferry"] = find_bin(build, os.path.abspath(ferry) if ferry else FERRY_REL, hint)
    return {name: shutil.copy2(p, os.path.join(tmp, name)) for name, p in paths.items()}


# ---------------------------------------------------------------- processes

class Procs:
    """Processes started in their own sessions; stop() terminates them newest first, then runs
    the callbacks given to at_stop (e.g. a Cell's stop)."""

    def __init__(self):
        self.procs = []
        self.stops = []

    def at_stop(self, fn):
        self.stops.append(fn)

    def start(self, argv, log, **kw):
        p = subprocess.Popen(argv, stdout=kw.pop("stdout", None) or open(log, "w"),
                             stderr=open(log + ".err", "w"), start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def stop(self, timeout=20):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for fn in reversed(self.stops):
            fn()


def children(pid):
    """Direct children of pid (all its threads')."""
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out.extend(int(x) for x in f.read().split())
        except OSError:
            pass
    return out


def descendants(pid):
    out, todo = [], children(pid)
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children(p))
    return out


def process_tree(root):
    """root and all its descendants (pids)."""
    return [root] + descendants(root)


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


def port_of(addr):
    return int(addr.rsplit(":", 1)[1])


_held_ports = []  # bound, never listening: see free_port()


def free_port():
    """A free 127.0.0.1 port for a server that cannot bind port 0 and report it, held until
    this process exits: a socket stays bound to it with SO_REUSEADDR and never listens. No
    other bind(0) and no connect() on the machine takes a port with a bound socket, so nothing
    can grab it before the server binds it; the server's bind succeeds because ferry, HAProxy,
    nginx, nghttpx, h2o and the bench tools all set SO_REUSEADDR, which shares a port with a
    bound socket that does not listen. (A port picked and released may be taken in between as
    the source port of any connection on the machine.)"""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    _held_ports.append(s)
    return s.getsockname()[1]


def wait_tcp(addr, timeout=15):
    """Returns once something accepts TCP connections at HOST:PORT; RuntimeError after timeout."""
    host, port = addr.rsplit(":", 1)
    end = time.time() + timeout
    while time.time() < end:
        try:
            with socket.create_connection((host, int(port)), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {addr}")


class Server:
    """A process we started in its own session, stderr (and stdout unless given) appended to
    WORKDIR/<name>.log; `pids()` is its current process tree."""

    def __init__(self, name, argv, workdir, stdout=None):
        self.name = name
        self.argv = argv
        self.workdir = workdir
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            argv, cwd=workdir, stdin=subprocess.DEVNULL,
            stdout=stdout if stdout is not None else self.logf, stderr=self.logf,
            start_new_session=True)
        self.port = None

    def pids(self):
        return process_tree(self.proc.pid)

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=10):
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                # Only our own process group (start_new_session made it ours).
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if not self.logf.closed:
            self.logf.close()

    def log_tail(self, n=20):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


class Cell(Server):
    """ferry-cell --members N [--shards S]: a streams-emulator and a ferry beside it per member.

    members: name -> {"emulator", "ferry", "admin"} ("host:port"), in ferry-cell's order;
    member_pids: ("ferry" | "emulator", name) -> pid. ferry-cell's stderr goes to
    tmp/ferry-cell.log."""

    def __init__(self, tmp, ferry_cell, ferry, emulator, members, shards=None, timeout=30):
        self.dir = os.path.join(tmp, "cell")
        os.makedirs(self.dir)
        argv = [ferry_cell, "--members", str(members)]
        if shards is not None:
            argv += ["--shards", str(shards)]
        argv += ["--ferry", ferry, "--emulator", emulator, "--dir", self.dir]
        super().__init__("ferry-cell", argv, tmp, stdout=subprocess.PIPE)
        self.members = {}
        deadline = time.time() + timeout
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace")
            if line.startswith("ferry-cell member "):
                f = line.split()
                kv = dict(x.split("=", 1) for x in f[3:])
                self.members[f[2]] = {k: kv[k] for k in ("emulator", "ferry", "admin")}
            if line.startswith("ferry-cell ready") or time.time() > deadline:
                break
        if len(self.members) != members:
            self.stop()
            raise RuntimeError(f"ferry-cell did not start; log:\n{self.log_tail()}")
        # Which child is which: ferries run with --config .../ferry-<name>.yaml, emulators
        # with --name <name>.
        self.member_pids = {}
        for pid in descendants(self.proc.pid):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = [a.decode(errors="replace") for a in f.read().split(b"\0")]
            except OSError:
                continue
            for name in self.members:
                if any(a.endswith(f"ferry-{name}.yaml") for a in argv):
                    self.member_pids[("ferry", name)] = pid
                elif "--name" in argv[:-1] and argv[argv.index("--name") + 1] == name:
                    self.member_pids[("emulator", name)] = pid
        if len(self.member_pids) != 2 * members:
            self.stop()
            raise RuntimeError(f"could not find the {2 * members} cell processes: "
                               f"{self.member_pids}")

    def names(self):
        return list(self.members)

    def addrs(self, kind):
        """name -> "host:port" of kind ("emulator", "ferry" or "admin")."""
        return {m: a[kind] for m, a in self.members.items()}

    def member_port(self, name, kind):
        return port_of(self.members[name][kind])

    def kind_pids(self, kind):
        return [p for (k, _), p in self.member_pids.items() if k == kind]

    def stop(self, timeout=20):
        super().stop(timeout)  # ferry-cell stops its ferries, then emulators


# ---------------------------------------------------------------- HTTP

def _url(addr, path):
    host = f"127.0.0.1:{addr}" if isinstance(addr, int) else addr
    return f"http://{host}{path}"


def request(addr, method, path, body=None, headers=None, timeout=5.0):
    """addr: "host:port" or a port on 127.0.0.1. (status, headers dict lower-case, body bytes);
    HTTP errors are answers, not exceptions."""
    req = urllib.request.Request(_url(addr, path), method=method,
                                 data=body.encode() if isinstance(body, str) else body,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def scrape(admin, families):
    """family -> value summed over its label sets, from http://<admin>/stats; None when the
    admin does not answer. A family ferry exports without a series yet reads 0; a family it
    does not export at all (no `# TYPE` line: a misspelt name) raises, as the tests' stat
    lookups fail (tests/support/stats/stats_lookup.h)."""
    try:
        with urllib.request.urlopen(_url(admin, "/stats"), timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    exported = {line.split()[2] for line in text.splitlines()
                if line.startswith("# TYPE ") and len(line.split()) >= 3}
    unknown = [c for c in families if c not in exported]
    if unknown:
        raise ValueError(f"{admin}/stats exports no family {', '.join(unknown)}")
    out = {c: 0.0 for c in families}
    for line in text.splitlines():
        for c in families:
            if line.startswith(c) and line[len(c):len(c) + 1] in (" ", "{"):
                try:
                    out[c] += float(line.rsplit(" ", 1)[1])
                except ValueError:
                    pass
    return out


class OwnedStreams:
    """Fresh JSON streams <prefix>-<n> owned by the member whose emulator is `emulator`: a PUT
    there creates the stream (201) when that member owns the name, and a non-owner answers 409
    (not_ring_owner, streams-replay-to), so no ownership math is duplicated here."""

    def __init__(self, emulator, prefix, tries=200):
        self.emulator, self.prefix, self.tries, self.n = emulator, prefix, tries, 0

    def create(self):
        for _ in range(self.tries):
            name = f"{self.prefix}-{self.n}"
            self.n += 1
            st, _, body = request(self.emulator, "PUT", f"/v1/stream/{name}", b"",
                                  {"content-type": "application/json"})
            if st == 201:
                return name
            if st != 409:
                raise RuntimeError(f"PUT {name} at {self.emulator}: {st} {body[:200]!r}")
        raise RuntimeError(f"no stream name owned by {self.emulator} in {self.tries} tries")

    def delete(self, name):
        request(self.emulator, "DELETE", f"/v1/stream/{name}")


def start_cell(args, tmp, procs, bench_bins, hint):
    """Stages the cell's binaries plus `bench_bins` (name -> path in args.build) and starts
    ferry-cell with args.members/args.shards (args.ferry overrides the ferry binary); the cell
    stops with `procs`. Returns (cell, binaries)."""
    binaries = stage_binaries(args.build, tmp, {**CELL_BINS, **bench_bins}, hint, args.ferry)
    cell = Cell(tmp, binaries["ferry-cell"], binaries["ferry"], binaries["streams-emulator"],
                args.members, args.shards)
    procs.at_stop(cell.stop)
    return cell, binaries
