#!/usr/bin/env python3
"""bench/fanout's SSE subscribers: one asyncio process (run.py starts one per core) holding
thousands of `GET /v1/stream/<s>?offset=<o>&live=sse` feeds over HTTP/1.1 to 127.0.0.1.

  subscribers.py --spec SPEC.json --out RESULT.json

SPEC: {"emulators": {member: "host:port"}, "subs": [[stream, "ferry"|"direct", "host:port",
start_offset], ...]}. The stream's messages are {"i": <offset>, "t": <CLOCK_MONOTONIC ns of the
append>} (run.py's appenders; message i sits at offset i), so every subscriber knows exactly
what a direct read from its start offset gives: i = start, start+1, ... Each message is checked
against that (a gap counts as missing, an i below the next expected one as a duplicate or out
of order) and every control frame's streamNextOffset against the messages before it.

(--inject skip|duplicate plants a violation: an ended feed resumes one event late or early.)

A feed that ends (EOF, reset, a non-200 answer) is counted and opened again at the last
streamNextOffset delivered: a "ferry" subscriber at the same ferry, a "direct" one at the
member it last read from, following a 409's streams-replay-to to the new owner; a 503 waits
its Retry-After (capped at 1 s). This is what a client does today when its feed ends.

Protocol with run.py: prints "ready" once every feed delivered its first control frame; then
reads one line from stdin: {"tails": {stream: offset}, "handovers": [[t_ns, [moved stream, ...]], ...], "window":
[t0_ns, t1_ns]} (latencies are kept for the events appended in the window) and waits
until every subscriber has reached its stream's tail (or --drain-timeout), writes RESULT
and prints "done".
"""
import argparse
import array
import asyncio
import json
import resource
import sys
import time

RECONNECT_BACKOFF_S = 0.05


class Sub:
    __slots__ = ("stream", "mode", "addr", "next", "start", "missing", "dups", "control_bad",
                 "ends", "connects", "statuses", "t_app", "t_recv", "ready", "end_times", "shift")

    def __init__(self, stream, mode, addr, start):
        self.stream, self.mode, self.addr = stream, mode, addr
        self.next = self.start = start
        self.missing = self.dups = self.control_bad = self.ends = self.connects = 0
        self.statuses = {}
        self.t_app, self.t_recv = array.array("q"), array.array("q")
        self.ready = False
        self.end_times = []
        self.shift = 0


class Feed(asyncio.Protocol):
    """One HTTP/1.1 SSE response; parses the head, chunked (or close-delimited) framing and
    the SSE frames."""

    def __init__(self, client, sub):
        self.client, self.sub = client, sub
        self.buf = b""
        self.head = None  # (status, headers) once parsed
        self.chunked = False
        self.chunk_left = 0  # bytes left in the current chunk; -1: expecting a size line
        self.sse = b""
        self.closed = asyncio.get_running_loop().create_future()
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        s = self.sub
        offset = s.next + s.shift
        req = (f"GET /v1/stream/{s.stream}?offset={offset:016d}&live=sse HTTP/1.1\r\n"
               f"Host: {s.addr}\r\nAccept: text/event-stream\r\n\r\n")
        transport.write(req.encode())

    def data_received(self, data):
        now = time.monotonic_ns()
        self.buf += data
        if self.head is None:
            i = self.buf.find(b"\r\n\r\n")
            if i < 0:
                return
            lines = self.buf[:i].decode("latin-1").split("\r\n")
            self.buf = self.buf[i + 4:]
            status = int(lines[0].split()[1])
            headers = {}
            for ln in lines[1:]:
                k, _, v = ln.partition(":")
                headers[k.strip().lower()] = v.strip()
            self.head = (status, headers)
            self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
            self.chunk_left = -1
            if status != 200:
                self.transport.close()
                return
            self.sub.shift = 0
        if self.chunked:
            buf = self.buf
            while True:
                if self.chunk_left > 0:
                    take = buf[:self.chunk_left]
                    self.sse += take
                    buf = buf[len(take):]
                    self.chunk_left -= len(take)
                    if self.chunk_left > 0:
                        break
                    self.chunk_left = -2  # the CRLF after the chunk's data
                if self.chunk_left == -2:
                    if len(buf) < 2:
                        break
                    buf, self.chunk_left = buf[2:], -1
                j = buf.find(b"\r\n")
                if j < 0:
                    break
                size = int(buf[:j].split(b";")[0], 16)
                buf = buf[j + 2:]
                if size == 0:
                    self.transport.close()
                    break
                self.chunk_left = size
            self.buf = buf
        else:
            self.sse += self.buf
            self.buf = b""
        self.frames(now)

    def frames(self, now):
        s = self.sub
        while True:
            i = self.sse.find(b"\n\n")
            if i < 0:
                return
            frame, self.sse = self.sse[:i], self.sse[i + 2:]
            if frame.startswith(b":"):
                continue
            event, data = b"", b""
            for ln in frame.split(b"\n"):
                if ln.startswith(b"event:"):
                    event = ln[6:].strip()
                elif ln.startswith(b"data:"):
                    data += ln[5:]
            if event == b"data":
                for m in json.loads(data):
                    n = m["i"]
                    if n == s.next:
                        s.next += 1
                        s.t_app.append(m["t"])
                        s.t_recv.append(now)
                    elif n < s.next:
                        s.dups += 1
                    else:
                        s.missing += n - s.next
                        s.next = n + 1
            elif event == b"control":
                c = json.loads(data)
                if int(c["streamNextOffset"]) != s.next:
                    s.control_bad += 1
                    s.next = int(c["streamNextOffset"])
                if not s.ready:
                    s.ready = True
                    self.client.became_ready()
                if s.end_times and len(s.end_times[-1]) == 1:
                    s.end_times[-1].append(now)  # (end, first frame of the next feed)

    def connection_lost(self, exc):
        if not self.closed.done():
            self.closed.set_result(self.head[0] if self.head else 0)


