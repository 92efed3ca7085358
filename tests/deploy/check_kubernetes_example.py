#!/usr/bin/python3
"""Checks deploy/kubernetes/streams-ferry.yaml without a cluster.

- every document parses (python3-yaml) and has apiVersion, kind and metadata.name;
- the ConfigMap holds ferry.yaml and urls.json (valid JSON), and `ferry --validate` accepts
  that ferry.yaml with its urls.json written next to it (POD_NAME set, as the pod's env does);
- the workload's pod has the instance and the ferry container; ferry mounts the ConfigMap
  where its --config points; its readinessProbe is GET /ready and its livenessProbe GET
  /healthz on the admin port of ferry.yaml; its preStop sends POST /drain to that port;
- terminationGracePeriodSeconds covers drain_delay + drain + 1 s (ferry's last-bytes grace),
  and the instance's preStop keeps it serving at least as long as ferry drains.

Usage: check_kubernetes_example.py --ferry PATH/TO/ferry --manifest deploy/kubernetes/streams-ferry.yaml
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

FLUSH_GRACE_S = 1  # app/server.cc kFlushGrace


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def seconds(duration):
    """A ferry duration ("500ms", "5s", "2m", "1h", or bare milliseconds) in seconds."""
    m = re.fullmatch(r"(\d+)(ms|s|m|h)?", str(duration).strip())
    if not m:
        fail("cannot read duration %r" % (duration,))
    n, unit = int(m.group(1)), m.group(2) or "ms"
    return n * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


def port_of(container, name_or_number):
    if isinstance(name_or_number, int):
        return name_or_number
    for p in container.get("ports", []):
        if p.get("name") == name_or_number:
            return p["containerPort"]
    fail("container %s has no port named %r" % (container["name"], name_or_number))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ferry", required=True)
    parser.add_argument("--manifest", required=True)
    args = parser.parse_args()

    with open(args.manifest) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    for d in docs:
        for key in ("apiVersion", "kind", "metadata"):
            if key not in d:
                fail("a document has no %s: %r" % (key, d)[:200])
        if "name" not in d["metadata"]:
            fail("%s without metadata.name" % d["kind"])
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)

    # The ConfigMap and ferry --validate on its files.
    config_maps = [c for c in by_kind.get("ConfigMap", []) if "ferry.yaml" in c.get("data", {})]
    if len(config_maps) != 1:
        fail("want one ConfigMap with ferry.yaml, found %d" % len(config_maps))
    config_map = config_maps[0]
    data = config_map["data"]
    if "urls.json" not in data:
        fail("the ConfigMap has no urls.json")
    urls = json.loads(data["urls.json"])
    if not urls or not all(isinstance(v, str) for v in urls.values()):
        fail("urls.json must map instance names to origins")
    ferry_yaml = yaml.safe_load(data["ferry.yaml"])
    with tempfile.TemporaryDirectory(prefix="ferry-k8s-check-") as tmp:
        for name in ("ferry.yaml", "urls.json"):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(data[name])
        env = dict(os.environ, POD_NAME=sorted(urls)[0])
        result = subprocess.run(
            [args.ferry, "--validate", "--config", os.path.join(tmp, "ferry.yaml")],
            env=env, capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            fail("ferry --validate rejected the ConfigMap's ferry.yaml:\n" + result.stdout +
                 result.stderr)
        print("ferry --validate: " + result.stdout.strip())

    admin_port = ferry_yaml.get("admin", {}).get("port", 9901)
    timeouts = ferry_yaml.get("timeouts", {})
    drain_total = (seconds(timeouts.get("drain_delay", 0)) + seconds(timeouts.get("drain", "25s")) +
                   FLUSH_GRACE_S)
    if not ferry_yaml.get("local_instance", {}).get("readiness"):
        fail("ferry.yaml does not probe the instance (local_instance.readiness)")

    # The workload.
    workloads = [d for k in ("Pod", "Deployment", "StatefulSet") for d in by_kind.get(k, [])]
    if len(workloads) != 1:
        fail("want one Pod, Deployment or StatefulSet, found %d" % len(workloads))
    workload = workloads[0]
    pod = workload["spec"] if workload["kind"] == "Pod" else workload["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    if "ferry" not in containers or len(containers) < 2:
        fail("want the instance and a container named ferry, found %s" % sorted(containers))
    ferry = containers["ferry"]
    instance = [c for n, c in containers.items() if n != "ferry"][0]

    # ferry's config comes from the ConfigMap, where --config points.
    config_arg = ferry["args"][ferry["args"].index("--config") + 1]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounted = False
    for m in ferry.get("volumeMounts", []):
        v = volumes.get(m["name"], {})
        if v.get("configMap", {}).get("name") == config_map["metadata"]["name"] and \
                config_arg == m["mountPath"].rstrip("/") + "/ferry.yaml":
            mounted = True
    if not mounted:
        fail("--config %s is not the ConfigMap's ferry.yaml" % config_arg)

    # Probes on ferry's admin port.
    for probe, path in (("readinessProbe", "/ready"), ("livenessProbe", "/healthz")):
        get = ferry.get(probe, {}).get("httpGet")
        if not get or get.get("path") != path:
            fail("ferry's %s must be httpGet %s" % (probe, path))
        if port_of(ferry, get["port"]) != admin_port:
            fail("ferry's %s is on port %s, the admin on %d" % (probe, get["port"], admin_port))

    # preStop: POST /drain on the admin port, then a wait.
    command = " ".join(ferry.get("lifecycle", {}).get("preStop", {}).get("exec", {})
                       .get("command", []))
    if "POST /drain" not in command or "/%d" % admin_port not in command:
        fail("ferry's preStop must POST /drain to port %d: %r" % (admin_port, command))
    waits = [int(n) for n in re.findall(r"sleep (\d+)", command)]
    if not waits or max(waits) < drain_total:
        fail("ferry's preStop must wait for the drain (%g s): %r" % (drain_total, command))

    # Grace: ferry's whole drain, and the instance serves until ferry is done.
    grace = pod.get("terminationGracePeriodSeconds", 30)
    if grace < drain_total:
        fail("terminationGracePeriodSeconds %d < drain_delay + drain + %d s = %g" %
             (grace, FLUSH_GRACE_S, drain_total))
    pre_stop = instance.get("lifecycle", {}).get("preStop", {})
    instance_wait = pre_stop.get("sleep", {}).get("seconds")
    if instance_wait is None:
        found = re.findall(r"\d+", " ".join(pre_stop.get("exec", {}).get("command", [])))
        instance_wait = int(found[-1]) if found else 0
    if instance_wait < drain_total or instance_wait >= grace:
        fail("the instance's preStop must keep it serving through ferry's drain (%g s) and "
             "leave it time before the grace period (%d s) ends: %r" %
             (drain_total, grace, pre_stop))
    print("OK: %s %s, grace %d s, ferry drain %g s" %
          (workload["kind"], workload["metadata"]["name"], grace, drain_total))


if __name__ == "__main__":
    main()
