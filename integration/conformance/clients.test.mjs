// Real clients through the proxy in front of the Durable Streams reference server:
// curl (keep-alive reuse, chunked upload from stdin, --no-buffer SSE), the official
// TypeScript client, and the latency of streamed answers (SSE, long-poll).
//
// Env (set by run.sh): PROXY_URL (the proxy's listener), UPSTREAM_URL (the reference
// server itself, used to write and to check behind the proxy's back).
import { describe, test, expect, afterEach } from "vitest"
import { DurableStream, stream } from "@durable-streams/client"
import {
  env,
  uniquePath,
  createStream,
  append,
  readAll,
  run,
  startProcess,
  openStreamingGet,
  median,
} from "./lib.mjs"

const proxy = env("PROXY_URL")
const upstream = env("UPSTREAM_URL")

const cleanups = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()()
})

describe("curl through the proxy", () => {
  test("HTTP/1.1 keep-alive: two requests in one curl invocation reuse one connection", async () => {
    const path = uniquePath("curl-keepalive")
    await createStream(upstream, path, "text/plain", "hello")
    const url = `${proxy}${path}?offset=-1`
    const { code, stdout, stderr } = await run("curl", [
      "-sS", "-v", "--http1.1", "-w", "status=%{http_code} conns=%{num_connects}\\n",
      "-o", "/dev/null", url, "-o", "/dev/null", url,
    ])
    expect(code, stderr).toBe(0)
    expect(stdout.trim().split("\n")).toEqual(["status=200 conns=1", "status=200 conns=0"])
    expect(stderr).toMatch(/Re-using existing connection/)
    expect(stderr).not.toMatch(/Closing connection/)
  })

  test("chunked upload from stdin (Transfer-Encoding: chunked) arrives whole", async () => {
    const path = uniquePath("curl-chunked")
    await createStream(upstream, path, "text/plain")
    // Several pieces of different sizes, written to curl's stdin one after another.
    const pieces = [
      "first line\n",
      "x".repeat(70000) + "\n",
      "third\r\nwith CRLF\n",
      "y".repeat(1) ,
      "0\r\n\r\n-looks-like-a-last-chunk-but-is-data\n",
    ]
    const { code, stdout, stderr } = await run(
      "curl",
      [
        "-sS", "-v", "--http1.1", "-X", "POST",
        "-H", "Transfer-Encoding: chunked", "-H", "Content-Type: text/plain",
        "--data-binary", "@-", "-w", "status=%{http_code}\\n", "-o", "/dev/null",
        `${proxy}${path}`,
      ],
      { stdinChunks: pieces },
    )
    expect(code, stderr).toBe(0)
    expect(stderr).toMatch(/> Transfer-Encoding: chunked/i)
    expect(stdout.trim()).toMatch(/^status=20[04]$/)
    expect(await readAll(upstream, path)).toBe(pieces.join(""))
  })

  test("--no-buffer SSE: an event appended after the subscription started arrives while the feed is open", async () => {
    const path = uniquePath("curl-sse")
    await createStream(upstream, path, "text/plain", "before-subscribe")
    const curl = startProcess("curl", [
      "-sS", "--no-buffer", "--http1.1", `${proxy}${path}?offset=-1&live=sse`,
    ])
    cleanups.push(() => curl.stop())
    // Caught up: the initial data and its control event have arrived.
    await curl.waitFor("before-subscribe", 5000)
    await curl.waitFor("event: control", 5000)
    const marker = `after-subscribe-${Date.now()}`
    const t0 = performance.now()
    await append(upstream, path, marker)
    const t1 = await curl.waitFor(marker, 3000)
    console.log(`curl --no-buffer SSE: appended event reached curl after ${(t1 - t0).toFixed(1)} ms`)
    expect(curl.exited, "curl must still be reading the open feed").toBe(false)
    expect(curl.stdout.indexOf(marker)).toBeGreaterThan(curl.stdout.indexOf("before-subscribe"))
  })
})

