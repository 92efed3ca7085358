// Starts the Durable Streams reference server (@durable-streams/server) on loopback.
// The package has no CLI, so this script is its entry point for run.sh.
//
// Usage: node start-reference-server.mjs [--port N] [--long-poll-timeout-ms N]
//                                        [--trace-connections FILE] [--keep-alive-timeout-ms N]
// Prints exactly one line when listening:
//   reference-server ready url=http://127.0.0.1:<port>
// and stops cleanly on SIGTERM / SIGINT.
//
// The long-poll timeout stays under the conformance suite's 5 s default test timeout
// (two long-poll tests wait for the server's timeout); 3000 ms is the default here.
//
// --keep-alive-timeout-ms N sets the node:http server's keepAliveTimeout (default 5000; it
// advertises `Keep-Alive: timeout=N/1000` and, in Node >= 20.x, closes an idle connection
// only N + 1000 ms after its last response).
//
// --trace-connections FILE appends one JSON line per connection event, so a test can tell
// whether a proxy reused an idle connection and for how long it had been idle:
//   {"ev":"open","conn":1,"t":...}
//   {"ev":"request","conn":1,"t":...,"idleMs":...,"method":"GET","url":"/v1/..."}
//   {"ev":"close","conn":1,"t":...,"idleMs":...}   (t and idleMs in ms, performance.now())
import { appendFileSync } from "node:fs"
import { DurableStreamTestServer } from "@durable-streams/server"

function argValue(name, fallback) {
  const i = process.argv.indexOf(name)
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback
}

const port = Number(argValue("--port", "0"))
const longPollTimeout = Number(argValue("--long-poll-timeout-ms", "3000"))
const traceFile = argValue("--trace-connections", "")
const keepAliveTimeout = argValue("--keep-alive-timeout-ms", "")

const server = new DurableStreamTestServer({ port, host: "127.0.0.1", longPollTimeout })
const url = await server.start()
if (traceFile) traceConnections(server.server, traceFile)
if (keepAliveTimeout) server.server.keepAliveTimeout = Number(keepAliveTimeout)
const bound = new URL(url)
console.log(`reference-server ready url=http://127.0.0.1:${bound.port}`)

function traceConnections(httpServer, file) {
  // httpServer is the package's node:http server (a private field at the TypeScript level).
  if (!httpServer || typeof httpServer.on !== "function") {
    throw new Error("--trace-connections: the reference server exposes no http server")
  }
  const write = (o) => appendFileSync(file, JSON.stringify(o) + "\n")
  let next = 0
  httpServer.on("connection", (socket) => {
    const conn = ++next
    let idleSince = null // end of the last response; null while a request is in flight
    socket.__traceConn = { conn, setIdle: () => (idleSince = performance.now()) }
    write({ ev: "open", conn, t: performance.now() })
    socket.on("close", () => {
      const t = performance.now()
      write({ ev: "close", conn, t, idleMs: idleSince === null ? null : t - idleSince })
    })
    socket.__traceRequest = (req) => {
      const t = performance.now()
      const idleMs = idleSince === null ? null : t - idleSince
      write({ ev: "request", conn, t, idleMs, method: req.method, url: req.url })
      idleSince = null
    }
  })
  httpServer.prependListener("request", (req, res) => {
    req.socket.__traceRequest?.(req)
    res.on("finish", () => req.socket.__traceConn?.setIdle())
  })
}

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
