// Which mechanisms keep an ended request's objects through scavenges (issue 17 item 4, p-pin), outside
// svc: a plain node:http server (and, UP=1, an upstream request through a keep-alive agent) serves
// 400 requests 4 at a time, each making ≈ 6 KB of its own objects (`junk`); V=<variant> adds one
// mechanism per request that reaches them. After the load, two scavenges 50 ms apart with nothing
// running: the second's promoted bytes are what of the ended requests outlived the first.
// `node --expose-gc --trace-gc-nvp bench/profile/pin-mechanisms.mjs` with V=none|ac|acsig|any|
// timeout|fr|als|finished|abortsig|proto|cls|fnproto|setproto|immediate|immarg|timer|tick|wmlive|
// wmreq|fsstat|fspstat|fsread (prints the nvp lines; read the `promoted=` of the line after `idle-scavenge 2`).
import { AsyncLocalStorage } from 'node:async_hooks';
import { readFile, stat } from 'node:fs';
import { stat as statP } from 'node:fs/promises';
import http from 'node:http';
import { addAbortSignal, finished, PassThrough } from 'node:stream';

const V = process.env.V ?? '';
const als = new AsyncLocalStorage();
const byKey = new WeakMap();
const longLived = {};
const upstream = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (let i = 0; i < 5; i++) res.write(`data: {"i":${i},"pad":"${'x'.repeat(50)}"}\n\n`);
    res.end('data: [DONE]\n\n');
  });
});
await new Promise((r) => upstream.listen(0, r));
const agent = new http.Agent({ keepAlive: true });
const UP = process.env.UP === '1';
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString());
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const junk = Array.from({ length: 200 }, (_, i) => ({ i, s: `${body.n}-${i}` })); // ~ per request garbage
    if (V === 'proto') {
      const holder = { junk };
      const o = Object.create(holder);
      o.x = 1;
    }
    if (V === 'cls') {
      class Local {
        constructor() {
          this.j = junk.length;
        }
      }
      new Local();
    }
    if (V === 'fnproto') {
      // biome-ignore lint/correctness/noComponentHookFactories: the per-request constructor is the point
      function F() {
        this.j = junk.length;
      }
      new F();
    }
    if (V === 'setproto') {
      const o = {};
      Object.setPrototypeOf(o, { junk });
    }
    if (V === 'immediate') setImmediate(() => junk.length);
    if (V === 'immarg') setImmediate((j) => j.length, junk);
    if (V === 'timer') clearTimeout(setTimeout(() => junk.length, 60_000));
    if (V === 'tick') process.nextTick(() => junk.length);
    if (V === 'wmlive') byKey.set(longLived, { junk });
    if (V === 'wmreq') byKey.set(res, { junk });
    if (V === 'fsstat') stat(import.meta.filename, () => junk.length);
    if (V === 'fspstat') statP(import.meta.filename).then(() => junk.length);
    if (V === 'fsread') readFile(import.meta.filename, () => junk.length);
    if (V === 'ac') {
      const ac = new AbortController();
      ac.signal.addEventListener('abort', () => junk.length, { once: true });
      res.on('close', () => {
        if (!res.writableFinished) ac.abort();
      });
    }
    if (V === 'acsig') {
      const ac = new AbortController();
      const et = new EventTarget();
      et.addEventListener('x', () => junk.length, { signal: ac.signal });
      res.on('close', () => ac.abort());
    }
    if (V === 'any') {
      const ac = new AbortController();
      const s2 = AbortSignal.any([ac.signal]);
      s2.addEventListener('abort', () => junk.length);
    }
    if (V === 'timeout') {
      const s2 = AbortSignal.timeout(60000);
      s2.addEventListener('abort', () => junk.length);
    }
    if (V === 'fr') {
      new FinalizationRegistry(() => {}).register(junk, 1);
    }
    if (V === 'als') {
      als.run({ junk }, () => Promise.resolve().then(() => junk.length));
    }
    if (V === 'finished') {
      const ac = new AbortController();
      finished(res, { signal: ac.signal }, () => junk.length);
    }
    if (V === 'abortsig') {
      const ac = new AbortController();
      const p = new PassThrough();
      addAbortSignal(ac.signal, p);
      p.on('error', () => {});
      p.end(JSON.stringify(junk[0]));
      p.resume();
    }
    if (!UP) {
      for (let i = 0; i < 5; i++) res.write(`data: ${JSON.stringify(junk[i])}\n\n`);
      res.end('data: [DONE]\n\n');
      return;
    }
    const up = http.request(
      { host: '127.0.0.1', port: upstream.address().port, method: 'POST', agent, path: '/' },
      (r) => {
        r.setEncoding('utf8');
        r.on('data', (d) => res.write(d));
        r.on('end', () => res.end());
      },
    );
    up.end(JSON.stringify(junk));
  });
});
await new Promise((r) => server.listen(0, r));
const cagent = new http.Agent({ keepAlive: true });
const one = (n) =>
  new Promise((resolve, reject) => {
    const q = http.request(
      { host: '127.0.0.1', port: server.address().port, method: 'POST', agent: cagent, path: '/' },
      (r) => {
        r.resume();
        r.on('end', resolve);
      },
    );
    q.on('error', reject);
    q.end(JSON.stringify({ n }));
  });
for (let r = 0; r < 100; r++) {
  await Promise.all([0, 1, 2, 3].map((i) => one(r * 4 + i)));
  await new Promise((x) => setTimeout(x, 20));
}
await new Promise((x) => setTimeout(x, 300));
console.log('idle-scavenge 1');
gc({ type: 'minor' });
await new Promise((x) => setTimeout(x, 50));
console.log('idle-scavenge 2');
gc({ type: 'minor' });
process.exit(0);
