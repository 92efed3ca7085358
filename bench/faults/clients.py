"""The fault campaign's clients (bench/faults/run.py): idempotent producers and SSE readers,
threads that talk HTTP/1.1 (or HTTPS with the cell's client certificate) to the ferries and
classify every answer with checks.classify().

Producers work as bench/cell/handover.py's: Producer-Id p<i>, epoch 0, seq 0, 1, ...; body
"p<i>-<seq>;"; one append in flight, the same seq sent again until it is acknowledged (2xx);
attempt k of producer i goes to ferry (i + k) mod N, so every producer crosses every ferry and
a retry goes to the next one. Readers follow one stream with ?live=sse from the offset they
hold, and reconnect (at the next ferry) whenever a feed ends, breaks or is refused.
"""
import base64
import collections
import http.client
import json
import socket
import threading

import checks

BACKOFF_S = 0.02     # before resending a seq / reconnecting a reader (503s say Retry-After: 1)
ANSWER_TIMEOUT_S = 30.0  # above ferry's 15 s response_head, so the client sees ferry's answer
FEED_TIMEOUT_S = 30.0    # silence on a feed (keep-alives every second) before a reconnect


class Tally:
    """Answers of a set of clients: label -> count, and the refused ones (thread-safe)."""

    def __init__(self, strict_5xx=False):
        self.lock = threading.Lock()
        self.answers = collections.Counter()
        self.disallowed = []
        self.strict_5xx = strict_5xx

    def add(self, who, status, headers, body=b"", detail=""):
        label, allowed = checks.classify(status, headers, body, self.strict_5xx)
        with self.lock:
            self.answers[label] += 1
            if not allowed:
                self.disallowed.append({"who": who, "status": status, "label": label,
                                        "detail": detail or body[:200].decode("latin-1")})
        return allowed


