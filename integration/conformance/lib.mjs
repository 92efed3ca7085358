// Small helpers shared by clients.test.mjs and keepalive.test.mjs.
import { spawn } from "node:child_process"
import http from "node:http"

export function env(name) {
  const v = process.env[name]
  if (!v) throw new Error(`${name} is required (run these tests through run.sh)`)
  return v.replace(/\/$/, "")
}

let counter = 0
export function uniquePath(prefix) {
  counter++
  return `/v1/stream/${prefix}-${process.pid}-${Date.now()}-${counter}`
}

/** Creates a stream (PUT) and returns the response. */
export async function createStream(baseUrl, path, contentType = "text/plain", body) {
  const res = await fetch(`${baseUrl}${path}`, {
    method: "PUT",
    headers: { "Content-Type": contentType },
    body,
  })
  if (res.status !== 201 && res.status !== 200) {
    throw new Error(`PUT ${path}: ${res.status} ${await res.text()}`)
  }
  return res
}

export async function append(baseUrl, path, body, contentType = "text/plain") {
  const res = await fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "Content-Type": contentType },
    body,
  })
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`)
  await res.arrayBuffer()
  return res
}

export async function readAll(baseUrl, path) {
  const res = await fetch(`${baseUrl}${path}?offset=-1`)
  if (!res.ok) throw new Error(`GET ${path}: ${res.status}`)
  return res.text()
}

/**
 * Runs a process to completion (bounded). Returns {code, stdout, stderr}.
 * `stdinChunks` are written one by one, each after the previous one was flushed.
 */
export function run(cmd, args, { stdinChunks, timeoutMs = 10000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`${cmd} timed out after ${timeoutMs} ms\nstderr:\n${stderr}`))
    }, timeoutMs)
    child.on("error", (e) => {
      clearTimeout(timer)
      reject(e)
    })
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    ;(async () => {
      for (const chunk of stdinChunks ?? []) {
        if (!child.stdin.write(chunk)) await new Promise((r) => child.stdin.once("drain", r))
      }
      child.stdin.end()
    })().catch(() => {})
  })
}

/**
 * Starts a long-running process and collects its stdout; `waitFor(text, ms)` resolves when
 * the accumulated stdout contains text (or rejects after ms). `stop()` kills it.
 */
export function startProcess(cmd, args) {
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] })
  const state = { stdout: "", stderr: "", exited: false, child }
  const waiters = []
  const check = () => {
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (state.stdout.includes(waiters[i].text)) {
        clearTimeout(waiters[i].timer)
        waiters[i].resolve(performance.now())
        waiters.splice(i, 1)
      }
    }
  }
  child.stdout.on("data", (d) => {
    state.stdout += d
    check()
  })
  child.stderr.on("data", (d) => (state.stderr += d))
  child.on("exit", () => (state.exited = true))
  state.waitFor = (text, ms) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const i = waiters.findIndex((w) => w.timer === timer)
        if (i >= 0) waiters.splice(i, 1)
        reject(new Error(`no "${text}" within ${ms} ms; stdout so far:\n${state.stdout}`))
      }, ms)
      waiters.push({ text, resolve, timer })
      check()
    })
  state.stop = () =>
    new Promise((resolve) => {
      if (state.exited) return resolve()
      child.once("exit", () => resolve())
      child.kill("SIGTERM")
    })
  return state
}

/**
 * An incremental reader of a streaming HTTP response (SSE / long-poll) on its own
 * connection. `waitFor(text, ms)` resolves with performance.now() at the moment the
 * accumulated body first contained text (or text(body) returned true, if a function).
 */
export function openStreamingGet(url) {
  const state = { body: "", status: 0, headers: {}, ended: false }
  const waiters = []
  const check = () => {
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i]
      if (typeof w.text === "function" ? w.text(state.body) : state.body.includes(w.text, w.from)) {
        clearTimeout(waiters[i].timer)
        waiters[i].resolve(performance.now())
        waiters.splice(i, 1)
      }
    }
  }
  const agent = new http.Agent({ keepAlive: false })
  const req = http.get(url, { agent }, (res) => {
    state.status = res.statusCode
    state.headers = res.headers
    res.setEncoding("utf8")
    res.on("data", (d) => {
      state.body += d
      check()
    })
    res.on("end", () => (state.ended = true))
    res.on("error", () => (state.ended = true))
  })
  req.on("error", (e) => {
    state.error = e
    state.ended = true
  })
  state.waitFor = (text, ms, from = 0) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const i = waiters.findIndex((w) => w.timer === timer)
        if (i >= 0) waiters.splice(i, 1)
        reject(new Error(`no ${text} within ${ms} ms (status ${state.status}); body:\n${state.body.slice(-600)}`))
      }, ms)
      waiters.push({ text, resolve, timer, from })
      check()
    })
  state.close = () => {
    req.destroy()
    agent.destroy()
  }
  return state
}

export function median(values) {
  const s = [...values].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
