"""The fault campaign's faults (bench/faults/run.py): Campaign kills and restarts members,
stalls them, hands their shards over and back, garbles urls.json and sends SIGHUPs, each time
waiting for the condition that shows the cell recovered (CampaignError when it does not come).

stdlib only. See bench/README.md, "Fault campaign".
"""
import json
import signal
import sys
import time

import benchlib
import handover  # bench/cell/handover.py: ownership, control, the hand-over recipe

HANDOVER_MS = 2000  # the old owner's 503 shard_moving window (covers the copies)
GARBLES = [  # what a bad publication of urls.json looks like; ferry must keep the last good
    ("not JSON", lambda good: b'{"inst-1": "http://127.0.0.1:1",'),
    ("an origin with a path", lambda good: json.dumps(
        {m: u + "/streams" for m, u in good.items()}).encode()),
    ("empty file", lambda good: b""),
]
CONDITION_TIMEOUT_S = 60.0


class CampaignError(Exception):
    """A condition the campaign waits for did not come (a violation: the cell did not recover)."""


def wait_until(pred, what, timeout=CONDITION_TIMEOUT_S):
    """Polls pred() until it is true (a condition, not a schedule); CampaignError after timeout."""
    benchlib.wait_until(pred, what, timeout, CampaignError)


class Campaign:
    def __init__(self, args, fleet, streams, producers, readers, tally):
        self.args, self.fleet, self.streams = args, fleet, streams
        self.producers, self.readers, self.tally = producers, readers, tally
        self.faults = {}
        self.notes = []
        self.t0 = time.monotonic()

    def log(self, text):
        acked = sum(p.acked for p in self.producers)
        print(f"[{time.monotonic() - self.t0:6.1f} s] {text} (acked {acked})", file=sys.stderr,
              flush=True)

    def count(self, kind):
        self.faults[kind] = self.faults.get(kind, 0) + 1

    def producers_of(self, member):
        """Producers whose stream `member` owns now."""
        return [p for p in self.producers if self.fleet.owner(p.stream) == member]

    def wait_progress(self, producers, n, what):
        """Every producer in `producers` acknowledged n more appends (the cell recovered)."""
        base = {p: p.acked for p in producers}
        wait_until(lambda: all(p.acked >= base[p] + n for p in producers),
                   f"{n} more acknowledged appends from every producer {what}")

    def wait_failures(self, producers, n, what):
        """Every producer in `producers` had n attempts fail (the fault bit, on several of the
        paths: attempts rotate over the ferries); a note otherwise."""
        base = {p: p.failures for p in producers}
        try:
            wait_until(lambda: all(p.failures >= base[p] + n for p in producers), what,
                       timeout=15)
        except CampaignError as e:
            self.notes.append(f"fault did not bite: {e}")

    def kill(self, m, kinds):
        """SIGKILL `kinds` of member m while its streams take appends, then start them again
        (the emulator replays its journal) and wait until its producers move on."""
        victims = self.producers_of(m)
        self.log(f"kill {'+'.join(kinds)} of {m} ({len(victims)} producers on its streams)")
        for kind in kinds:
            self.fleet.signal(kind, m, signal.SIGKILL)
        self.count("kill " + "+".join(kinds))
        self.wait_failures(victims, 4, f"4 failed appends from every producer on {m}'s streams "
                           "after the kill")
        for kind in ("emulator", "ferry"):
            if kind in kinds:
                self.fleet.start(kind, m)
        self.count("restart " + "+".join(kinds))
        self.wait_progress(victims or self.producers, 3, f"after {m} restarted")

    def stall(self, m, kinds, seconds):
        """SIGSTOP `kinds` of member m for `seconds` (the fault's length, not a wait for
        anything), then SIGCONT and wait until its producers move on."""
        victims = self.producers_of(m)
        self.log(f"SIGSTOP {'+'.join(kinds)} of {m} for {seconds:g} s")
        for kind in kinds:
            self.fleet.signal(kind, m, signal.SIGSTOP)
        self.count("stop " + "+".join(kinds))
        time.sleep(seconds)
        for kind in kinds:
            self.fleet.signal(kind, m, signal.SIGCONT)
        self.wait_progress(victims or self.producers, 3, f"after {m} was continued")

    def move(self, new_members):
        """The emulators' hand-over (bench/cell/handover.py's recipe, for every campaign stream
        whose owner changes): the old owners get the new members with handover_ms (503
        shard_moving, then 409 naming the new owner), each moving stream is copied from its old
        owner to its new one (GET/PUT /v1/debug/stream: data and producer state, the stand-in
        for shared storage), then every other emulator gets the new members."""
        old = self.fleet.members_now
        moving = [(s, self.fleet.owner(s, old), self.fleet.owner(s, new_members))
                  for s in self.streams]
        moving = [x for x in moving if x[1] != x[2]]
        sources = sorted({o for _, o, _ in moving})
        if sources and set(sources) & {n for _, _, n in moving}:
            raise RuntimeError("a member is both a source and a destination of one hand-over")
        emu = self.fleet.emulators
        for src in sources:
            handover.control(emu[src], {"members": new_members, "handover_ms": HANDOVER_MS})
        for s, o, n in moving:
            st, _, exported = benchlib.request(emu[o], "GET", f"/v1/debug/stream?stream={s}",
                                               headers={"x-control-token":
                                                        handover.CONTROL_TOKEN})
            if st != 200:
                raise CampaignError(f"export of {s} at {o}: {st} {exported[:200]!r}")
            st, _, body = benchlib.request(emu[n], "PUT", f"/v1/debug/stream?stream={s}",
                                           exported, {"x-control-token": handover.CONTROL_TOKEN})
            if st != 204:
                raise CampaignError(f"import of {s} at {n}: {st} {body[:200]!r}")
        for m in self.fleet.members:
            if m not in sources:
                handover.control(emu[m], {"members": new_members})
        self.fleet.members_now = list(new_members)
        return moving

    def hand_over(self, m):
        """Hands m's shards to the others, waits until their producers move on there, then
        gives them back to m (both directions are hand-overs under appends and feeds)."""
        victims = self.producers_of(m)
        self.log(f"hand-over: {m}'s shards to the other members")
        moved = self.move([x for x in self.fleet.members if x != m])
        self.count("hand-over")
        self.wait_progress(victims or self.producers, 3, f"after {m}'s shards moved away")
        self.log(f"hand-over: {m}'s shards back to {m}")
        moved += self.move(list(self.fleet.members))
        self.count("hand-over")
        self.wait_progress(victims or self.producers, 3, f"after {m}'s shards came back")
        return moved

    def garble(self, kinds):
        """Publishes a bad urls.json (each kind in turn): every ferry must read it, refuse it and
        keep the last good table; then the good one is published again and every ferry reads
        it as good."""
        good = json.dumps(self.fleet.good_urls).encode()
        for name, make in kinds:
            self.log(f"garble urls.json: {name}")
            fam = "ferry_peer_table_reload_failures_total"
            base = {m: self.fleet.stat(m, fam) or 0 for m in self.fleet.members}
            self.fleet.write_urls(make(self.fleet.good_urls))
            self.count("garble urls.json")
            wait_until(lambda: all((self.fleet.stat(m, fam) or 0) > base[m]
                                   for m in self.fleet.members),
                       f"every ferry to refuse urls.json ({name})")
            self.fleet.write_urls(good)
            self.count("restore urls.json")
            wait_until(lambda: all(self.peer_table_good(m) for m in self.fleet.members),
                       "every ferry to read the restored urls.json as good")
        self.wait_progress(self.producers, 2, "after urls.json was restored")

    def peer_table_good(self, m):
        p = self.fleet.peers(m)
        return p.get("last_error", "x") is None and set(p.get("peers", {})) == set(
            self.fleet.members)

    def sighups(self, n):
        """n SIGHUPs, round robin over the ferries, back to back: each reloads the fleet file
        (and TLS files) and must keep serving with the same good table."""
        self.log(f"{n} SIGHUPs to the ferries")
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        versions = {m: self.fleet.peers(m).get("version") for m in self.fleet.members}
        for i in range(n):
            self.fleet.signal("ferry", self.fleet.members[i % len(self.fleet.members)],
                              signal.SIGHUP)
            self.count("SIGHUP")

        def reloaded(m):
            p = self.fleet.peers(m)
            return (p.get("read_at", "") >= since and p.get("version") == versions[m]
                    and self.peer_table_good(m))
        wait_until(lambda: all(reloaded(m) for m in self.fleet.members),
                   "every ferry to have reloaded its unchanged peer table after the SIGHUPs")
        self.wait_progress(self.producers, 2, "after the SIGHUPs")

    def cycle(self, c):
        """Every fault once; targets rotate with the cycle number c."""
        ms = self.fleet.members
        t = lambda i: ms[(c + i) % len(ms)]
        self.kill(t(0), ["emulator"])
        self.kill(t(1), ["ferry", "emulator"])
        self.stall(t(2), ["emulator"] if c % 2 == 0 else ["ferry", "emulator"],
                   self.args.stop_seconds)
        self.hand_over(t(3))
        self.garble(GARBLES[:2] if self.args.mode == "short" else GARBLES)
        self.sighups(self.args.sighups)
