// fetch() through an undici Agent({allowH2: true}) as a client of ferry over TLS:
// node undici_fetch_h2.mjs <https base URL> <CA file>. undici negotiates h2 by ALPN (it has no
// h2c); the protocol each connection got is taken from undici's diagnostics channel. Creates a
// stream, appends, reads it back; prints one JSON line; exits 1 on any error.
import diagnosticsChannel from 'node:diagnostics_channel';
import fs from 'node:fs';
import { Agent, fetch } from 'undici';

const [base, caFile] = process.argv.slice(2);
const protocols = [];
diagnosticsChannel.channel('undici:client:connected').subscribe(({ socket }) => {
  protocols.push(socket.alpnProtocol);
});
const dispatcher = new Agent({ allowH2: true, connect: { ca: fs.readFileSync(caFile) } });
const stream = `undici-h2-${process.pid}`;

function fail(why) {
  console.error(why);
  process.exit(1);
}

try {
  // body: '' and not none: undici 5's h2 leaves a bodiless PUT/POST stream open (no
  // END_STREAM) and the request hangs (nodejs/undici#2589, fixed in undici 6).
  const created = await fetch(`${base}/v1/stream/${stream}`, {
    method: 'PUT', headers: { 'content-type': 'text/plain' }, body: '', dispatcher,
  });
  if (created.status !== 201) fail(`create: ${created.status} ${await created.text()}`);
  await created.arrayBuffer();
  for (const body of ['one', 'two']) {
    const r = await fetch(`${base}/v1/stream/${stream}`, {
      method: 'POST', headers: { 'content-type': 'text/plain' }, body, dispatcher,
    });
    if (r.status !== 204) fail(`append: ${r.status} ${await r.text()}`);
    await r.arrayBuffer();
  }
  const read = await fetch(`${base}/v1/stream/${stream}?offset=-1`, { dispatcher });
  const text = await read.text();
  if (read.status !== 200) fail(`read: ${read.status} ${text}`);
  console.log(JSON.stringify({ protocols, read: text,
                               next_offset: read.headers.get('stream-next-offset') }));
  await dispatcher.close();
} catch (e) {
  fail(`fetch failed: ${e.message}${e.cause ? ` (${e.cause.message ?? e.cause})` : ''}`);
}
