// The SSE answer's writes on a Node response, the two ways (branch p-sse), side by side in one
// process so both see the same load: `event` writes each event with its own `res.write` (the
// response corks its socket until the next tick; main up to 43131f0), `turn` joins the events of a
// turn into one string and writes it once (src/surfaces/http/sse-node.ts `TurnBatch`). Each stream
// is a compat answer's pattern: the head with the role chunk (flushed), then in a later turn two
// text chunks (the first flushed at once, the second from a promise callback), then in another
// turn the finish chunk, the usage chunk and `[DONE]` with the end. A child process reads
// BENCH_SSE_STREAMS (default 2000) streams, 50 at once, per run; the server's CPU (user + system,
// `process.cpuUsage`) per stream is taken over BENCH_SSE_PAIRS (default 6) alternating pairs.
// BENCH_SSE_HOLD_FIRST=1: the first text chunk not flushed (it goes with the second, one write
// less per stream: what that write costs). `node bench/sse-writes.mjs`; not part of `npm run bench`.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { loadavg } from 'node:os';

const STREAMS = Number(process.env.BENCH_SSE_STREAMS ?? 2000);
const PAIRS = Number(process.env.BENCH_SSE_PAIRS ?? 6);
const chunk = (delta) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-01M8NSGAZTMRS44FBSY0EX3A5W', object: 'chat.completion.chunk', created: 1796027722, model: 'fake/m1', system_fingerprint: null, choices: [{ index: 0, delta, logprobs: null, finish_reason: null }], usage: null })}\n\n`;
const EVENTS = {
  role: chunk({ role: 'assistant', content: '', refusal: null }),
  one: chunk({ content: 'Hello ' }),
  two: chunk({ content: 'from the fake provider.' }),
  finish: chunk({}),
  usage: chunk({ usage: { prompt_tokens: 20 } }),
  done: 'data: [DONE]\n\n',
};

function uncork(res) {
  if (res.writableCorked > 0) res.uncork();
  const socket = res.socket;
  if (socket && socket.writableCorked > 0 && !socket.destroyed) socket.uncork();
}

/** One event, one `res.write` (before). */
function perEvent(res) {
  const write = (text) => res.write(text);
  return { write, flush: () => uncork(res), end: () => res.end() };
}

/** The events of a turn joined, written at the turn's end, a flush or the end (after). */
function perTurn(res) {
  let text = '';
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (text) {
      const out = text;
      text = '';
      res.write(out);
    }
    uncork(res);
  };
  const atTick = () => process.nextTick(flush);
  return {
    write(t) {
      text += t;
      if (!scheduled) {
        scheduled = true;
        queueMicrotask(atTick);
      }
    },
    flush,
    end() {
      const out = text;
      text = '';
      if (out) res.end(out);
      else res.end();
    },
  };
}

let mode = perEvent;
const server = createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const s = mode(res);
  s.write(EVENTS.role);
  s.flush();
  setImmediate(() => {
    s.write(EVENTS.one);
    if (!process.env.BENCH_SSE_HOLD_FIRST) s.flush();
    Promise.resolve().then(() => {
      s.write(EVENTS.two);
      setImmediate(() => {
        s.write(EVENTS.finish);
        s.write(EVENTS.usage);
        s.write(EVENTS.done);
        s.end();
      });
    });
  });
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/`;

const client = `
const [url, n] = process.argv.slice(1);
let done = 0;
async function one() { const r = await fetch(url); const t = await r.text(); if (!t.endsWith('data: [DONE]\\n\\n')) throw new Error('bad'); }
async function worker() { while (done < Number(n)) { done++; await one(); } }
await Promise.all(Array.from({ length: 50 }, worker));
`;

async function run(which) {
  mode = which;
  const before = process.cpuUsage();
  await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', client, url, String(STREAMS)], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`client exited ${code}`))));
  });
  const used = process.cpuUsage(before);
  return (used.user + used.system) / STREAMS; // µs per stream
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
await run(perEvent); // warm-up
await run(perTurn);
const results = { event: [], turn: [] };
for (let i = 0; i < PAIRS; i++) {
  results.event.push(await run(perEvent));
  results.turn.push(await run(perTurn));
}
server.close();
for (const [name, values] of Object.entries(results))
  console.log(
    `${name.padEnd(6)} server CPU per stream µs: ${values.map((v) => v.toFixed(1)).join(' / ')} (median ${median(values).toFixed(1)})`,
  );
console.log(
  `load average ${loadavg()
    .map((v) => v.toFixed(2))
    .join(' ')}`,
);
