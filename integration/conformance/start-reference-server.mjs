// Starts the Durable Streams reference server (@durable-streams/server) on loopback.
// The package has no CLI, so this script is its entry point for run.sh.
//
// Usage: node start-reference-server.mjs [--port N] [--long-poll-timeout-ms N]
// Prints exactly one line when listening:
//   reference-server ready url=http://127.0.0.1:<port>
// and stops cleanly on SIGTERM / SIGINT.
//
// The long-poll timeout stays under the conformance suite's 5 s default test timeout
// (two long-poll tests wait for the server's timeout); 3000 ms is the default here.
import { DurableStreamTestServer } from "@durable-streams/server"

function argValue(name, fallback) {
  const i = process.argv.indexOf(name)
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback
}

const port = Number(argValue("--port", "0"))
const longPollTimeout = Number(argValue("--long-poll-timeout-ms", "3000"))

const server = new DurableStreamTestServer({ port, host: "127.0.0.1", longPollTimeout })
const url = await server.start()
const bound = new URL(url)
console.log(`reference-server ready url=http://127.0.0.1:${bound.port}`)

let stopping = false
async function stop(signal) {
  if (stopping) return
  stopping = true
  // Do not let a stuck SSE response keep the process alive past a test run.
  const force = setTimeout(() => process.exit(0), 2000)
  force.unref()
  try {
    await server.stop()
  } finally {
    process.exit(0)
  }
}
process.on("SIGTERM", () => stop("SIGTERM"))
process.on("SIGINT", () => stop("SIGINT"))
