// Idle keep-alive race through the proxy.
//
// The reference server is Node's http server: it answers `Keep-Alive: timeout=5` but, since
// Node 20.x added HTTP_SERVER_KEEP_ALIVE_TIMEOUT_BUFFER, really closes an idle keep-alive
// connection 6 s (5 s + 1 s) after its last response. A request the proxy sends on a pooled
// upstream connection right when the server closes it meets a FIN/RST and no answer. The
// proxy must then retry safely (an idempotent request, or one the server never saw) or
// answer with a clear error status, and never hang, reset the client without an answer, or
// apply a POST twice.
//
// How the race is set up in one pass (instead of one 6 s wait per attempt):
//  1. `pool` concurrent long-polls through the proxy make it open `pool` upstream
//     connections; the server answers them all (204) after its 3 s long-poll timeout, so
//     they all fall idle at about the same moment t0.
//  2. Requests are then sent at t0 + each offset below, on fresh client connections. The GETs
//     are long-polls too, so each keeps its upstream connection busy for 3 s and the next
//     request must take another idle one, of the same age. POSTs go last (they free their
//     connection at once). Offsets straddle both 5 s (the advertised timeout) and 6 s (the
//     real one) in small steps, so some land in the closing window.
//
// Env (set by run.sh): PROXY_URL, UPSTREAM_URL. This proxy/server pair must carry no other
// traffic, or the pooled connections would not be idle.
import { describe, test, expect } from "vitest"
import http from "node:http"
import { env, uniquePath, createStream, readAll } from "./lib.mjs"

const proxy = new URL(env("PROXY_URL"))
const upstream = env("UPSTREAM_URL")

const schedule = [
  ...[4990, 5000, 5010].map((at) => ({ at, method: "GET" })),
  ...[5980, 5990, 5995, 5998, 6000, 6002, 6005, 6010].map((at) => ({ at, method: "GET" })),
  { at: 6015, method: "POST" },
  { at: 6030, method: "POST" },
]
const pool = schedule.length
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

async function tailOffset(path) {
  const head = await fetch(`${upstream}${path}`, { method: "HEAD" })
  return head.headers.get("stream-next-offset")
}

describe("idle keep-alive race through the proxy", () => {
  test(
    "requests sent as the server closes idle keep-alives are retried or answered clearly",
    async () => {
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

      // 2. Requests at t0 + offset.
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
    3000 + 6100 + requestTimeoutMs + 5000,
  )
})
