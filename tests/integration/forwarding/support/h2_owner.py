#!/usr/bin/python3
"""A scripted HTTP/2 owner for ferry's owner-forwarding tests (issue 13): an h2 server on
127.0.0.1 (h2c prior knowledge, or TLS with ALPN h2) that ferry forwards to.

  h2_owner.py [--tls CERT KEY] [--window N] [--max-streams N] [--rcvbuf N]
              [--close-listener-on-drop] [--close-listener-on-clog]

Run with Debian's /usr/bin/python3 (python3-h2). What each stream gets is chosen by the first
path segment after /v1/stream/ (the stream name's prefix up to its first '-', as the tests'
streamOwnedBy(owner, prefix) makes them), so one connection can carry differently scripted
streams at once:

  ok          200, body "ok <method> <path> <request bytes>" once the request ended
  refuse      RST_STREAM(REFUSED_STREAM) as soon as the HEADERS arrive (nothing read)
  goawaybelow on a connection's first stream: GOAWAY(last_stream_id = stream - 2, NO_ERROR),
              nothing answered, the connection closed once ferry closes or after 3 s; on any
              later connection it answers like ok (so a retry on a fresh connection succeeds)
  goawayalways the same GOAWAY on every connection (a retry is left out too)
  resetbody   reads the whole request (END_STREAM), then RST_STREAM(INTERNAL_ERROR)
  resethead   reads the request, sends a 200 head and 100 body bytes of a 1000-byte body, then
              RST_STREAM(INTERNAL_ERROR)
  goawayfeed  an SSE-like feed: the head and "data: 0", then GOAWAY(last_stream_id = this
              stream, NO_ERROR) covering it, then "data: 1", "data: 2", ... every 50 ms until a
              request arrived on a newer connection (or 10 s), then two more events and
              END_STREAM; the connection closes once its streams ended
  feed        an SSE-like feed: the head, then "data: 0", "data: 1", ... every 50 ms, 40 events
              in all, then END_STREAM
  dropfeed    the same feed, but after 3 events the whole connection is dropped (socket closed,
              no GOAWAY): every stream on it fails, the owner's other connections carry on
  stall       never sends WINDOW_UPDATE for this stream (its request body stalls at the
              initial window), never answers; the connection window is still credited
  big         answers 200 with a 32 MiB body, sent as ferry's flow-control windows allow (more
              than ferry should ever buffer for a client that does not read: "big-done" is
              printed only if it all went out)
  silent      answers like ok, then this connection writes nothing more (no PING ACK, no
              SETTINGS ACK): a dead peer ferry detects only by its PING timeout
  clog        opens this stream's and the connection's windows by 2^30, then reads nothing
              more from this connection (a stuck owner): ferry's writes to it pile up in its
              own buffer. On SIGUSR2 every clogged connection is dropped (socket closed with
              ferry's bytes unread, so ferry sees a reset); with --close-listener-on-drop the
              listener is closed first (a new connection is refused: the owner went away).
              With --close-listener-on-clog the listener is closed as soon as a clog stream
              arrives (the stuck owner takes no new connection; "listener closed").
  trailers    200, body "ok <method> <path> <request bytes>", then trailers
              x-owner-checksum: c0ffee and x-owner-status: done (END_STREAM on them)

--rcvbuf N sets SO_RCVBUF on the listener (inherited by every connection): a small one keeps
the kernel from taking in much of what ferry writes to a clogged connection.

Connection-level WINDOW_UPDATEs credit every DATA byte received (so one stalled stream never
starves the connection); stream-level ones credit all but `stall` streams.

Everything it sees goes to stdout, one line per event, flushed, for the test to count and wait
on (Process::waitForLine):

  listening 127.0.0.1:PORT
  conn C open
  headers conn=C stream=S method=M path=P
  data conn=C stream=S bytes=B total=T
  end conn=C stream=S total=T             (the request ended: END_STREAM from ferry)
  rst conn=C stream=S code=E              (ferry reset the stream)
  sent conn=C stream=S what=W             (what the script did: refused, goaway, reset, ...)
  ping conn=C
  goaway-recv conn=C
  conn C closed
  sync N                                  (on SIGUSR1: every line before it is out)
  listener closed                         (on SIGUSR2 with --close-listener-on-drop)
  dropped conn=C                          (on SIGUSR2: a clogged connection was closed)

Only ever listens on 127.0.0.1.
"""