describe("@durable-streams/client through the proxy", () => {
  test("create, append, read back", async () => {
    const url = `${proxy}${uniquePath("ts-client")}`
    const handle = await DurableStream.create({ url, contentType: "application/json" })
    await handle.append(JSON.stringify({ n: 1, text: "one" }))
    await handle.append(JSON.stringify({ n: 2, text: "two" }))
    const res = await stream({ url, live: false })
    expect(await res.json()).toEqual([
      { n: 1, text: "one" },
      { n: 2, text: "two" },
    ])
  })

  for (const live of ["sse", "long-poll"]) {
    test(`live subscription (${live}) receives appends made after it started`, async () => {
      const url = `${proxy}${uniquePath(`ts-live-${live}`)}`
      const handle = await DurableStream.create({ url, contentType: "application/json" })
      await handle.append(JSON.stringify({ n: 0 }))

      const received = []
      let notify = () => {}
      const res = await stream({ url, live })
      cleanups.push(async () => res.cancel())
      res.subscribeJson(async (batch) => {
        received.push(...batch.items)
        notify()
      })
      const waitItems = (count, ms) =>
        new Promise((resolve, reject) => {
          const timer = setTimeout(
            () => reject(new Error(`only ${JSON.stringify(received)} after ${ms} ms`)),
            ms,
          )
          notify = () => {
            if (received.length >= count) {
              clearTimeout(timer)
              resolve()
            }
          }
          notify()
        })
      await waitItems(1, 5000) // catch-up done, subscription live
      await handle.append(JSON.stringify({ n: 1 }))
      await handle.append(JSON.stringify({ n: 2 }))
      await waitItems(3, 5000)
      expect(received).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }])
    })
  }
})

describe("streamed answers get no added delay", () => {
  test("SSE: events reach the client through the proxy without delay", async () => {
    const path = uniquePath("latency-sse")
    await createStream(upstream, path, "text/plain", "seed")
    const direct = openStreamingGet(`${upstream}${path}?offset=-1&live=sse`)
    const viaProxy = openStreamingGet(`${proxy}${path}?offset=-1&live=sse`)
    cleanups.push(async () => {
      direct.close()
      viaProxy.close()
    })
    await Promise.all([direct.waitFor("event: control", 5000), viaProxy.waitFor("event: control", 5000)])

    const events = 10
    const lat = { direct: [], proxy: [] }
    for (let i = 0; i < events; i++) {
      const marker = `latency-${i}-${Date.now()}`
      // An event is complete when its data and the control event after it have arrived
      // (two server writes: a proxy with Nagle on would hold the second one).
      const complete = (body) => {
        const at = body.indexOf(marker)
        return at >= 0 && body.indexOf("event: control", at) >= 0
      }
      const t0 = performance.now()
      const arrivals = Promise.all([direct.waitFor(complete, 3000), viaProxy.waitFor(complete, 3000)])
      await append(upstream, path, marker)
      const [td, tp] = await arrivals
      lat.direct.push(td - t0)
      lat.proxy.push(tp - t0)
    }
    const md = median(lat.direct)
    const mp = median(lat.proxy)
    console.log(
      `SSE latency over ${events} events: median direct ${md.toFixed(2)} ms, via proxy ` +
        `${mp.toFixed(2)} ms (max ${Math.max(...lat.proxy).toFixed(2)} ms), ` +
        `added ${(mp - md).toFixed(2)} ms`,
    )
    expect(mp).toBeLessThan(100)
  })

  test("long-poll: the answer reaches the client through the proxy without delay", async () => {
    const path = uniquePath("latency-longpoll")
    await createStream(upstream, path, "text/plain", "seed")
    const rounds = 5
    const lat = { direct: [], proxy: [] }
    for (let i = 0; i < rounds; i++) {
      const head = await fetch(`${upstream}${path}`, { method: "HEAD" })
      const tail = head.headers.get("stream-next-offset")
      expect(tail).toBeTruthy()
      const marker = `longpoll-${i}-${Date.now()}`
      const q = `${path}?offset=${encodeURIComponent(tail)}&live=long-poll`
      const direct = openStreamingGet(`${upstream}${q}`)
      const viaProxy = openStreamingGet(`${proxy}${q}`)
      cleanups.push(async () => {
        direct.close()
        viaProxy.close()
      })
      // Not a synchronisation: gives both long-polls time to be parked at the server.
      // Had one not arrived yet, it would be answered at once, which only lowers its figure.
      await new Promise((r) => setTimeout(r, 100))
      const t0 = performance.now()
      const arrivals = Promise.all([direct.waitFor(marker, 2500), viaProxy.waitFor(marker, 2500)])
      await append(upstream, path, marker)
      const [td, tp] = await arrivals
      lat.direct.push(td - t0)
      lat.proxy.push(tp - t0)
      expect(viaProxy.status).toBe(200)
    }
    const md = median(lat.direct)
    const mp = median(lat.proxy)
    console.log(
      `long-poll latency over ${rounds} rounds: median direct ${md.toFixed(2)} ms, via proxy ` +
        `${mp.toFixed(2)} ms (max ${Math.max(...lat.proxy).toFixed(2)} ms), ` +
        `added ${(mp - md).toFixed(2)} ms`,
    )
    expect(mp).toBeLessThan(100)
  })
})
