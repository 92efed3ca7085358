// Runs the public Durable Streams server conformance suite against one base URL.
// run.sh runs this file twice: once against the reference server directly, once through
// the proxy in front of it, and compare-results.mjs diffs the per-test outcomes.
//
// Env: CONFORMANCE_BASE_URL (server root, e.g. http://127.0.0.1:1234)
//      CONFORMANCE_SUBSCRIPTIONS=1 to include the reserved subscription API tests
//      CONFORMANCE_LONG_POLL_TIMEOUT_MS (the server's long-poll timeout, default 3000)
import { runConformanceTests } from "@durable-streams/server-conformance-tests"

const baseUrl = process.env.CONFORMANCE_BASE_URL
if (!baseUrl) {
  throw new Error("CONFORMANCE_BASE_URL is required (the server root URL)")
}

runConformanceTests({
  baseUrl,
  longPollTimeoutMs: Number(process.env.CONFORMANCE_LONG_POLL_TIMEOUT_MS ?? "3000"),
  subscriptions: process.env.CONFORMANCE_SUBSCRIPTIONS === "1",
})