import argparse
import selectors
import signal
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
from hyperframe.frame import GoAwayFrame

BIG_BODY = 32 << 20
FEED_EVENTS = 40
CHUNK = b"b" * 16384


# SIGUSR1 asks for a "sync N" line (N counting the requests), printed by the main loop once the
# events at hand are handled: a test that has read it has every line printed before it.
SYNC = [0, 0]  # requested, printed


def on_sync_request(signum, frame):
    SYNC[0] += 1


# SIGUSR2 asks for every clogged connection to be dropped (handled by the main loop).
DROP = [0, 0]  # requested, done


def on_drop_request(signum, frame):
    DROP[0] += 1


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def kind_of(path):
    marker = "/v1/stream/"
    i = path.find(marker)
    if i < 0:
        return "ok"
    name = path[i + len(marker):].split("?")[0]
    return name.split("-")[0]


class Stream:
    def __init__(self, sid, method, path):
        self.sid = sid
        self.method = method
        self.path = path
        self.kind = kind_of(path)
        self.received = 0
        self.ended = False
        self.pending = b""      # response bytes waiting for flow-control window
        self.big_left = 0       # big: bytes still to send
        self.end_after_pending = False
        self.reset_after_pending = False
        self.done = False
        self.feed_next = 0      # goawayfeed: next event number
        self.feed_due = 0.0
        self.feed_left = None   # events still to send once a newer connection was seen


