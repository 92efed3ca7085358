// Node's http2 module as a client of ferry: node node_http2_client.mjs <base URL> [CA file]
// (http://: h2c with prior knowledge; https://: h2 by ALPN, verified against the CA).
// On one connection: creates a stream, appends three records on concurrent streams, reads them
// back, then opens an SSE feed and reads its first events. Prints one JSON line with what it
// saw; exits 1 (with the reason on stderr) on any error or unexpected answer.
import fs from 'node:fs';
import http2 from 'node:http2';

const [base, caFile] = process.argv.slice(2);
const session = http2.connect(base, caFile ? { ca: fs.readFileSync(caFile) } : {});
session.on('error', (e) => fail(`session error: ${e.message}`));
const stream = `node-h2-${process.pid}`;

function fail(why) {
  console.error(why);
  process.exit(1);
}

// One request on the session; resolves with {status, headers, body}.
function request(method, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':method': method, ':path': path, ...headers });
    let data = '';
    let head;
    req.setEncoding('utf8');
    req.on('response', (h) => { head = h; });
    req.on('data', (chunk) => { data += chunk; });
    req.on('end', () => resolve({ status: head[':status'], headers: head, body: data }));
    req.on('error', reject);
    if (body !== undefined) req.end(body); else req.end();
  });
}

// Reads an SSE response until `count` events (blank-line separated) arrived.
function readEvents(path, count) {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':method': 'GET', ':path': path });
    let buf = '';
    let head;
    req.setEncoding('utf8');
    req.on('response', (h) => { head = h; });
    req.on('data', (chunk) => {
      buf += chunk;
      const events = buf.split('\n\n').filter((e) => e.length > 0);
      if (buf.endsWith('\n\n') && events.length >= count) {
        req.close(http2.constants.NGHTTP2_CANCEL);  // the feed stays open: reset the stream
        resolve({ status: head[':status'], contentType: head['content-type'], events });
      }
    });
    req.on('error', reject);
    req.end();
  });
}

try {
  const created = await request('PUT', `/v1/stream/${stream}`, undefined,
                                { 'content-type': 'text/plain' });
  if (created.status !== 201) fail(`create: ${created.status} ${created.body}`);
  const appends = await Promise.all(['a', 'b', 'c'].map((r) =>
    request('POST', `/v1/stream/${stream}`, r, { 'content-type': 'text/plain' })));
  for (const a of appends) if (a.status !== 204) fail(`append: ${a.status} ${a.body}`);
  const read = await request('GET', `/v1/stream/${stream}?offset=-1`);
  if (read.status !== 200 || read.body.length !== 3) fail(`read: ${read.status} ${read.body}`);
  const feed = await readEvents(`/v1/stream/${stream}?offset=-1&live=sse`, 2);
  if (feed.status !== 200 || feed.contentType !== 'text/event-stream') {
    fail(`sse: ${feed.status} ${feed.contentType}`);
  }
  console.log(JSON.stringify({ alpn: session.alpnProtocol, read: read.body, events: feed.events.length,
                               first_event: feed.events[0].split('\n')[0] }));
  session.close();
} catch (e) {
  fail(`request failed: ${e.message}`);
}