class Conn:
    """One keep-alive HTTP/1.1 connection to host:port (TLS with `tls`, an SSLContext).
    request() returns (status, headers, body) or raises OSError / ValueError."""

    def __init__(self, addr, tls, timeout):
        self.host, port = addr.rsplit(":", 1)
        self.port, self.tls, self.timeout = int(port), tls, timeout
        self.sock, self.buf = None, b""

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock, self.buf = None, b""

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionResetError("closed by the server")
        self.buf += chunk

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def request(self, method, path, headers, body=b""):
        if self.sock is None:
            s = socket.create_connection((self.host, self.port), timeout=self.timeout)
            self.sock = self.tls.wrap_socket(s, server_hostname=self.host) if self.tls else s
        head = [f"{method} {path} HTTP/1.1", f"host: {self.host}:{self.port}",
                f"content-length: {len(body)}"] + [f"{k}: {v}" for k, v in headers.items()]
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        raw, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = raw.split(b"\r\n")
        status = int(lines[0].split()[1])
        hdrs = {}
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            hdrs[k.strip().lower().decode()] = v.strip().decode("latin-1")
        if hdrs.get("transfer-encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    while self._line():
                        pass
                    break
                data += self._take(size)
                self._take(2)
        else:
            data = self._take(int(hdrs.get("content-length", "0")))
        if hdrs.get("connection", "").lower() == "close":
            self.close()
        return status, hdrs, data


class Producer(threading.Thread):
    """One idempotent producer on `stream` through `ferries` ("host:port" list)."""

    def __init__(self, index, stream, ferries, tls, tally):
        super().__init__(daemon=True, name=f"producer-p{index}")
        self.index, self.stream, self.ferries, self.tally = index, stream, ferries, tally
        self.pid = f"p{index}"
        self.conns = [Conn(f, tls, ANSWER_TIMEOUT_S) for f in ferries]
        self.acked = 0          # seqs 0 .. acked-1 acknowledged
        self.attempts = 0
        self.failures = 0       # answers other than 2xx
        self.stop = threading.Event()

    def post(self, f, seq):
        c = self.conns[f]
        try:
            return c.request("POST", f"/v1/stream/{self.stream}",
                             {"content-type": "text/plain", "producer-id": self.pid,
                              "producer-epoch": "0", "producer-seq": str(seq)},
                             f"{self.pid}-{seq};".encode())
        except (OSError, ValueError, IndexError) as e:
            c.close()
            return 0, {}, type(e).__name__.encode()

    def run(self):
        k = self.index
        while not self.stop.is_set():
            seq = self.acked
            f = k % len(self.ferries)
            k += 1
            self.attempts += 1
            status, headers, body = self.post(f, seq)
            self.tally.add(f"{self.pid} via {self.ferries[f]}", status, headers, body)
            if 200 <= status < 300:
                self.acked = seq + 1
                continue
            self.failures += 1
            self.stop.wait(BACKOFF_S)
        for c in self.conns:
            c.close()


class Reader(threading.Thread):
    """Follows `stream` with SSE through the ferries, from offset 0; `received` is every byte
    of every data frame, in order (byte streams: the frames carry base64)."""

    def __init__(self, index, stream, ferries, tls, tally):
        super().__init__(daemon=True, name=f"reader-r{index}")
        self.index, self.stream, self.ferries, self.tls, self.tally = (
            index, stream, ferries, tls, tally)
        self.who = f"reader r{index} ({stream})"
        self.received = bytearray()
        self.offset_errors = 0
        self.connects = 0
        self.feeds = 0          # 200 answers (feeds that started)
        self.stop = threading.Event()
        self.conn = None

    def close(self):
        """Stops the reader: its current feed's socket is shut down (wakes a blocked read)."""
        self.stop.set()
        conn = self.conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def run(self):
        k = self.index
        while not self.stop.is_set():
            addr = self.ferries[k % len(self.ferries)]
            k += 1
            self.connects += 1
            try:
                self.follow(addr)
            except (OSError, http.client.HTTPException, ValueError):
                pass  # the feed broke (a killed member, a cut response): resume elsewhere
            finally:
                if self.conn is not None:
                    self.conn.close()
                    self.conn = None
            self.stop.wait(BACKOFF_S)

    def follow(self, addr):
        host, port = addr.rsplit(":", 1)
        if self.tls:
            conn = http.client.HTTPSConnection(host, int(port), timeout=FEED_TIMEOUT_S,
                                               context=self.tls)
        else:
            conn = http.client.HTTPConnection(host, int(port), timeout=FEED_TIMEOUT_S)
        self.conn = conn
        if self.stop.is_set():
            return
        try:
            conn.request("GET", f"/v1/stream/{self.stream}?offset={len(self.received):016d}"
                                "&live=sse")
            r = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            if not self.stop.is_set():
                self.tally.add(f"{self.who} via {addr}", 0, {}, type(e).__name__.encode())
            raise
        headers = {k.lower(): v for k, v in r.getheaders()}
        if r.status != 200:
            self.tally.add(f"{self.who} via {addr}", r.status, headers, r.read())
            return
        if not headers.get("content-type", "").startswith("text/event-stream"):
            self.tally.add(f"{self.who} via {addr}", 599, headers, b"",
                           f"200 without text/event-stream: {headers.get('content-type')}")
            return
        self.tally.add(f"{self.who} via {addr}", 200, headers)
        self.feeds += 1
        event = None
        while not self.stop.is_set():
            line = r.readline()
            if not line:
                return  # the feed ended (ownership moved, the owner went away)
            line = line.rstrip(b"\r\n")
            if line.startswith(b"event:"):
                event = line[6:].strip()
            elif line.startswith(b"data:"):
                payload = line[5:].strip()
                if event == b"data":
                    self.received += base64.b64decode(payload)
                elif event == b"control":
                    nxt = json.loads(payload).get("streamNextOffset")
                    if nxt is not None and int(nxt) != len(self.received):
                        self.offset_errors += 1
            elif not line:
                event = None