class Conn:
    def __init__(self, owner, sock, index):
        self.owner = owner
        self.sock = sock
        self.index = index
        self.h2 = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.streams = {}
        self.silent = False
        self.clogged = False
        self.goaway_sent = False
        self.closing_deadline = None
        self.linger_deadline = None
        self.outbuf = b""
        self.closed = False
        self.h2.initiate_connection()
        settings = {}
        if owner.window:
            settings[h2.settings.SettingCodes.INITIAL_WINDOW_SIZE] = owner.window
        if owner.max_streams:
            settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] = owner.max_streams
        if settings:
            self.h2.update_settings(settings)
        out("conn %d open" % index)
        self.flush()

    # -- output ---------------------------------------------------------------------------------
    def flush(self):
        data = self.h2.data_to_send()
        if self.silent:
            return
        self.outbuf += data
        self.write_out()

    def write_raw(self, data):
        self.flush()
        self.outbuf += data
        self.write_out()

    def write_out(self):
        while self.outbuf and not self.closed:
            try:
                n = self.sock.send(self.outbuf)
            except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                return
            except OSError:
                self.close()
                return
            self.outbuf = self.outbuf[n:]

    def close(self):
        if self.closed:
            return
        self.closed = True
        try:
            self.owner.sel.unregister(self.sock)
        except (KeyError, ValueError):
            pass
        self.sock.close()
        out("conn %d closed" % self.index)

    # -- input ----------------------------------------------------------------------------------
    def on_readable(self):
        if self.clogged:
            return
        try:
            data = self.sock.recv(1 << 16)
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return
        except OSError:
            data = b""
        if not data:
            self.close()
            return
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError as e:
            out("protocol-error conn=%d %s" % (self.index, e))
            self.flush()
            self.close()
            return
        for ev in events:
            self.on_event(ev)
        self.flush()

    def on_event(self, ev):
        if isinstance(ev, h2.events.RequestReceived):
            h = dict(ev.headers)
            st = Stream(ev.stream_id, h.get(":method", ""), h.get(":path", ""))
            self.streams[ev.stream_id] = st
            out("headers conn=%d stream=%d method=%s path=%s" %
                (self.index, st.sid, st.method, st.path))
            self.owner.newest_conn_with_request = max(self.owner.newest_conn_with_request,
                                                      self.index)
            self.on_headers(st)
            if ev.stream_ended is not None and not self.clogged:
                self.on_end(st)
        elif isinstance(ev, h2.events.DataReceived):
            st = self.streams.get(ev.stream_id)
            n = ev.flow_controlled_length
            if n:
                # Connection level: always credited (a stalled stream must not starve others).
                self.h2.increment_flow_control_window(n)
            if st is None:
                return
            st.received += len(ev.data)
            out("data conn=%d stream=%d bytes=%d total=%d" %
                (self.index, st.sid, len(ev.data), st.received))
            if n and st.kind != "stall" and not st.ended and not st.done:
                try:
                    self.h2.increment_flow_control_window(n, stream_id=st.sid)
                except h2.exceptions.StreamClosedError:
                    pass
            if ev.stream_ended is not None:
                self.on_end(st)
        elif isinstance(ev, h2.events.StreamReset):
            out("rst conn=%d stream=%d code=%d" % (self.index, ev.stream_id, ev.error_code))
            st = self.streams.get(ev.stream_id)
            if st is not None:
                st.done = True
        elif isinstance(ev, h2.events.PingReceived):
            out("ping conn=%d" % self.index)
        elif isinstance(ev, h2.events.ConnectionTerminated):
            out("goaway-recv conn=%d" % self.index)
        elif isinstance(ev, h2.events.WindowUpdated):
            self.pump()

    def on_headers(self, st):
        if st.kind == "clog":
            # Credit far more than ferry will send, then stop reading: what ferry writes next
            # stays in its buffers (the kernel's are small with --rcvbuf).
            self.h2.increment_flow_control_window(1 << 30)
            self.h2.increment_flow_control_window(1 << 30, stream_id=st.sid)
            self.flush()
            self.clogged = True
            try:
                self.owner.sel.unregister(self.sock)
            except (KeyError, ValueError):
                pass
            out("sent conn=%d stream=%d what=clog" % (self.index, st.sid))
            if self.owner.close_listener_on_clog:
                self.owner.close_listener()
        elif st.kind == "refuse":
            self.h2.reset_stream(st.sid, error_code=h2.errors.ErrorCodes.REFUSED_STREAM)
            st.done = True
            out("sent conn=%d stream=%d what=refused" % (self.index, st.sid))
        elif ((st.kind == "goawaybelow" and self.index == 1 or st.kind == "goawayalways")
              and not self.goaway_sent):
            # Raw frame: h2's state machine would refuse anything after its own GOAWAY.
            self.goaway_sent = True
            frame = GoAwayFrame(0)
            frame.last_stream_id = max(0, st.sid - 2)
            frame.error_code = 0
            self.write_raw(frame.serialize())
            st.done = True
            self.closing_deadline = time.monotonic() + 3.0
            out("sent conn=%d stream=%d what=goaway last=%d" %
                (self.index, st.sid, frame.last_stream_id))

    def on_end(self, st):
        st.ended = True
        out("end conn=%d stream=%d total=%d" % (self.index, st.sid, st.received))
        if st.done:
            return
        kind = st.kind
        if kind in ("ok", "goawaybelow", "silent"):
            body = ("ok %s %s %d" % (st.method, st.path, st.received)).encode()
            self.respond(st, body)
            out("sent conn=%d stream=%d what=ok" % (self.index, st.sid))
            if kind == "silent":
                self.flush()
                self.silent = True
                out("sent conn=%d stream=%d what=silent" % (self.index, st.sid))
        elif kind == "trailers":
            body = ("ok %s %s %d" % (st.method, st.path, st.received)).encode()
            self.h2.send_headers(st.sid, [(":status", "200"), ("content-type", "text/plain")])
            self.h2.send_data(st.sid, body)
            self.h2.send_headers(st.sid, [("x-owner-checksum", "c0ffee"),
                                          ("x-owner-status", "done")], end_stream=True)
            st.done = True
            out("sent conn=%d stream=%d what=trailers" % (self.index, st.sid))
        elif kind == "resetbody":
            self.h2.reset_stream(st.sid, error_code=h2.errors.ErrorCodes.INTERNAL_ERROR)
            st.done = True
            out("sent conn=%d stream=%d what=reset-before-head" % (self.index, st.sid))
        elif kind == "resethead":
            self.h2.send_headers(st.sid, [(":status", "200"), ("content-type", "text/plain"),
                                          ("content-length", "1000")])
            self.h2.send_data(st.sid, b"x" * 100)
            self.flush()
            self.h2.reset_stream(st.sid, error_code=h2.errors.ErrorCodes.INTERNAL_ERROR)
            st.done = True
            out("sent conn=%d stream=%d what=reset-after-head" % (self.index, st.sid))
        elif kind == "goawayfeed":
            self.h2.send_headers(st.sid, [(":status", "200"),
                                          ("content-type", "text/event-stream")])
            self.feed_event(st)
            frame = GoAwayFrame(0)
            frame.last_stream_id = max(s for s in self.streams)
            frame.error_code = 0
            self.write_raw(frame.serialize())
            self.goaway_sent = True
            out("sent conn=%d stream=%d what=goaway last=%d" %
                (self.index, st.sid, frame.last_stream_id))
            st.feed_due = time.monotonic() + 0.05
        elif kind in ("feed", "dropfeed"):
            self.h2.send_headers(st.sid, [(":status", "200"),
                                          ("content-type", "text/event-stream")])
            self.feed_event(st)
            st.feed_due = time.monotonic() + 0.05
        elif kind == "big":
            self.h2.send_headers(st.sid, [(":status", "200"), ("content-type", "text/plain"),
                                          ("content-length", str(BIG_BODY))])
            st.big_left = BIG_BODY
            self.pump()
        elif kind == "stall":
            pass

    def respond(self, st, body):
        self.h2.send_headers(st.sid, [(":status", "200"), ("content-type", "text/plain"),
                                      ("content-length", str(len(body)))])
        st.pending = body
        st.end_after_pending = True
        self.pump()

    def feed_event(self, st):
        self.h2.send_data(st.sid, b"data: %d\n\n" % st.feed_next)
        out("sent conn=%d stream=%d what=event n=%d" % (self.index, st.sid, st.feed_next))
        st.feed_next += 1

    def pump(self):
        """Sends what the flow-control windows allow of each stream's pending body."""
        for st in list(self.streams.values()):
            try:
                self.pump_stream(st)
            except h2.exceptions.StreamClosedError:
                # ferry reset it; the RST_STREAM may sit later in the batch being handled.
                st.done = True
        self.flush()

    def pump_stream(self, st):
        if st.done:
            return
        while st.big_left > 0:
            window = self.h2.local_flow_control_window(st.sid)
            n = min(window, self.h2.max_outbound_frame_size, len(CHUNK), st.big_left)
            if n <= 0:
                break
            self.h2.send_data(st.sid, CHUNK[:n], end_stream=(n == st.big_left))
            st.big_left -= n
            if st.big_left == 0:
                st.done = True
                out("sent conn=%d stream=%d what=big-done" % (self.index, st.sid))
        if not st.pending and not st.end_after_pending:
            return
        while st.pending:
            window = self.h2.local_flow_control_window(st.sid)
            n = min(window, self.h2.max_outbound_frame_size, len(st.pending))
            if n <= 0:
                break
            self.h2.send_data(st.sid, st.pending[:n])
            st.pending = st.pending[n:]
        if not st.pending and st.end_after_pending:
            self.h2.end_stream(st.sid)
            st.end_after_pending = False
            st.done = True

    # -- timers ---------------------------------------------------------------------------------
    def tick(self, now):
        try:
            self.tick_streams(now)
        except h2.exceptions.StreamClosedError as e:
            # A feed ferry reset (its client left): nothing more to send on it.
            st = self.streams.get(e.stream_id)
            if st is not None:
                st.done = True
        self.tick_close(now)

    def tick_streams(self, now):
        for st in list(self.streams.values()):
            if st.kind in ("feed", "dropfeed") and not st.done and st.ended and now >= st.feed_due:
                self.feed_event(st)
                st.feed_due = now + 0.05
                if st.kind == "dropfeed" and st.feed_next >= 3:
                    self.flush()
                    out("sent conn=%d stream=%d what=drop" % (self.index, st.sid))
                    self.close()
                    return
                if st.feed_next >= FEED_EVENTS:
                    self.h2.end_stream(st.sid)
                    st.done = True
                    out("sent conn=%d stream=%d what=feed-done" % (self.index, st.sid))
                self.flush()
                continue
            if st.kind != "goawayfeed" or st.done or not st.ended or now < st.feed_due:
                continue
            if st.feed_left is None and (self.owner.newest_conn_with_request > self.index or
                                         st.feed_next > 200):
                st.feed_left = 2
            self.feed_event(st)
            if st.feed_left is not None:
                st.feed_left -= 1
                if st.feed_left == 0:
                    self.h2.end_stream(st.sid)
                    st.done = True
                    out("sent conn=%d stream=%d what=feed-done" % (self.index, st.sid))
            st.feed_due = now + 0.05
            self.flush()

    def tick_close(self, now):
        if self.goaway_sent and not self.closed:
            if self.closing_deadline is not None:
                # goawaybelow: wait for ferry to close (closing with its bytes unread would
                # reset the connection, and a reset may discard the GOAWAY before ferry read it).
                if now >= self.closing_deadline:
                    self.close()
                return
            live = [s for s in self.streams.values() if not s.done]
            if not live and not self.outbuf and self.linger_deadline is None:
                # Every stream ended after a GOAWAY: the server closes (RFC 9113 section 6.8),
                # once ferry closed (or after 1 s of reading what it still sends: closing with
                # unread bytes would reset the connection).
                self.linger_deadline = now + 1.0
            if self.linger_deadline is not None and now >= self.linger_deadline:
                self.close()


