// Idle keep-alive race through the proxy.
//
// The reference server is Node's http server: it answers `Keep-Alive: timeout=5` but, since
// Node 20.x added HTTP_SERVER_KEEP_ALIVE_TIMEOUT_BUFFER, really closes an idle keep-alive
// connection 6 s (5 s + 1 s) after its last response. A request the proxy sends on a pooled
// upstream connection right when the server closes it meets a FIN/RST and no answer. The
// proxy must then retry safely (an idempotent request, or one the server never saw) or
// answer with a clear error status, and never hang, reset the client without an answer, or
// apply a POST twice. run.sh runs this file against a server with the default keep-alive
// and against one that closes sooner (3 s) than a proxy's own idle timeout is likely to.
//
// How the race is set up in one pass (instead of one long wait per attempt):
//  0. A direct probe measures when the server really closes an idle connection (closeMs)
//     and reads the timeout it advertises (hintMs).
//  1. `pool` concurrent long-polls through the proxy make it open `pool` upstream
//     connections; the server answers them all (204) after its 3 s long-poll timeout, so
//     they all fall idle at about the same moment t0.
//  2. Requests are then sent at t0 + offsets around hintMs and closeMs, each on a fresh
//     client connection. The GETs are long-polls too, so each keeps its upstream connection
//     busy for 3 s and the next request must take another idle one of the same age. POSTs
//     go last (they free their connection at once). Some land in the closing window.
//  The server's connection trace (printed) shows whether the proxy reused idle connections
//  at all: a proxy that closes them first never meets the race, which is fine.
//
// Env (set by run.sh): PROXY_URL, UPSTREAM_URL. This proxy/server pair must carry no other
// traffic, or the pooled connections would not be idle.
import { describe, test, expect } from "vitest"
import http from "node:http"
import net from "node:net"
import { existsSync, readFileSync } from "node:fs"
import { env, uniquePath, createStream, readAll } from "./lib.mjs"

const proxy = new URL(env("PROXY_URL"))
const upstream = env("UPSTREAM_URL")

const getOffsetsAroundClose = [-20, -10, -5, -3, -1, 0, 1, 3, 5, 10]
const getOffsetsAroundHint = [-10, 0, 10]
const postOffsetsAfterClose = [15, 30]
const pool = getOffsetsAroundClose.length + getOffsetsAroundHint.length + postOffsetsAfterClose.length
// The server holds a long-poll 3 s; anything slower than this bound is a hang.
const requestTimeoutMs = 4500

/** One request on a fresh client connection; resolves {status, body, ms} or {error, ms}. */
function request(method, path, body) {
  return new Promise((resolve) => {
    const agent = new http.Agent({ keepAlive: false })
    const started = performance.now()
    const req = http.request(
      {
        host: proxy.hostname,
        port: proxy.port,
        method,
        path,
        agent,
        headers: body === undefined ? {} : { "Content-Type": "text/plain" },
      },
      (res) => {
        let data = ""
        res.setEncoding("utf8")
        res.on("data", (d) => (data += d))
        res.on("end", () =>
          resolve({ status: res.statusCode, body: data, ms: performance.now() - started, end: performance.now() }),
        )
        res.on("error", (e) =>
          resolve({ error: `response aborted: ${e.code ?? e.message}`, status: res.statusCode, ms: performance.now() - started }),
        )
      },
    )
    req.setTimeout(requestTimeoutMs, () => {
      req.destroy(new Error(`no answer within ${requestTimeoutMs} ms (hang)`))
    })
    req.on("error", (e) => resolve({ error: e.code ?? e.message, ms: performance.now() - started }))
    req.end(body)
  })
}

// What the reference server saw (start-reference-server.mjs --trace-connections) on the
// connections the proxy used (those that carried long-polls or POSTs; the test's own direct
// requests are PUT, HEAD and plain GETs): did the proxy reuse connections idle for about as
// long as the server keeps them, and did the server close any of them for idleness?
// Printed for the reader; a proxy that closes idle connections first never meets the race,
// which is not a failure.
function summariseTrace(file, closeMs) {
  if (!file || !existsSync(file)) return "no connection trace"
  const events = readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l))
  const requests = events.filter((e) => e.ev === "request")
  const viaProxy = (e) => e.method === "POST" || e.url.includes("live=long-poll")
  const conns = new Set(requests.filter(viaProxy).map((e) => e.conn))
  const proxied = requests.filter((e) => conns.has(e.conn))
  const reused = proxied.filter((e) => e.idleMs !== null)
  const late = reused.filter((e) => e.idleMs >= closeMs - 1000)
  const maxIdle = Math.max(0, ...reused.map((e) => e.idleMs))
  const idleClosed = events.filter(
    (e) => e.ev === "close" && conns.has(e.conn) && e.idleMs !== null && e.idleMs >= closeMs - 50,
  ).length
  return (
    `server trace: the proxy used ${conns.size} upstream connection(s) for ${proxied.length} ` +
    `request(s); ${reused.length} request(s) reused an idle connection (longest idle ` +
    `${maxIdle.toFixed(1)} ms, ${late.length} within 1 s of the server's close); the server ` +
    `closed ${idleClosed} of them for idleness`
  )
}

