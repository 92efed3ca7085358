"""The peers a bench compares ferry with, and the origin behind them: nginx as the origin,
HAProxy, nginx and nghttpx as proxies (one worker or thread each, keep-alive to the origin), a
self-signed certificate for their TLS listeners, and HTTP probes that wait for them."""
import os
import re
import socket
import ssl
import subprocess
import time
import urllib.request

from .procs import Server, free_port

# The origin's answer to every request, and the body size of the POST workloads.
RESPONSE_BODY = "ferry-bench-origin: hello from the upstream, 64 bytes of body..\n"
assert len(RESPONSE_BODY) == 64
POST_BYTES = 1024


def http_get(port, path="/", timeout=2.0):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.status, r.read()


def https_get(port, path="/", timeout=2.0):
    # The bench's self-signed certificate: no verification (the peers do not verify either:
    # wrk never checks the server certificate).
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}", timeout=timeout,
                                context=ctx) as r:
        return r.status, r.read()


def wait_http(port, path="/", timeout=10.0, proc=None, tls=False):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}")
        try:
            st, body = (https_get if tls else http_get)(port, path, timeout=1.0)
            if st == 200:
                return body
            last = f"status {st}"
        except Exception as e:  # noqa: BLE001 - any failure means "not ready yet"
            last = repr(e)
        time.sleep(0.1)
    raise RuntimeError(f"127.0.0.1:{port}{path} not ready: {last}")


def tool_version(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
        return (r.stdout + r.stderr).strip().splitlines()[0]
    except Exception as e:  # noqa: BLE001
        return f"unknown ({e})"


def nginx_user_line():
    # As root, nginx workers would switch to "nobody" and then fail on our 0700 temp dir.
    return "user root;" if os.geteuid() == 0 else ""


def nginx_common(prefix):
    for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(prefix, d), exist_ok=True)
    return f"""
    {nginx_user_line()}
    daemon off;
    master_process on;
    worker_processes 1;
    pid {prefix}/nginx.pid;
    error_log {prefix}/error.log warn;
    events {{ worker_connections 4096; multi_accept on; }}
    """, f"""
        access_log off;
        client_body_temp_path {prefix}/client_body;
        proxy_temp_path {prefix}/proxy;
        fastcgi_temp_path {prefix}/fastcgi;
        uwsgi_temp_path {prefix}/uwsgi;
        scgi_temp_path {prefix}/scgi;
        keepalive_timeout 300s;
        keepalive_requests 100000000;
    """


