"""Cell bench arm `handover` (run.py --handover on, local launcher; project issue 15).

Hand-over under continuous appends with owner routing on. Idempotent producers append to one
byte stream through the owner-routing ferries (the arm ferry-routing's ferry set) while the
bench, a third of the way into the run, hands the stream's shard over from its owner to
another member exactly as tests/integration/forwarding/owner_routing_handover_test.cc does:

  1. POST /v1/debug/control {"members": <the others>, "handover_ms": 500} at the old owner: for
     500 ms it answers 503 shard_moving for the stream, then 409 naming the new owner;
  2. GET /v1/debug/stream at the old owner, PUT it at the new owner (data + producer state:
     the emulators' stand-in for a fleet's shared storage, integration/streams_emulator/
     README.md);
  3. the new members at every other emulator (until then they name the old owner).

The old owner leaves the member set (as in the test), which moves its other shards too: the
arm runs after every other arm and the load generator's ceiling, and nothing runs after it.

Producers (Producer-Id p<i>, Producer-Epoch 0, Producer-Seq 0, 1, ...; body "p<i>-<seq>;")
keep one append in flight and send the same seq again until it is acknowledged (2xx): a retry
of an append that was applied is a duplicate the owner acknowledges without appending it
(docs/streams-instance.md, "Producers"). They go straight to the ferries, not through HAProxy
and the delay relay: attempt k of producer i goes to ferry (i + k) mod N, so every producer
crosses every ferry (as a round-robin edge would spread it, but deterministically, so every
ferry's routing table sees every producer and the per-ferry counters add up), and a retry
goes to the next ferry. The edge's RTT (141 ms by default) would only cap a closed-loop
producer at ~7 appends/s and HAProxy adds nothing to the property measured, which is between
the ferries and the instances.

The producers are Python threads, not cell-loadgen: this is a correctness arm. What it needs
is every acknowledgement's seq and time per producer, and a few thousand appends/s (on the
2-core bench machine, ferry and the emulators take most of the CPU anyway) keep several
appends in flight through every step of the hand-over; cell-loadgen's closed loop over random
streams knows nothing of producers, and its speed is not what this arm measures.

Afterwards the stream is read back at the new owner and checked: every acknowledged append
exactly once, each producer's in seq order. run() returns the counts; ok is False (the run
exits 1) when any acknowledged append is missing, duplicated or out of order, or a producer
gave up on a seq.
"""
import hashlib
import json
import re
import threading
import time
import http.client
import urllib.request

import benchlib

CONTROL_TOKEN = "cell-control-token"  # ferry-cell's default (integration/cell/cell.h)
HANDOVER_MS = 500  # as the test: the old owner's 503 shard_moving window
BACKOFF_S = 0.02  # a client's back-off before resending a seq (503 says Retry-After: 1)
GIVE_UP_S = 20.0  # a seq not acknowledged for this long: the producer gives up (arm fails)
ROUTING_FAMILY = "ferry_owner_routing_requests_total"
OUTCOMES = ("right", "wrong_then_corrected", "unreachable", "failed", "wrong_over_limit")


# ---------------------------------------------------------------- ownership

