"""The cell bench's arms and its configs, for both launchers (bench/cell/run.py): the compose
file's layout (addresses), HAProxy's edge config, the ferries' configs and peer table, the
https cell's certificates (openssl CLI), and a loopback layout for one more set of ferries.
bench/faults and bench/forwarded build their cells with the same configs, and
docker/run_without_engine.py reads the image's copy of the layout and the arms."""
import json
import os
import subprocess
import sys

from .procs import free_port, port_of

ARMS = ("pinned", "noferry", "ferry")
# Local launcher only (--tls on adds it): a second set of ferries beside the same emulators,
# listeners on TLS with mTLS required, https peer URLs (a forward crosses the owner's ferry
# over mTLS), HAProxy verifying them: the configs of `gen-configs --tls on`. (On compose,
# FERRY_CELL_TLS=on makes the `ferry` arm itself https.)
TLS_ARM = "ferry-tls"
# Local launcher only (--h2 on adds it), issue 13: the ferry-tls set-up with HTTP/2 between the
# ferries: their listeners also offer h2 by ALPN and they forward with owner_protocol auto, so
# every forward is a stream of the one multiplexed connection to its owner. HAProxy still
# speaks HTTP/1.1 to them (no ALPN on its server lines).
H2_ARM = "ferry-h2"
# Local launcher only (--routing on adds it): a second set of plain ferries beside the same
# emulators with forwarding.owner_routing enabled (project issue 15); its urls.json names its
# own ferries, as ferry-cell's does for the arm ferry.
ROUTING_ARM = "ferry-routing"
FERRY_ARMS = ("ferry", TLS_ARM, H2_ARM, ROUTING_ARM)  # arms through the edge to ferries
# Local launcher only (--hop-arms on adds them): what one proxy hop in front of the owner costs
# in this cell, ferry's against HAProxy's, measured as the arm pinned is (the client picks the
# owner): PINNED_FERRY crosses the owner's ferry (it passes the append to its own instance,
# the owner; the ferries of arm ferry-routing when that arm runs, so that both read one set of
# ferries, else ferry-cell's), PINNED_HAPROXY a second HAProxy process beside the edge one. An
# append through owner routing crosses exactly one ferry on its way to the owner (with
# --routing-peers instances), so PINNED_FERRY / pinned is the best the routing arm can read;
# PINNED_HAPROXY / pinned says whether a peer's hop does better on this machine.
PINNED_FERRY = "pinned-ferry"
PINNED_HAPROXY = "pinned-haproxy"
HOP_ARMS = {PINNED_FERRY: "pinf_", PINNED_HAPROXY: "pinh_"}  # arm -> its pin frontends' prefix
ARM_TITLES = {
    "pinned": "PINNED (owner via the edge)",
    "noferry": "UNPINNED, no ferry (client replays)",
    "ferry": "UNPINNED, with ferry",
    TLS_ARM: "UNPINNED, with ferry, https between ferries (mTLS)",
    H2_ARM: "UNPINNED, with ferry, https + HTTP/2 between ferries (mTLS, ALPN h2)",
    ROUTING_ARM: "UNPINNED, with ferry, owner routing on",
    PINNED_FERRY: "PINNED, through the owner's ferry (one hop)",
    PINNED_HAPROXY: "PINNED, through a second HAProxy (one hop)",
}
COMPOSE_SUBNET_PREFIX = "172.28.0"  # docker/docker-compose.yml, default network
MEMBER_NAMES = lambda n: [f"inst-{i + 1}" for i in range(n)]
LAYOUT_HELP = ("JSON file with the keys of compose_layout() (default: the fixed addresses of "
               "docker/docker-compose.yml)")


