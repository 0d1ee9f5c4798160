// V8's promoted bytes a request and a scavenge under the compat load, nothing else in the service
// (issue 17 item 4, p-pin): the compat bench's load (warm-up, then BENCH_ROUNDS rounds of
// BENCH_CONCURRENCY streaming requests, 500 ms apart) against the built svc with `--trace-gc-nvp`
// only (./promoted.mjs adds a sampling heap profiler); rounds after BENCH_SKIP counted. For probes:
// BENCH_NODE_ARGS adds the service's Node flags (e.g. `--require /tmp/probe.cjs` turning one suspect
// off). BENCH_IDLE_SCAVENGES=1: after the rounds and a pause, two scavenges forced with no request
// running (./idle-scavenges-preload.mjs), each one's promoted bytes printed: the second promotes
// what of the ended requests outlived the first. `node bench/profile/promoted-nvp.mjs` (BENCH_SVC_BIN
// as the other benches).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { compatBody, fakeProvider, round, streamOnce } from '../compat.bench.mjs';
import { startService, BENCH_TOKEN as TOKEN, writeCompatConfig } from '../service-process.mjs';

const BIN = process.env.BENCH_SVC_BIN ?? resolve(import.meta.dirname, '../../dist/main.js');
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 150);
const SKIP = Number(process.env.BENCH_SKIP ?? 10);
const IDLE = process.env.BENCH_IDLE_SCAVENGES === '1';
const NODE_ARGS = [
  ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
  ...(IDLE ? ['--expose-gc', `--import=${new URL('./idle-scavenges-preload.mjs', import.meta.url)}`] : []),
];
/** The forced scavenges' lines: `idle-scavenge N` then its nvp line. */
const idle = [];
let idleAt = 0;
/** Requests ended since the last scavenge V8 ran by itself (rounds after BENCH_SKIP). */
let sinceScavenge = 0;
/** One request with a JSON answer (`BENCH_NVP_JSON=1`). */
async function jsonOnce(url, headers, payload) {
  const response = await fetch(`${url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(payload),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${text.slice(0, 200)}`);
  return 0;
}
/** One `GET /v1/models` (`BENCH_NVP_MODELS=1`). */
async function modelsOnce(url, headers) {
  const response = await fetch(`${url}/models`, { headers });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${text.slice(0, 200)}`);
  return 0;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const ws = mkdtempSync(join(tmpdir(), 'svc-bench-nvp-'));
const provider = await fakeProvider();
writeCompatConfig(ws, provider.url);
let counting = false;
let scavenges = 0;
let promoted = 0;
let fullGcs = 0;
const started = startService({
  bin: BIN,
  ws,
  nodeArgs: ['--trace-gc-nvp', ...NODE_ARGS],
  onLine(line) {
    const forced = /^idle-scavenge (\d)/.exec(line);
    if (forced) idleAt = Number(forced[1]);
    else if (idleAt && /gc=s /.test(line)) {
      idle.push({ n: idleAt, promoted: Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0), line });
      idleAt = 0;
    }
    if (!counting) return;
    const kind = /gc=(\S+)/.exec(line)?.[1];
    if (kind === 's') {
      scavenges++;
      sinceScavenge = 0;
      promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0);
    } else if (kind === 'mc' || kind === 'mmc') fullGcs++;
  },
});
const child = started.child;
const svcUrl = `${await started.url}/v1`;
// BENCH_NVP_JSON=1: the same requests without `stream` (a JSON answer, no SSE stream).
const JSON_ANSWER = process.env.BENCH_NVP_JSON === '1';
// BENCH_NVP_MODELS=1: `GET /v1/models` instead (svc's HTTP front and auth, no run).
const MODELS = process.env.BENCH_NVP_MODELS === '1';
const streamed = compatBody('bench request');
const body = JSON_ANSWER ? (i) => ({ model: 'fake/m1', messages: streamed(i).messages }) : streamed;
const auth = { authorization: `Bearer ${TOKEN}` };
await round(20, (i) => streamOnce(svcUrl, auth, body(i)));
let requests = 0;
let errors = 0;
for (let r = 1; r <= ROUNDS; r++) {
  if (r === SKIP + 1) counting = true;
  const result = await round(CONCURRENCY, (i) =>
    MODELS
      ? modelsOnce(svcUrl, auth)
      : JSON_ANSWER
        ? jsonOnce(svcUrl, auth, body(i))
        : streamOnce(svcUrl, auth, body(i)),
  );
  errors += result.errors.length;
  if (counting) requests += result.latencies.length;
  if (counting) sinceScavenge += result.latencies.length;
  await sleep(500);
}
counting = false;
const kb = (b) => (b / 1024).toFixed(1);
console.log(
  `${scavenges} scavenges, ${fullGcs} full GCs over ${requests} requests (${errors} errors); promoted ${kb(promoted / Math.max(1, scavenges))} KB a scavenge, ${kb(promoted / Math.max(1, requests))} KB a request`,
);
if (IDLE) {
  await sleep(1000);
  child.kill('SIGUSR2');
  for (let waited = 0; waited < 10_000 && idle.length < 2; waited += 50) await sleep(50);
  for (const s of idle)
    console.log(
      `forced scavenge ${s.n}, no request running: promoted ${kb(s.promoted)} KB; ${sinceScavenge} requests ended since V8's last own scavenge (${kb(s.promoted / Math.max(1, sinceScavenge))} KB a request)`,
    );
}
child.kill('SIGTERM');
await new Promise((w) => child.on('exit', w));
provider.server.close();
rmSync(ws, { recursive: true, force: true });
