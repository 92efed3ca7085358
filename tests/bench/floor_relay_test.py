#!/usr/bin/python3
"""Tests of bench/floor's relay (floor-epoll-relay), the pass-through bench's floor arms: as is,
it carries any bytes both ways; with --parse (the floor-parse arm) it runs llhttp over both
directions, so a request or a response llhttp rejects closes the pair instead of passing on.

    floor_relay_test.py RELAY_BINARY [unittest args]
"""
import socket
import subprocess
import sys
import threading
import unittest

RELAY = None
GOOD_REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
BAD_REQUEST = b"GET / HTTP/1.1\r\nHost x\r\n\r\n"  # a field line without a colon
GOOD_RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
BAD_RESPONSE = b"HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok"  # a four-digit status


class Origin:
    """One-connection origin on 127.0.0.1: records what it receives and answers `response`
    once it has a whole head."""

    def __init__(self, response):
        self.response = response
        self.received = b""
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.done = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        conn, _ = self.listener.accept()
        with conn:
            conn.settimeout(10)
            try:
                while b"\r\n\r\n" not in self.received:
                    got = conn.recv(4096)
                    if not got:
                        break
                    self.received += got
                if b"\r\n\r\n" in self.received:
                    conn.sendall(self.response)
                    while conn.recv(4096):
                        pass
            except OSError:
                pass
        self.done.set()

    def close(self):
        self.listener.close()


class Relay:
    def __init__(self, origin_port, parse):
        args = [RELAY, "0", str(origin_port)] + (["--parse"] if parse else [])
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # "listening on 127.0.0.1:PORT"
        if not line.startswith("listening on 127.0.0.1:"):
            raise RuntimeError(f"relay did not start: {line!r}")
        self.port = int(line.rsplit(":", 1)[1])

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


def exchange(relay_port, request):
    """Sends `request` through the relay; what came back until the relay closed or 5 s passed
    (None when the connection was still open then)."""
    with socket.create_connection(("127.0.0.1", relay_port), timeout=5) as c:
        c.sendall(request)
        got = b""
        try:
            while True:
                part = c.recv(4096)
                if not part:
                    return got
                got += part
                if got.endswith(b"ok"):
                    return got
        except socket.timeout:
            return None


class FloorRelay(unittest.TestCase):
    def run_case(self, parse, request, response):
        origin = Origin(response)
        relay = Relay(origin.port, parse)
        try:
            answer = exchange(relay.port, request)
        finally:
            relay.stop()
            origin.done.wait(10)
            origin.close()
        return answer, origin.received

    def test_both_modes_carry_a_request_and_its_response(self):
        for parse in (False, True):
            answer, received = self.run_case(parse, GOOD_REQUEST, GOOD_RESPONSE)
            self.assertEqual(answer, GOOD_RESPONSE, f"parse={parse}")
            self.assertEqual(received, GOOD_REQUEST, f"parse={parse}")

    def test_a_bad_request_closes_the_pair_only_when_parsing(self):
        answer, received = self.run_case(True, BAD_REQUEST, GOOD_RESPONSE)
        self.assertEqual(answer, b"")
        self.assertEqual(received, b"")
        answer, received = self.run_case(False, BAD_REQUEST, GOOD_RESPONSE)
        self.assertEqual(answer, GOOD_RESPONSE)
        self.assertEqual(received, BAD_REQUEST)

    def test_a_bad_response_closes_the_pair_only_when_parsing(self):
        answer, received = self.run_case(True, GOOD_REQUEST, BAD_RESPONSE)
        self.assertEqual(received, GOOD_REQUEST)
        self.assertEqual(answer, b"")
        answer, _ = self.run_case(False, GOOD_REQUEST, BAD_RESPONSE)
        self.assertEqual(answer, BAD_RESPONSE)


if __name__ == "__main__":
    RELAY = sys.argv.pop(1)
    unittest.main()