def haproxy_config(members, emulators, ferries, ports, bind_host="127.0.0.1", ferry_tls=None,
                   tls_ferries=None, tls_dir=None, h2_ferries=None, h2_tls_dir=None,
                   routing_ferries=None, hop_haproxy=None):
    """members: names; emulators/ferries: name -> "host:port"; ports: frontend -> port.

    Frontends: fe_ferry (round robin over the ferries), fe_noferry (round robin over the
    emulators), fe_pin_<name> (the one emulator, for the pinned arm). ferry_tls: the tls dir
    of gen_tls_files() when the ferries' listeners speak TLS (HAProxy then verifies them
    against the test CA and presents its client certificate: they require one). tls_ferries
    (name -> "host:port") with tls_dir: a further frontend fe_ferry-tls over those TLS
    ferries, verified the same way (the local launcher's arm ferry-tls); h2_ferries with
    h2_tls_dir: fe_ferry-h2 the same way (arm ferry-h2). hop_haproxy (name -> "host:port" of
    the second HAProxy's frontend for that member): fe_pinf_<name> (that member's ferry: of
    routing_ferries if given, else of ferries) and fe_pinh_<name> (that frontend), for the arms
    of --hop-arms on."""
    out = haproxy_head()

    def section(name, servers, server_opts=""):
        out.extend(haproxy_section(name, f"{bind_host}:{ports[name]}", servers, server_opts))

    verify = lambda d: f" ssl verify required ca-file {d}/ca.pem crt {d}/haproxy-client.pem"
    section("ferry", [(m, ferries[m]) for m in members], verify(ferry_tls) if ferry_tls else "")
    if tls_ferries:
        section(TLS_ARM, [(m, tls_ferries[m]) for m in members], verify(tls_dir))
    if h2_ferries:
        section(H2_ARM, [(m, h2_ferries[m]) for m in members], verify(h2_tls_dir))
    if routing_ferries:
        section(ROUTING_ARM, [(m, routing_ferries[m]) for m in members])
    section("noferry", [(m, emulators[m]) for m in members])
    for m in members:
        section(f"pin_{m}", [(m, emulators[m])])
    if hop_haproxy:
        for m in members:
            section(f"pinf_{m}", [(m, (routing_ferries or ferries)[m])])
            section(f"pinh_{m}", [(m, hop_haproxy[m])])
    return "\n".join(out)


def haproxy_section(name, bind, servers, server_opts=""):
    """frontend fe_<name> on bind -> backend be_<name>, round robin over (name, "host:port")."""
    return ([f"frontend fe_{name}", f"  bind {bind}", f"  default_backend be_{name}",
             f"backend be_{name}", "  balance roundrobin"]
            + [f"  server {n} {addr}{server_opts}" for n, addr in servers] + [""])


def haproxy_head():
    return [
        "global",
        "  maxconn 4096",
        "defaults",
        "  mode http",
        "  option http-keep-alive",
        "  http-reuse safe",
        "  timeout connect 5s",
        "  timeout client 60s",
        "  timeout server 60s",
        "  timeout http-keep-alive 60s",
        "",
    ]


def hop_haproxy_config(members, emulators, ports, stats_port):
    """The second HAProxy of arm pinned-haproxy: frontend fe_hop_<name> -> that emulator, and
    its statistics page (CSV at /stats;csv: the requests it served) on stats_port."""
    out = haproxy_head()
    for m in members:
        out += haproxy_section(f"hop_{m}", f"127.0.0.1:{ports[m]}", [(m, emulators[m])])
    out += ["frontend stats", f"  bind 127.0.0.1:{stats_port}", "  stats enable",
            "  stats uri /stats", ""]
    return "\n".join(out)


def frontends(members, tls_arm=False, h2_arm=False, routing_arm=False, hop_arms=False):
    return (["ferry", "noferry"] + ([TLS_ARM] if tls_arm else []) + ([H2_ARM] if h2_arm else [])
            + ([ROUTING_ARM] if routing_arm else []) + [f"pin_{m}" for m in members]
            + [p + m for p in HOP_ARMS.values() if hop_arms for m in members])


