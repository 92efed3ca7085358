"""The fault campaign's checker (bench/faults/run.py): what the clients saw and what the streams
hold, against what the contract allows. stdlib only, no processes: tests/bench/faults_checks_test.py
feeds it hand-made records.

  classify(status, headers, body)  an answer's label and whether the contract allows it
  check_stream(data, acked)        every acknowledged append once, in producer order
  check_reader(received, direct)   a reader's bytes equal a direct read of its stream
  evaluate(record)                 counts and violations of a whole campaign record

  python3 bench/faults/checks.py RECORD.json   # evaluates a record (run.py --keep-record); exit 1
                                               # on any violation

Entries in a stream are "p<producer>-<seq>;" (run.py's producers; byte streams).
"""
import json
import re
import sys

# ---------------------------------------------------------------- answers

# ferry's own answers when the *local instance* failed after the request was sent: the contract's
# "what the local instance's failure gives without routing (502/504)" (docs/forwarding.md,
# "Owner routing"; README "Upstream limits and timeouts"). The outcome is unknown, as with
# 503 forward_failed. --strict-5xx makes them violations.
LOCAL_FAILURE_5XX = {(502, "upstream_outcome_unknown"), (504, "upstream_response_timeout")}


def error_code(body):
    """The "code" of a JSON error envelope, or ""."""
    try:
        return str(json.loads(body)["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return ""


def classify(status, headers, body=b"", strict_5xx=False):
    """(label, allowed) for one answer a client got. status 0: no answer (refused, reset,
    timeout: the client retries). headers: lower-case names.

    Allowed: 2xx; 409 with Streams-Replay-To (an owner ferry could not reach: the local 409
    unchanged, the client replays); a 5xx an instance sent (Prisma-Streams-Origin: passed
    through); any 503 with Retry-After (ferry's forward_failed, upstream_unavailable, draining;
    an instance's shard_moving); ferry's 502 upstream_outcome_unknown / 504
    upstream_response_timeout (LOCAL_FAILURE_5XX) unless strict_5xx. Anything else is a
    violation, including every other 4xx: in this campaign a 404, a producer_seq_gap or a
    400 means lost or mangled data."""
    if status == 0:
        return "no answer", True
    if 200 <= status < 300:
        return f"{status}", True
    code = error_code(body)
    origin = "prisma-streams-origin" in headers
    if status == 409 and headers.get("streams-replay-to"):
        return f"409 {code or '?'} (replay-to)", True
    if 500 <= status < 600:
        if origin:
            return f"{status} {code or '?'} (instance)", True
        if status == 503 and headers.get("retry-after"):
            return f"503 {code or '?'} (ferry, retry-after)", True
        if (status, code) in LOCAL_FAILURE_5XX and not strict_5xx:
            return f"{status} {code} (ferry, local instance failed)", True
        return f"{status} {code or '?'} (ferry{', retry-after' if headers.get('retry-after') else ''})", False
    return f"{status} {code or '?'}{' (instance)' if origin else ''}", False


# ---------------------------------------------------------------- streams

ENTRY = re.compile(rb"(p\d+)-(\d+)")


def entries(data):
    """b"p0-0;p1-0;" -> [("p0", 0), ("p1", 0)]; an entry of another shape -> ("?", text)."""
    out = []
    for e in data.split(b";")[:-1]:
        m = ENTRY.fullmatch(e)
        out.append((m.group(1).decode(), int(m.group(2))) if m else ("?", e.decode("latin-1")))
    if data and not data.endswith(b";"):
        out.append(("?", data.rsplit(b";", 1)[-1].decode("latin-1")))
    return out


def check_stream(name, data, acked):
    """Violations (strings) of one stream: acked is producer -> appends acknowledged (seqs
    0..n-1; one append in flight at a time, so seq n may be there once, applied but never
    acknowledged). Each producer's entries must read 0, 1, ..., n-1 (and maybe n): every
    acknowledged append exactly once and in order, nothing a producer did not send."""
    out = []
    seqs = {}
    for pid, seq in entries(data):
        if pid == "?" or pid not in acked:
            out.append(f"{name}: entry {pid}-{seq} no producer of this stream wrote")
            continue
        seqs.setdefault(pid, []).append(seq)
    for pid, n in acked.items():
        got = seqs.get(pid, [])
        if got == list(range(n)) or got == list(range(n + 1)):
            continue
        seen = set(got)
        dup = len(got) - len(seen)
        missing = [s for s in range(n) if s not in seen]
        disorder = sum(1 for a, b in zip(got, got[1:]) if b < a)
        beyond = sorted(s for s in seen if s > n)
        what = []
        if dup:
            what.append(f"{dup} duplicated")
        if missing:
            what.append(f"{len(missing)} acknowledged missing (first seq {missing[0]})")
        if disorder:
            what.append(f"{disorder} out of order")
        if beyond:
            what.append(f"seqs never sent {beyond[:3]}")
        out.append(f"{name}: producer {pid} ({n} acknowledged): " + ", ".join(what or ["bad order"]))
    return out


def check_reader(who, received, direct, offset_errors=0):
    """Violations of one SSE reader: its bytes must equal the direct read of its stream, and
    every control frame's streamNextOffset must have matched the bytes received before it."""
    out = []
    if received != direct:
        i = next((k for k, (a, b) in enumerate(zip(received, direct)) if a != b),
                 min(len(received), len(direct)))
        out.append(f"{who}: {len(received)} bytes received, the stream has {len(direct)}; "
                   f"first difference at byte {i}")
    if offset_errors:
        out.append(f"{who}: {offset_errors} control frames whose streamNextOffset did not match "
                   "the bytes received")
    return out


# ---------------------------------------------------------------- a whole campaign

def evaluate(record):
    """record (JSON-able; data as latin-1 text):
        streams:    name -> {"data": text, "acked": {producer: n}}
        readers:    [{"who", "stream", "received": text, "offset_errors": n, "caught_up": bool}]
        answers:    label -> count (every client answer, classify()'s labels)
        disallowed: [{"who", "status", "label", "detail"}]  (answers classify() refused)
        attempts, faults, notes: passed on
    Returns (counts, violations)."""
    violations = []
    for name, s in record["streams"].items():
        violations += check_stream(name, s["data"].encode("latin-1"), s["acked"])
    for r in record["readers"]:
        direct = record["streams"][r["stream"]]["data"].encode("latin-1")
        violations += check_reader(r["who"], r["received"].encode("latin-1"), direct,
                                   r.get("offset_errors", 0))
    for d in record["disallowed"]:
        violations.append(f"{d['who']}: answer {d['label']} is not one the contract allows"
                          f"{': ' + d['detail'] if d.get('detail') else ''}")
    acked = sum(n for s in record["streams"].values() for n in s["acked"].values())
    attempts = record.get("attempts", acked)
    counts = {"appends_acknowledged": acked, "attempts": attempts, "retried": attempts - acked,
              "answers": dict(sorted(record["answers"].items(), key=lambda kv: -kv[1])),
              "faults": record.get("faults", {}), "streams": len(record["streams"]),
              "readers_checked": len(record["readers"]),
              "reader_bytes": sum(len(r["received"]) for r in record["readers"]),
              "violations": len(violations)}
    return counts, violations


def print_report(counts, violations, out=sys.stdout):
    print(f"appends acknowledged {counts['appends_acknowledged']}, attempts {counts['attempts']}, "
          f"retried {counts['retried']}, streams {counts['streams']}", file=out)
    print("answers: " + ", ".join(f"{k}: {v}" for k, v in counts["answers"].items()), file=out)
    print("faults injected: " + (", ".join(f"{k} {v}" for k, v in counts["faults"].items())
                                 or "none"), file=out)
    print(f"readers checked {counts['readers_checked']} ({counts['reader_bytes']} bytes)", file=out)
    print(f"violations {counts['violations']}", file=out)
    for v in violations[:30]:
        print(f"  VIOLATION {v}", file=out)
    if len(violations) > 30:
        print(f"  ... and {len(violations) - 30} more", file=out)


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: checks.py RECORD.json")
    with open(argv[1]) as f:
        counts, violations = evaluate(json.load(f))
    print_report(counts, violations)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
