"""The cell: ferry-cell (a streams-emulator and a ferry beside it per member), requests to its
members, /stats scrapes, streams owned by one member."""
import os
import subprocess
import time
import urllib.error
import urllib.request

from .procs import CELL_BINS, Server, descendants, port_of, stage_binaries


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