def compose_layout(n):
    """Addresses of docker/docker-compose.yml (service names and fixed IPs on the compose network).

    A JSON-able dict; `--layout FILE` (same keys) replaces it, so that
    docker/run_without_engine.py can run the compose file's own commands as local processes
    with loopback addresses, through this same code."""
    # IP literals: ferry's peer table and upstreams take numeric addresses only (it does not
    # resolve names), so the compose network has a fixed subnet and emu-N a fixed address.
    members = MEMBER_NAMES(n)
    ip = {m: f"{COMPOSE_SUBNET_PREFIX}.{10 + i + 1}" for i, m in enumerate(members)}
    return {
        "members": members,
        # As the other services reach them (HAProxy, the peers' urls.json, the bench's scrapes);
        # each ferry shares its emulator's network namespace, hence the same IP.
        "emulators": {m: f"{ip[m]}:8080" for m in members},
        "ferries": {m: f"{ip[m]}:8081" for m in members},
        "admins": {m: f"{ip[m]}:9901" for m in members},
        "fe_ports": {f: 8000 + i for i, f in enumerate(frontends(members))},  # service haproxy
        "relay_ports": {f: 7000 + i for i, f in enumerate(frontends(members))},  # service relay
        # What ferry's listener/admin and HAProxy's frontends bind, and where the ferries read
        # the peer table (the configs volume is mounted at /etc/ferry in every service).
        "bind_host": "0.0.0.0",
        "fleet_file": "/etc/ferry/urls.json",
    }


def load_layout(path, n):
    """compose_layout(n), or the layout in the JSON file `path` (the same keys)."""
    if not path:
        return compose_layout(n)
    with open(path) as f:
        layout = json.load(f)
    missing = sorted(set(compose_layout(n)) - set(layout))
    if missing:
        sys.exit(f"run.py: layout {path} lacks {', '.join(missing)}")
    if len(layout["members"]) != n:
        sys.exit(f"run.py: layout {path} has {len(layout['members'])} members, --members {n}")
    return layout


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def gen_tls_files(tls_dir, layout):
    """The https cell of integration/cell (cell_tls.h) made with the openssl CLI: a test CA
    (ca.pem) signs each ferry's server certificate (<m>.pem/.key, SAN = its listener's IP),
    each ferry's client certificate (<m>-client.pem/.key: it forwards with it) and HAProxy's
    client certificate (haproxy-client.pem, certificate and key). EC P-256, 30 days. Keys are
    0644: the services run as other users than this one-shot, and the CA is a test CA."""
    os.makedirs(tls_dir, exist_ok=True)
    path = lambda name: os.path.join(tls_dir, name)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "30",
            "-subj", "/CN=ferry compose test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")

    def leaf(stem, cn, ext, serial):
        with open(path(stem + ".ext"), "w") as f:
            f.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n" + ext)
        openssl("req", "-new", *ec, "-keyout", path(stem + ".key"), "-out", path(stem + ".csr"),
                "-subj", f"/CN={cn}")
        openssl("x509", "-req", "-in", path(stem + ".csr"), "-CA", path("ca.pem"), "-CAkey",
                path("ca.key"), "-set_serial", str(serial), "-days", "30", "-extfile",
                path(stem + ".ext"), "-out", path(stem + ".pem"))
        os.remove(path(stem + ".csr"))
        os.remove(path(stem + ".ext"))

    serial = 1
    for m in layout["members"]:
        host = layout["ferries"][m].rsplit(":", 1)[0]
        leaf(m, m, f"extendedKeyUsage=serverAuth\nsubjectAltName=IP:{host}\n", serial)
        leaf(m + "-client", m, "extendedKeyUsage=clientAuth\n", serial + 1)
        serial += 2
    leaf("haproxy", "haproxy", "extendedKeyUsage=clientAuth\n", serial)
    with open(path("haproxy-client.pem"), "w") as f:
        for part in ("haproxy.pem", "haproxy.key"):
            with open(path(part)) as p:
                f.write(p.read())
    for name in os.listdir(tls_dir):
        os.chmod(path(name), 0o644)