class Owner:
    def __init__(self, args):
        self.window = args.window
        self.close_listener_on_drop = args.close_listener_on_drop
        self.close_listener_on_clog = args.close_listener_on_clog
        self.max_streams = args.max_streams
        self.sel = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if args.rcvbuf:
            self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.listener.setblocking(False)
        self.sel.register(self.listener, selectors.EVENT_READ, None)
        self.tls = None
        if args.tls:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(args.tls[0], args.tls[1])
            self.tls.set_alpn_protocols(["h2"])
        self.conns = []
        self.newest_conn_with_request = 0
        out("listening 127.0.0.1:%d" % self.listener.getsockname()[1])

    def close_listener(self):
        if self.listener is None:
            return
        self.sel.unregister(self.listener)
        self.listener.close()
        self.listener = None
        out("listener closed")

    def accept(self):
        if self.listener is None:  # closed by a clog stream earlier in this select batch
            return
        sock, _ = self.listener.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls:
            sock.settimeout(5)
            try:
                sock = self.tls.wrap_socket(sock, server_side=True)
            except (ssl.SSLError, OSError) as e:
                out("tls-error %s" % e)
                sock.close()
                return
            out("alpn %s" % sock.selected_alpn_protocol())
        sock.setblocking(False)
        conn = Conn(self, sock, len(self.conns) + 1)
        self.conns.append(conn)
        self.sel.register(sock, selectors.EVENT_READ, conn)

    def run(self):
        while True:
            for key, _ in self.sel.select(timeout=0.02):
                if key.data is None:
                    self.accept()
                else:
                    key.data.on_readable()
                    # TLS may hold decrypted bytes the selector can't see.
                    while (not key.data.closed and not key.data.clogged
                           and isinstance(key.data.sock, ssl.SSLSocket)
                           and key.data.sock.pending()):
                        key.data.on_readable()
            now = time.monotonic()
            for c in self.conns:
                if not c.closed:
                    c.tick(now)
                    c.write_out()
            if DROP[1] < DROP[0]:
                DROP[1] = DROP[0]
                if self.close_listener_on_drop:
                    self.close_listener()
                for c in self.conns:
                    if c.clogged and not c.closed:
                        c.close()
                        out("dropped conn=%d" % c.index)
            while SYNC[1] < SYNC[0]:
                SYNC[1] += 1
                out("sync %d" % SYNC[1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    p.add_argument("--window", type=int, default=0, help="SETTINGS_INITIAL_WINDOW_SIZE")
    p.add_argument("--max-streams", type=int, default=0, help="SETTINGS_MAX_CONCURRENT_STREAMS")
    p.add_argument("--rcvbuf", type=int, default=0, help="SO_RCVBUF of every connection")
    p.add_argument("--close-listener-on-drop", action="store_true",
                   help="SIGUSR2 closes the listener too")
    p.add_argument("--close-listener-on-clog", action="store_true",
                   help="a clog stream closes the listener (new connections are refused)")
    signal.signal(signal.SIGUSR1, on_sync_request)
    signal.signal(signal.SIGUSR2, on_drop_request)
    Owner(p.parse_args()).run()


if __name__ == "__main__":
    main()
