// Makes the suite's fetch speak HTTP/2 over TLS (run.sh --h2-tls): undici's own fetch with an
// Agent that negotiates h2 by ALPN (allowH2) and trusts the test CA in FERRY_H2_CA. Node's
// bundled fetch is left alone: the npm undici is pinned (package.json) and works on Node 18+.
import { readFileSync } from "node:fs"

import { Agent, fetch, Headers, Request, Response, setGlobalDispatcher } from "undici"

const ca = process.env.FERRY_H2_CA
if (!ca) throw new Error("FERRY_H2_CA is required (the test CA of ferry's listener)")

const agent = new Agent({ allowH2: true, connect: { ca: readFileSync(ca) } })
setGlobalDispatcher(agent)
globalThis.fetch = (input, init) => fetch(input, { dispatcher: agent, ...init })
globalThis.Headers = Headers
globalThis.Request = Request
globalThis.Response = Response