def gen_compose_configs(out_dir, layout, tls=False, h2=False):
    members, emulators, ferries = layout["members"], layout["emulators"], layout["ferries"]
    admins, bind = layout["admins"], layout["bind_host"]
    port = port_of
    os.makedirs(out_dir, exist_ok=True)
    # tls: where the services see the files (next to the fleet file, on the configs volume).
    seen_tls = os.path.join(os.path.dirname(layout["fleet_file"]), "tls") if tls else None
    if tls:
        gen_tls_files(os.path.join(out_dir, "tls"), layout)
    with open(os.path.join(out_dir, "haproxy.cfg"), "w") as f:
        f.write(haproxy_config(members, emulators, ferries, layout["fe_ports"], bind_host=bind,
                               ferry_tls=seen_tls))
    with open(os.path.join(out_dir, "urls.json"), "w") as f:
        # tls: the peers are the ferries' https listeners (a forward crosses the owner's ferry,
        # which passes the marked request to its instance), as in integration/cell's https mode.
        json.dump({m: f"https://{ferries[m]}" if tls else f"http://{emulators[m]}"
                   for m in members}, f)
    for m in members:
        listener_tls, forwarding = "", "allow_http_peers: true"
        if tls:
            listener_tls = (f", tls: {{cert_file: {seen_tls}/{m}.pem, key_file: {seen_tls}/{m}.key, "
                            f"client_ca_file: {seen_tls}/ca.pem, client_cert: require}}")
            forwarding = (f"allow_http_peers: false, tls: {{ca_file: {seen_tls}/ca.pem, "
                          f"client_cert_file: {seen_tls}/{m}-client.pem, "
                          f"client_key_file: {seen_tls}/{m}-client.key}}")
        if h2:
            # Issue 13: listeners offer h2 by ALPN; forwards negotiate it (auto, the default,
            # spelt out).
            listener_tls += ", http2: {enabled: true}"
            forwarding += ", owner_protocol: auto"
        # The same YAML as integration/cell/fleet_files.cc, with the compose addresses. ferry
        # shares its emulator's network namespace, so it reaches its local instance on loopback,
        # at the port the other services use (compose maps no ports inside its network).
        with open(os.path.join(out_dir, f"ferry-{m}.yaml"), "w") as f:
            f.write(f"instance_name: {m}\n"
                    f"listener: {{address: {bind}, port: {port(ferries[m])}{listener_tls}}}\n"
                    f"local_instance: {{address: 127.0.0.1, port: {port(emulators[m])}}}\n"
                    f"admin: {{address: {bind}, port: {port(admins[m])}}}\n"
                    "workers: 1\n"
                    f"forwarding: {{enabled: true, fleet_file: {layout['fleet_file']}, "
                    f"{forwarding}, owner_routing: {{enabled: false}}}}\n")
    print(f"wrote haproxy.cfg, urls.json, ferry-*.yaml{', tls/' if tls else ''} to {out_dir}")


def loopback_layout(out, members, emulators):
    """A gen_compose_configs() layout for one more set of ferries beside the cell's emulators:
    listeners and admins on free loopback ports, configs and urls.json in `out`."""
    loopback = lambda: f"127.0.0.1:{free_port()}"
    return {"members": members, "emulators": emulators,
            "ferries": {m: loopback() for m in members},
            "admins": {m: loopback() for m in members},
            # (the haproxy.cfg it writes there goes unused: launch_local's serves all arms)
            "fe_ports": {f: 0 for f in frontends(members)}, "relay_ports": {},
            "bind_host": "127.0.0.1",
            "fleet_file": os.path.join(out, "urls.json")}