class Client:
    def __init__(self, spec, inject):
        self.inject = inject
        self.emulators = spec["emulators"]
        self.subs = [Sub(*x) for x in spec["subs"]]
        self.n_ready = 0
        self.all_ready = asyncio.Event()
        self.stopping = False

    def became_ready(self):
        self.n_ready += 1
        if self.n_ready == len(self.subs):
            self.all_ready.set()

    async def follow(self, s):
        loop = asyncio.get_running_loop()
        while not self.stopping:
            host, port = s.addr.rsplit(":", 1)
            s.connects += 1
            try:
                _, feed = await loop.create_connection(lambda: Feed(self, s), host, int(port))
                status = await feed.closed
            except OSError:
                status, feed = 0, None
            if self.stopping:
                return
            s.statuses[status] = s.statuses.get(status, 0) + 1
            if status == 200:
                s.ends += 1
                s.end_times.append([time.monotonic_ns()])
                s.shift = self.inject  # --inject: ask for the wrong offset (must be caught)
                continue  # at once, from the last offset delivered
            wait = RECONNECT_BACKOFF_S
            if feed is not None and feed.head:
                h = feed.head[1]
                if status == 409 and s.mode == "direct" and h.get("streams-replay-to") in \
                        self.emulators:
                    s.addr = self.emulators[h["streams-replay-to"]]
                    continue
                if status == 503:
                    wait = min(1.0, float(h.get("retry-after", "1")))
            await asyncio.sleep(wait)


async def main_async(args):
    with open(args.spec) as f:
        spec = json.load(f)
    client = Client(spec, {"": 0, "skip": 1, "duplicate": -1}[args.inject])
    loop = asyncio.get_running_loop()
    tasks = []
    for i, s in enumerate(client.subs):
        tasks.append(loop.create_task(client.follow(s)))
        if i % 200 == 199:
            await asyncio.sleep(0.01)  # spread the connects (the listen backlogs)
    try:
        await asyncio.wait_for(client.all_ready.wait(), args.ready_timeout)
    except asyncio.TimeoutError:
        print(f"not ready: {client.n_ready} of {len(client.subs)} feeds delivered their first "
              f"control frame after {args.ready_timeout:g} s; answers so far "
              f"{statuses_of(client.subs, lambda st: st)}", flush=True)
        return
    print("ready", flush=True)
    line = await loop.run_in_executor(None, sys.stdin.readline)
    cmd = json.loads(line)
    tails = cmd["tails"]
    deadline = time.monotonic() + args.drain_timeout
    while time.monotonic() < deadline and any(s.next < tails[s.stream] for s in client.subs):
        await asyncio.sleep(0.1)
    client.stopping = True
    for t in tasks:
        t.cancel()
    # latency: events appended in the window (all feeds open)
    lat, recovery = timings(client.subs, cmd["window"], cmd.get("handovers", []))
    with open(args.out, "w") as f:
        json.dump(result_of(client.subs, tails, recovery), f)
    with open(args.out + ".lat", "wb") as f:
        lat.tofile(f)
    print("done", flush=True)


def statuses_of(subs, key=str):
    """The answers every subscriber got, summed: key(status) -> count."""
    statuses = {}
    for s in subs:
        for st, n in s.statuses.items():
            statuses[key(st)] = statuses.get(key(st), 0) + n
    return statuses


def timings(subs, window, handovers):
    """(latencies in ns of the events appended in the window, per (subscriber of a moved
    stream, hand-over) the first receipt of an event appended after the hand-over began minus
    that beginning, -1 for none)."""
    w0, w1 = window
    lat = array.array("q")
    recovery = []
    for s in subs:
        for a, r in zip(s.t_app, s.t_recv):
            if w0 <= a <= w1:
                lat.append(r - a)
        for h, moved in handovers:
            if s.stream not in moved:
                continue
            for a, r in zip(s.t_app, s.t_recv):
                if a >= h:
                    recovery.append(r - h)
                    break
            else:
                recovery.append(-1)
    return lat, recovery


def result_of(subs, tails, recovery):
    """This process's figures (run.py sums them over the processes)."""
    return {
        "subscribers": len(subs),
        "expected": sum(tails[s.stream] - s.start for s in subs),
        # in order up to the tail (events appended after it may have arrived too)
        "delivered": sum(min(len(s.t_app), tails[s.stream] - s.start) for s in subs),
        "short": sum(1 for s in subs if s.next < tails[s.stream]),
        "missing": sum(s.missing for s in subs),
        "duplicates": sum(s.dups for s in subs),
        "control_mismatch": sum(s.control_bad for s in subs),
        "feeds_ended": sum(s.ends for s in subs),
        "subscribers_with_an_end": sum(1 for s in subs if s.ends),
        "connects": sum(s.connects for s in subs),
        "statuses": statuses_of(subs),
        "reopen_ms": sorted((e[1] - e[0]) / 1e6 for s in subs for e in s.end_times
                            if len(e) == 2),
        "never_reopened": sum(1 for s in subs for e in s.end_times if len(e) == 1),
        "recovery_ms": sorted(r / 1e6 for r in recovery if r >= 0),
        "recovery_missing": sum(1 for r in recovery if r < 0),
        "cpu_s": sum(resource.getrusage(resource.RUSAGE_SELF)[:2]),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--drain-timeout", type=float, default=60.0)
    ap.add_argument("--ready-timeout", type=float, default=180.0)
    ap.add_argument("--inject", choices=("", "skip", "duplicate"), default="",
                    help="resume an ended feed one event late (skip) or early (duplicate)")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