/**
 * Measures, directly against the server, when it closes an idle keep-alive connection
 * after a response, and the timeout its Keep-Alive header advertises.
 */
function probeIdleClose() {
  const u = new URL(upstream)
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(u.port), u.hostname, () => {
      socket.write(`GET /v1/stream/keepalive-probe-absent HTTP/1.1\r\nHost: ${u.host}\r\n\r\n`)
    })
    let head = ""
    let answeredAt = 0
    socket.on("data", (d) => {
      head += d
      if (!answeredAt && head.includes("\r\n\r\n")) answeredAt = performance.now()
    })
    socket.on("end", () => {
      socket.end()
      const hint = /keep-alive:\s*timeout=(\d+)/i.exec(head)
      resolve({ closeMs: performance.now() - answeredAt, hintMs: hint ? Number(hint[1]) * 1000 : null })
    })
    socket.on("error", reject)
    socket.setTimeout(15000, () => reject(new Error("server kept an idle connection 15 s")))
  })
}

async function tailOffset(path) {
  const head = await fetch(`${upstream}${path}`, { method: "HEAD" })
  return head.headers.get("stream-next-offset")
}

describe("idle keep-alive race through the proxy", () => {
  test(
    "requests sent as the server closes idle keep-alives are retried or answered clearly",
    async () => {
      const probe = probeIdleClose()
      const path = uniquePath("keepalive-race")
      await createStream(upstream, path, "text/plain", "seed;")
      const longPoll = `${path}?offset=${encodeURIComponent(await tailOffset(path))}&live=long-poll`

      // 1. Fill the proxy's pool: concurrent long-polls, all answered 204 after 3 s.
      const warm = await Promise.all(Array.from({ length: pool }, () => request("GET", longPoll)))
      for (const w of warm) {
        expect(w.error, `warm-up long-poll failed: ${w.error}`).toBeUndefined()
        expect(w.status, `warm-up long-poll: ${w.body}`).toBe(204)
      }
      const t0 = Math.max(...warm.map((w) => w.end))
      // 2. Requests at t0 + offset (the probe has answered by then: it started before t0).
      const { closeMs, hintMs } = await probe
      console.log(
        `server closes idle keep-alive after ${closeMs.toFixed(0)} ms ` +
          `(advertises ${hintMs === null ? "no timeout" : `${hintMs} ms`})`,
      )
      const schedule = [
        ...(hintMs === null ? [] : getOffsetsAroundHint.map((d) => ({ at: hintMs + d, method: "GET" }))),
        ...getOffsetsAroundClose.map((d) => ({ at: closeMs + d, method: "GET" })),
        ...postOffsetsAfterClose.map((d) => ({ at: closeMs + d, method: "POST" })),
      ]
      const outcomes = await Promise.all(
        schedule.map(async ({ at, method }, i) => {
          await new Promise((r) => setTimeout(r, Math.max(0, t0 + at - performance.now())))
          const sentAt = performance.now() - t0
          const marker = `race-${i};`
          const r =
            method === "POST" ? await request("POST", path, marker) : await request("GET", longPoll)
          return { at, sentAt, method, marker, ...r }
        }),
      )
      for (const o of outcomes) {
        const what = o.error ? `error ${o.error} after ${o.ms.toFixed(0)} ms` : `status ${o.status} in ${o.ms.toFixed(0)} ms`
        console.log(`idle ${o.sentAt.toFixed(1).padStart(7)} ms, ${o.method.padEnd(4)}: ${what}`)
      }

      console.log(summariseTrace(process.env.UPSTREAM_TRACE, closeMs))

      // Never a hang or a reset without an answer; success or a clear 5xx error.
      for (const o of outcomes) {
        const where = `idle ${o.sentAt.toFixed(1)} ms ${o.method}`
        expect(o.error, `${where}: ${o.error}`).toBeUndefined()
        // GET long-polls end 204 (timeout) or 200 (the POSTs' data); a POST appends with 204.
        const clear = [200, 204].includes(o.status) || [502, 503, 504].includes(o.status)
        expect(clear, `${where}: status ${o.status} ${o.body}`).toBe(true)
      }
      // A POST is applied at most once, and exactly once when it was answered 2xx.
      const content = await readAll(upstream, path)
      for (const o of outcomes.filter((x) => x.method === "POST")) {
        const count = content.split(o.marker).length - 1
        expect(count, `${o.marker} applied ${count} times`).toBeLessThanOrEqual(1)
        if (o.status >= 200 && o.status < 300) {
          expect(count, `${o.marker} answered ${o.status} but applied ${count} times`).toBe(1)
        }
      }
    },
    3000 + 7000 + requestTimeoutMs + 5000,
  )
})
