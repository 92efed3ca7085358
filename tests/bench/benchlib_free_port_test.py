#!/usr/bin/python3
"""Unit tests of bench/benchlib's free_port(): the port it returns stays held (bound, not
listening) until the process exits, so that nothing else on the machine takes it before the
server it is meant for binds it, and that server (SO_REUSEADDR, as ferry, HAProxy, nginx,
nghttpx and h2o bind) can still listen on it."""
import errno
import os
import socket
import sys
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import benchlib  # noqa: E402


class FreePort(unittest.TestCase):
    def test_the_port_stays_bound_so_a_plain_bind_fails(self):
        port = benchlib.free_port()
        s = socket.socket()
        with self.assertRaises(OSError) as e:
            s.bind(("127.0.0.1", port))
        s.close()
        self.assertEqual(e.exception.errno, errno.EADDRINUSE)

    def test_a_server_binding_with_so_reuseaddr_listens_on_it(self):
        port = benchlib.free_port()
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))
        server.listen(1)
        client = socket.create_connection(("127.0.0.1", port), timeout=5)
        conn, _ = server.accept()
        client.sendall(b"x")
        self.assertEqual(conn.recv(1), b"x")
        for s in (client, conn, server):
            s.close()

    def test_ports_are_distinct(self):
        ports = [benchlib.free_port() for _ in range(200)]
        self.assertEqual(len(set(ports)), len(ports))


if __name__ == "__main__":
    unittest.main()