def start_origin(tmp):
    """nginx, 1 worker: GET / -> 200 + 64 bytes; POST /post reads (discards) the body -> 200.
    The same server also answers h2c (prior knowledge) on `h2c_port`: the origin of the h2c
    floor arm, which relays the client's h2c bytes unparsed."""
    prefix = os.path.join(tmp, "origin")
    os.makedirs(prefix)
    port, status_port, h2c_port = free_port(), free_port(), free_port()
    main, http_common = nginx_common(prefix)
    conf = f"""{main}
    http {{
        {http_common}
        default_type text/plain;
        server {{
            listen 127.0.0.1:{port} backlog=4096;
            listen 127.0.0.1:{h2c_port} http2 backlog=4096;
            # `return` answers via ngx_http_send_response(), which first calls
            # ngx_http_discard_request_body(): the 1 KiB body is read off the socket and
            # dropped, so keep-alive continues. run.py verifies this at start-up.
            location / {{ return 200 "{RESPONSE_BODY.rstrip()}\\n"; }}
            location = /post {{ client_max_body_size 1m; return 200 "{RESPONSE_BODY.rstrip()}\\n"; }}
        }}
        server {{
            listen 127.0.0.1:{status_port};
            location = /status {{ stub_status; }}
        }}
    }}
    """
    path = os.path.join(prefix, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    s = Server("origin", ["nginx", "-p", prefix, "-e", f"{prefix}/error.log", "-c", path], prefix)
    s.port = port
    s.status_port = status_port
    s.h2c_port = h2c_port
    wait_http(port, proc=s.proc)
    body = wait_http(port, "/post", proc=s.proc)
    assert body.decode() == RESPONSE_BODY, body
    verify_post_keepalive(port)
    return s


def origin_accepts(origin):
    _, body = http_get(origin.status_port, "/status")
    m = re.search(r"\n\s*(\d+)\s+(\d+)\s+(\d+)", body.decode())
    return int(m.group(1))  # accepted connections since start


def verify_post_keepalive(port):
    """Two 1 KiB POSTs on one connection must both get 200: proves the origin consumes bodies."""
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    body = b"x" * POST_BYTES
    req = (f"POST /post HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
           "Content-Type: application/octet-stream\r\n\r\n").encode() + body
    s.sendall(req + req)
    data = b""
    deadline = time.time() + 3
    while data.count(b"HTTP/1.1 200") < 2 and time.time() < deadline:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    if data.count(b"HTTP/1.1 200") != 2:
        raise RuntimeError(f"origin did not answer two pipelined POSTs: {data[:300]!r}")


def make_cert(tmp):
    """Self-signed ECDSA P-256 certificate for 127.0.0.1/localhost, made with the openssl CLI.

    Returns {"cert", "key", "pem"} (pem = chain + key in one file, as HAProxy's `crt` wants)."""
    d = os.path.join(tmp, "tls")
    os.makedirs(d, exist_ok=True)
    cert, key, pem = (os.path.join(d, n) for n in ("bench.crt", "bench.key", "bench.pem"))
    if os.path.exists(pem):  # made already for the other TLS scenarios: one certificate for all
        return {"cert": cert, "key": key, "pem": pem}
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    with open(pem, "w") as f:
        f.write(open(cert).read() + open(key).read())
    return {"cert": cert, "key": key, "pem": pem}


def instance_dir(tmp, arm, tls, h2):
    """tmp/<arm>[-tls|-h2c|-h2tls]: one directory per proxy instance."""
    return os.path.join(tmp, f"{arm}-{h2}" if h2 else (f"{arm}-tls" if tls else arm))


def start_floor(tmp, up, binary, h2=None, parse=False):
    """The floor arm (issue #23): bench/floor's epoll byte relay, which parses nothing and opens
    one origin connection per client connection: the least any proxy in the path costs. With
    h2="h2c", `up` is the origin's h2c port and the relay carries h2c end to end. parse=True:
    the floor-parse arm, the relay running llhttp over both directions (HTTP/1.1 only)."""
    name = "floor-parse" if parse else "floor"
    d = instance_dir(tmp, name, None, h2)
    os.makedirs(d)
    port = free_port()
    s = Server(name, [binary, str(port), str(up)] + (["--parse"] if parse else []), d)
    s.port = port
    return s


def start_haproxy(tmp, up, tls=None, h2=None):
    d = instance_dir(tmp, "haproxy", tls, h2)
    os.makedirs(d)
    port = free_port()
    conf = f"""
global
    nbthread 1
    maxconn 4096{haproxy_stats_socket(d, tls and not h2)}

defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 300s
    timeout server 300s
    timeout http-keep-alive 300s

frontend fe
    bind 127.0.0.1:{port}{haproxy_bind_tls(tls, h2)}
    default_backend be

backend be
    server origin 127.0.0.1:{up}
"""
    path = os.path.join(d, "haproxy.cfg")
    with open(path, "w") as f:
        f.write(conf)
    # -db: foreground, no master-worker: one process, one thread.
    s = Server("haproxy", ["haproxy", "-db", "-f", path], d)
    s.port = port
    return s


def haproxy_stats_socket(d, tls):
    # TLS instance only: `show info` gives SslFrontendSessionReuse_pct (resumption rate).
    return f"\n    stats socket {d}/admin.sock" if tls else ""


def recv_to_eof(sock):
    """Everything `sock` (a socket or an SSL socket) receives until the peer closes."""
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def haproxy_reuse_pct(server):
    """HAProxy's SslFrontendSessionReuse_pct (over its last second) from the stats socket."""
    try:
        c = socket.socket(socket.AF_UNIX)
        c.settimeout(2)
        c.connect(os.path.join(server.workdir, "admin.sock"))
        c.sendall(b"show info\n")
        data = recv_to_eof(c)
        c.close()
        m = re.search(rb"SslFrontendSessionReuse_pct: (\d+)", data)
        return int(m.group(1)) if m else None
    except OSError:
        return None


def haproxy_bind_tls(tls, h2=None):
    # Session tickets are on by default in HAProxy (and its session-id cache for TLS 1.2).
    # h2c: `proto h2` (HTTP/2 with prior knowledge only on that bind); h2 over TLS by ALPN.
    if h2 == "h2c":
        return " proto h2"
    alpn = "h2,http/1.1" if h2 else "http/1.1"
    return (f" ssl crt {tls['pem']} alpn {alpn} ssl-min-ver TLSv1.2" if tls else "")


def nginx_listen_tls(tls):
    if not tls:
        return ""
    # nginx: tickets on (its default); no shared session cache, like ferry (tickets only).
    return f"""
            ssl_certificate {tls['cert']};
            ssl_certificate_key {tls['key']};
            ssl_protocols TLSv1.2 TLSv1.3;
            ssl_session_tickets on;"""


def start_nginx_proxy(tmp, up, tls=None, h2=None):
    prefix = instance_dir(tmp, "nginx", tls, h2)
    os.makedirs(prefix)
    port = free_port()
    main, http_common = nginx_common(prefix)
    conf = f"""{main}
    http {{
        {http_common}
        upstream origin {{
            server 127.0.0.1:{up};
            keepalive 64;
            keepalive_requests 100000000;
            keepalive_timeout 300s;
        }}
        server {{
            listen 127.0.0.1:{port}{" ssl" if tls else ""}{" http2" if h2 else ""} backlog=4096;{nginx_listen_tls(tls)}
            location / {{
                proxy_pass http://origin;
                proxy_http_version 1.1;
                proxy_set_header Connection "";
            }}
        }}
    }}
    """
    path = os.path.join(prefix, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    s = Server("nginx", ["nginx", "-p", prefix, "-e", f"{prefix}/error.log", "-c", path], prefix)
    s.port = port
    return s


def start_nghttpx(tmp, up, tls=None, h2=None):
    d = instance_dir(tmp, "nghttpx", tls, h2)
    os.makedirs(d)
    port = free_port()
    # Cleartext frontend: HTTP/1.1 and h2c with prior knowledge on the same port; TLS frontend:
    # ALPN h2 (its default list), key and certificate as the two positional arguments.
    argv = ["nghttpx", "--conf=/dev/null", "--workers=1",
            f"--frontend=127.0.0.1,{port}" + ("" if tls else ";no-tls"),
            f"--backend=127.0.0.1,{up};;proto=http/1.1",
            "--backend-keep-alive-timeout=300s", "--frontend-keep-alive-timeout=300s",
            f"--pid-file={d}/nghttpx.pid", f"--errorlog-file={d}/error.log"]
    if tls:
        argv += [tls["key"], tls["cert"]]
    s = Server("nghttpx", argv, d)
    s.port = port
    return s
