// Runs the public Durable Streams server conformance suite against one base URL.
// run.sh runs this file twice: once against the reference server directly, once through
// the proxy in front of it, and compare-results.mjs diffs the per-test outcomes.
//
// Env: CONFORMANCE_BASE_URL (server root, e.g. http://127.0.0.1:1234)
//      CONFORMANCE_SUBSCRIPTIONS=1 to include the reserved subscription API tests
//      CONFORMANCE_LONG_POLL_TIMEOUT_MS (the server's long-poll timeout, default 3000)
import { runConformanceTests } from "@durable-streams/server-conformance-tests"
import { describe, expect, test } from "vitest"

const baseUrl = process.env.CONFORMANCE_BASE_URL
if (!baseUrl) {
  throw new Error("CONFORMANCE_BASE_URL is required (the server root URL)")
}

runConformanceTests({
  baseUrl,
  longPollTimeoutMs: Number(process.env.CONFORMANCE_LONG_POLL_TIMEOUT_MS ?? "3000"),
  subscriptions: process.env.CONFORMANCE_SUBSCRIPTIONS === "1",
})

// The suite's "should handle chunk-size pagination correctly" reads a 100 KiB stream back (one
// PUT, one POST, two GETs: the reference server answers with all of it, then with nothing and
// Stream-Up-To-Date) and then checks it with one expect() per byte: 102,400 calls, which take
// 4.6 to 9.7 s of the test client's CPU on this 2-core machine under load (the requests take
// under 1 s). Its outcome against its 5 s budget is decided by the load on the machine, on the
// direct side as on the proxied one, and says nothing about the server or the proxy: run.sh
// leaves it out of both runs (SUITE_SKIP there) and this case sends the same requests and
// compares the bytes in one assertion.
describe("ferry: Chunking and Large Payloads", () => {
  test("chunk-size pagination, the bytes compared in one assertion", async () => {
    const streamPath = `/v1/stream/ferry-chunk-pagination-${Date.now()}`
    const put = await fetch(`${baseUrl}${streamPath}`, {
      method: "PUT",
      headers: { "Content-Type": "application/octet-stream" },
    })
    expect(put.status).toBe(201)
    const largeData = new Uint8Array(100 * 1024)
    for (let i = 0; i < largeData.length; i++) largeData[i] = i % 256
    const post = await fetch(`${baseUrl}${streamPath}`, {
      method: "POST",
      headers: { "Content-Type": "application/octet-stream" },
      body: largeData,
    })
    expect([200, 204]).toContain(post.status)
    const chunks = []
    let currentOffset = null
    let previousOffset = null
    let reads = 0
    for (;;) {
      expect(++reads).toBeLessThanOrEqual(1000)
      const url = currentOffset
        ? `${baseUrl}${streamPath}?offset=${encodeURIComponent(currentOffset)}`
        : `${baseUrl}${streamPath}`
      const response = await fetch(url, { method: "GET" })
      expect(response.status).toBe(200)
      const data = Buffer.from(await response.arrayBuffer())
      if (data.length > 0) chunks.push(data)
      const nextOffset = response.headers.get("Stream-Next-Offset")
      const upToDate = response.headers.get("Stream-Up-To-Date")
      if (upToDate === "true" && data.length === 0) break
      expect(nextOffset).not.toBeNull()
      if (nextOffset === currentOffset && data.length === 0) break
      if (previousOffset && nextOffset) expect(nextOffset >= previousOffset).toBe(true)
      previousOffset = currentOffset
      currentOffset = nextOffset
    }
    const result = Buffer.concat(chunks)
    expect(result.length).toBe(largeData.length)
    expect(result.equals(Buffer.from(largeData.buffer))).toBe(true)
  })
})