def owner_index(name, shards, members):
    """The emulators' ownership (integration/streams_emulator/ownership.cc): shard = the first
    log2(shards) bits of SHA-256(name) as '0'/'1'; owner = the member with the highest
    FNV-1a-32 of "<shard> <member>", the first listed on a tie. Checked against the
    emulators at run time: the stream's PUT must land (201) at the owner computed here, and
    after the move the old owner's 409 must name the new owner computed here."""
    digest = hashlib.sha256(name.encode()).digest()
    bits = 0
    while (1 << bits) < shards:
        bits += 1
    shard = "".join("1" if (digest[i // 8] >> (7 - i % 8)) & 1 else "0" for i in range(bits))
    best, best_score = -1, 0
    for i, m in enumerate(members):
        h = 0x811C9DC5
        for c in f"{shard} {m}".encode():
            h = ((h ^ c) * 0x01000193) & 0xFFFFFFFF
        if best < 0 or h > best_score:
            best, best_score = i, h
    return best


# ---------------------------------------------------------------- producers

class Producer(threading.Thread):
    """One idempotent producer; acks: [(seq, monotonic time)], statuses: non-2xx answers by
    status (0: no answer: connection refused, reset, timeout)."""

    def __init__(self, index, ferries, stream, stop_at):
        super().__init__(daemon=True)
        self.index, self.ferries, self.stream, self.stop_at = index, ferries, stream, stop_at
        self.pid = f"p{index}"
        self.acks, self.statuses, self.replay_409s = [], {}, 0
        self.attempts, self.per_ferry = 0, [0] * len(ferries)
        self.gave_up = None  # the seq given up on
        self.conns = [None] * len(ferries)

    def post(self, f, seq):
        """(status, streams-replay-to or None) of one attempt at ferry f; status 0: no answer
        (the connection is dropped; the next attempt opens a new one)."""
        try:
            if self.conns[f] is None:
                host, port = self.ferries[f].rsplit(":", 1)
                self.conns[f] = http.client.HTTPConnection(host, int(port), timeout=10)
            c = self.conns[f]
            c.request("POST", f"/v1/stream/{self.stream}", f"{self.pid}-{seq};".encode(),
                      {"content-type": "text/plain", "producer-id": self.pid,
                       "producer-epoch": "0", "producer-seq": str(seq)})
            r = c.getresponse()
            r.read()
            if r.will_close:
                c.close()
                self.conns[f] = None
            return r.status, r.getheader("streams-replay-to")
        except (OSError, http.client.HTTPException):
            if self.conns[f] is not None:
                self.conns[f].close()
            self.conns[f] = None
            return 0, None

    def run(self):
        k, seq = self.index, 0
        while time.monotonic() < self.stop_at:
            deadline = time.monotonic() + GIVE_UP_S
            while True:
                f = k % len(self.ferries)
                k += 1
                self.attempts += 1
                self.per_ferry[f] += 1
                status, replay_to = self.post(f, seq)
                if 200 <= status < 300:
                    break
                self.statuses[status] = self.statuses.get(status, 0) + 1
                self.replay_409s += status == 409 and bool(replay_to)
                if time.monotonic() > deadline:
                    self.gave_up = seq
                    return
                time.sleep(BACKOFF_S)
            self.acks.append((seq, time.monotonic()))
            seq += 1
        for c in self.conns:
            if c is not None:
                c.close()


# ---------------------------------------------------------------- emulator and ferry calls

def control(emulator, body):
    st, _, answer = benchlib.request(emulator, "POST", "/v1/debug/control", json.dumps(body),
                                     {"x-control-token": CONTROL_TOKEN,
                                      "content-type": "application/json"})
    if st != 200:
        raise RuntimeError(f"control {body} at {emulator}: {st} {answer[:200]!r}")


def routing_outcomes(admins):
    """name -> {outcome: ferry_owner_routing_requests_total}, plus "forwards" (forwards after
    a local 409: ferry_forward_attempts_total), from each ferry's /stats."""
    out = {}
    for m, admin in admins.items():
        with urllib.request.urlopen(f"http://{admin}/stats", timeout=5) as r:
            text = r.read().decode()
        row = {o: 0.0 for o in OUTCOMES}
        for o, v in re.findall(r'^%s\{outcome="([a-z_]+)"\} (\S+)$' % ROUTING_FAMILY, text, re.M):
            row[o] = float(v)
        row["forwards"] = sum(float(v) for v in re.findall(
            r"^ferry_forward_attempts_total(?:\{[^}]*\})? (\S+)$", text, re.M))
        out[m] = row
    return out


def entries(data):
    """b"p0-0;p1-0;..." -> [("p0", 0), ("p1", 0), ...]; an entry of another shape is
    ("?", text)."""
    out = []
    for e in data.split(b";")[:-1]:
        m = re.fullmatch(rb"(p\d+)-(\d+)", e)
        out.append((m.group(1).decode(), int(m.group(2))) if m else ("?", e.decode("replace")))
    return out


# ---------------------------------------------------------------- the arm

def run(members, emulators, ferries, admins, shards, producers, duration, prefix):
    """Runs the arm on the cell's emulators and the owner-routing ferries (name -> "host:port";
    admins: those ferries' admin addresses). Returns the counts (JSON-able), "ok" among them."""
    stream, old = fresh_stream(members, emulators, shards, prefix)
    moved = [m for m in members if m != old]
    new = moved[owner_index(stream, shards, moved)]
    names = list(ferries)
    before = routing_outcomes(admins)

    t0 = time.monotonic()
    threads = [Producer(i, [ferries[m] for m in names], stream, t0 + duration)
               for i in range(producers)]
    for t in threads:
        t.start()
    # A schedule, not a synchronisation: the hand-over starts a third of the way in.
    time.sleep(max(0.0, t0 + duration / 3 - time.monotonic()))
    h0, h_copied, h_told, exported = hand_over(emulators, stream, old, new, moved)
    for t in threads:
        t.join(timeout=duration + GIVE_UP_S + 30)
    stuck = [t.pid for t in threads if t.is_alive()]
    after = routing_outcomes(admins)
    data, old_names = read_back(emulators, stream, old, new)
    old_data = bytes.fromhex(json.loads(exported)["data_hex"])
    in_stream = entries(data)
    n_old = len(entries(old_data))

    res = {"stream": stream, "old_owner": old, "new_owner": new, "members_after": moved,
           "old_owner_409_names": old_names, "producers": producers, "duration_s": duration,
           "handover_ms": HANDOVER_MS, "handover_at_s": h0 - t0,
           "copy_ms": (h_copied - h0) * 1e3, "members_told_ms": (h_told - h0) * 1e3,
           "ferries": names, "attempts_per_ferry": {m: sum(t.per_ferry[i] for t in threads)
                                                    for i, m in enumerate(names)}}
    acked = sum(len(t.acks) for t in threads)
    check = check_entries(threads, in_stream)
    attempts = sum(t.attempts for t in threads)
    delta = {m: {k: after[m][k] - before[m][k] for k in after[m]} for m in names}
    res.update({
        "acknowledged": acked, "in_stream": len(in_stream), "in_stream_old_owner": n_old,
        "in_stream_new_owner": len(in_stream) - n_old,
        "copy_is_prefix": data.startswith(old_data),
        **check,
        "attempts": attempts, "retries": attempts - acked,
        "client_statuses": client_statuses(threads),
        "client_409_with_replay_to": sum(t.replay_409s for t in threads),
        "gave_up": {t.pid: t.gave_up for t in threads if t.gave_up is not None},
        "still_running": stuck,
        **ack_rates(threads, t0, h0, max(h_told, h0 + HANDOVER_MS / 1e3), duration),
        "owner_routing_by_ferry": delta,
        "owner_routing": {k: sum(delta[m][k] for m in names) for k in OUTCOMES + ("forwards",)},
    })
    res["ok"] = (check["duplicates"] == 0 and check["missing"] == 0
                 and check["out_of_order"] == 0 and not res["gave_up"] and not stuck
                 and check["foreign_entries"] == 0 and res["copy_is_prefix"] and acked > 0
                 and old_names == new)
    return res


def fresh_stream(members, emulators, shards, prefix):
    """(stream, its owner): a fresh byte stream whose owner the computed ownership names
    (checked by the PUT: a non-owner answers 409)."""
    for n in range(1000):
        stream = f"{prefix}-handover-{n}"
        old = members[owner_index(stream, shards, members)]
        st, _, body = benchlib.request(emulators[old], "PUT", f"/v1/stream/{stream}", b"",
                                       {"content-type": "text/plain"})
        if st == 201:
            return stream, old
        if st != 200:  # 200: left over from an earlier arm on the same cell; take another
            raise RuntimeError(f"PUT {stream} at its owner {old}: {st} {body[:200]!r}")
    raise RuntimeError("no fresh handover stream name")


def hand_over(emulators, stream, old, new, moved):
    """The three steps of the module's docstring. Returns the times (monotonic) it started,
    the copy was done and every member was told, and the old owner's export (JSON)."""
    h0 = time.monotonic()
    control(emulators[old], {"members": moved, "handover_ms": HANDOVER_MS})
    st, _, exported = benchlib.request(emulators[old], "GET", f"/v1/debug/stream?stream={stream}",
                                       headers={"x-control-token": CONTROL_TOKEN})
    if st != 200:
        raise RuntimeError(f"export of {stream} at {old}: {st} {exported[:200]!r}")
    st, _, body = benchlib.request(emulators[new], "PUT", f"/v1/debug/stream?stream={stream}",
                                   exported, {"x-control-token": CONTROL_TOKEN})
    if st != 204:
        raise RuntimeError(f"import of {stream} at {new}: {st} {body[:200]!r}")
    h_copied = time.monotonic()
    for m in moved:
        control(emulators[m], {"members": moved})
    return h0, h_copied, time.monotonic(), exported


def read_back(emulators, stream, old, new):
    """The whole stream at the new owner (the copy, then what it appended), and whom the old
    owner's 409 names (or why there was none)."""
    st, _, data = benchlib.request(emulators[new], "GET", f"/v1/stream/{stream}?offset=-1",
                                   timeout=30)
    if st != 200:
        raise RuntimeError(f"read-back of {stream} at {new}: {st} {data[:200]!r}")
    st, hdrs, _ = benchlib.request(emulators[old], "GET", f"/v1/stream/{stream}?offset=-1")
    return data, (hdrs.get("streams-replay-to") if st == 409 else f"{st}, no 409")


def check_entries(threads, in_stream):
    """The stream's entries against the producers' acknowledgements: duplicates, missing
    acknowledged seqs, seqs out of order, applied but unacknowledged, foreign entries."""
    by_producer = {}
    foreign = 0
    for pid, seq in in_stream:
        if pid == "?":
            foreign += 1
        else:
            by_producer.setdefault(pid, []).append(seq)
    dup = missing = disorder = unacked = 0
    for t in threads:
        got = by_producer.pop(t.pid, [])
        n_acked = len(t.acks)  # seqs 0 .. n_acked-1, one in flight at a time
        seen = set(got)
        dup += len(got) - len(seen)
        missing += sum(1 for s in range(n_acked) if s not in seen)
        disorder += sum(1 for a, b in zip(got, got[1:]) if b < a)
        unacked += sum(1 for s in seen if s >= n_acked)
    foreign += sum(len(v) for v in by_producer.values())
    return {"duplicates": dup, "missing": missing, "out_of_order": disorder,
            "applied_unacknowledged": unacked, "foreign_entries": foreign}


def client_statuses(threads):
    statuses = {}
    for t in threads:
        for s, n in t.statuses.items():
            statuses[str(s)] = statuses.get(str(s), 0) + n
    return statuses


def ack_rates(threads, t0, h0, h1, duration):
    """Acknowledgements per second before / during / after the hand-over ("during": from the
    first control request, h0, until h1: the old owner's 503 window is over and every member
    knows the new members, whichever is later), and the longest pause between two."""
    times = sorted(ts for t in threads for _, ts in t.acks)
    end = max([t0 + duration] + times[-1:])
    count = lambda a, b: sum(1 for x in times if a <= x < b)  # noqa: E731
    gaps = [(b - a, a) for a, b in zip([t0] + times, times)]
    longest = max(gaps) if gaps else (0.0, t0)
    return {
        "appends_per_s": {"before": count(t0, h0) / max(h0 - t0, 1e-9),
                          "during": count(h0, h1) / max(h1 - h0, 1e-9),
                          "after": count(h1, end + 1) / max(end - h1, 1e-9)},
        "window_s": {"before": h0 - t0, "during": h1 - h0, "after": end - h1},
        "longest_pause_ms": longest[0] * 1e3, "longest_pause_at_s": longest[1] - t0,
    }


def failure(res):
    """Why the arm failed, one line ("" when it passed)."""
    if res["ok"]:
        return ""
    why = [f"{res['missing']} acknowledged appends missing", f"{res['duplicates']} duplicated",
           f"{res['out_of_order']} out of order"]
    if res["gave_up"]:
        why.append(f"producers gave up on seqs {res['gave_up']}")
    if res["still_running"]:
        why.append(f"producers still running: {res['still_running']}")
    if res["foreign_entries"]:
        why.append(f"{res['foreign_entries']} entries no producer wrote")
    if not res["copy_is_prefix"]:
        why.append("the new owner's stream does not start with the old owner's copy")
    if res["old_owner_409_names"] != res["new_owner"]:
        why.append(f"the old owner's 409 names {res['old_owner_409_names']}, "
                   f"not {res['new_owner']}")
    if not res["acknowledged"]:
        why.append("nothing acknowledged")
    return "arm handover FAILED: " + ", ".join(why)


def report_lines(res):
    """Markdown for bench/results/cell.md."""
    r, s = res["appends_per_s"], res["client_statuses"]
    routed = res["owner_routing"]
    other = {k: v for k, v in s.items() if k not in ("409", "503")}
    return [
        "",
        f"**Hand-over under continuous appends** (arm handover, owner routing on): "
        f"{res['producers']} idempotent producers straight to the {len(res['ferries'])} "
        f"owner-routing ferries (each producer's attempts rotate over them; their peer table names "
        f"the owners' {res.get('routing_peers', 'ferries')}), {res['duration_s']:g} s; "
        f"at {res['handover_at_s']:.2f} s the shard of `{res['stream']}` moved from "
        f"{res['old_owner']} to {res['new_owner']} (handover_ms {res['handover_ms']}; copy done "
        f"after {res['copy_ms']:.0f} ms, every member told after {res['members_told_ms']:.0f} ms).",
        "",
        "| producers | acknowledged | in the stream (old / new owner) | duplicates | missing "
        "| out of order | client 409s / 503s / other | retries | appends/s before / during / "
        "after | routed right / corrected / unreachable / failed / over limit | forwards |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        f"| {res['producers']} | {res['acknowledged']} | {res['in_stream']} "
        f"({res['in_stream_old_owner']} / {res['in_stream_new_owner']}) | {res['duplicates']} "
        f"| {res['missing']} | {res['out_of_order']} | {s.get('409', 0)} / {s.get('503', 0)} / "
        f"{sum(other.values())}{' ' + json.dumps(other) if other else ''} | {res['retries']} "
        f"| {r['before']:.0f} / {r['during']:.0f} / {r['after']:.0f} | "
        + " / ".join(f"{routed[o]:.0f}" for o in OUTCOMES) + f" | {routed['forwards']:.0f} |",
        "",
        f"Hand-over: applied but never acknowledged {res['applied_unacknowledged']}; longest "
        f"pause between acknowledgements {res['longest_pause_ms']:.0f} ms (at "
        f"{res['longest_pause_at_s']:.2f} s); attempts per ferry "
        + ", ".join(f"{m} {n}" for m, n in res["attempts_per_ferry"].items())
        + "; routed requests by outcome per ferry (ferry_owner_routing_requests_total): "
        + "; ".join(f"{m} " + "/".join(f"{v[o]:.0f}" for o in OUTCOMES)
                    for m, v in res["owner_routing_by_ferry"].items())
        + f". Every acknowledged append in the stream exactly once and in order: "
        f"**{'PASS' if res['ok'] else 'FAIL'}**.",
    ]
