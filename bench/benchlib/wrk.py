"""wrk, the HTTP/1.1 load generator: a Lua `done` hook that prints its summary as JSON, and one
run read back."""
import json
import os
import re
import subprocess

WRK_DONE = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"err_connect":%d,"err_read":%d,' ..
    '"err_write":%d,"err_status":%d,"err_timeout":%d,"p50_us":%.1f,"p90_us":%.1f,' ..
    '"p99_us":%.1f,"p999_us":%.1f,"max_us":%.1f,"mean_us":%.2f}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean))
end
"""


def load_figures(w):
    """What the benches keep of one load run (wrk's JSON, or h2load's read into the same
    shape): requests, req/s, latency percentiles in ms, errors (every err_* summed) and each."""
    return {
        "requests": w["requests"],
        "rps": w["requests"] / (w["duration_us"] / 1e6),
        "p50_ms": w["p50_us"] / 1000, "p90_ms": w["p90_us"] / 1000,
        "p99_ms": w["p99_us"] / 1000, "p999_ms": w["p999_us"] / 1000,
        "max_ms": w["max_us"] / 1000,
        "errors": sum(v for k, v in w.items() if k.startswith("err_")),
        "error_detail": {k: w[k] for k in w if k.startswith("err_")},
    }


def run_wrk(port, script, duration, connections, timeout_s=5, tls=False, core=None):
    """One wrk run (1 thread); `core`: wrk runs on that core only (taskset)."""
    scheme = "https" if tls else "http"
    argv = (["taskset", "-c", str(core)] if core is not None else []) + ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", f"--timeout={timeout_s}s",
            "--latency", "-s", script, f"{scheme}://127.0.0.1:{port}/"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    m = re.search(r"WRKJSON (\{.*\})", out)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"wrk failed ({p.returncode}):\n{out}")
    r = json.loads(m.group(1))
    r["wrk_cpu_s"] = ru.ru_utime + ru.ru_stime
    return r
