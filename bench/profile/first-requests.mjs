// A service's first compat requests against its later ones: what one-off work lands in them. Starts
// the built `svc service start http` (BENCH_SVC_BIN to compare another build) with --cpu-prof and
// sends FIRST_REQUESTS (default 30) compat requests one at a time, then stops it and slices the
// profile by request: the sampled ms of each of the first five and the median of the last ten,
// the wall time of each, the time from spawn to ready and svc's RSS then, and the svc source regions / packages (innermost
// frame's) whose self time in request 1 exceeds what the last ten spend there on average
// (FIRST_INCLUSIVE=<n>: the top n functions by inclusive time in request 1 too). FIRST_PROF=0
// runs svc without the profiler: the wall times and RSS only.
// `node bench/profile/first-requests.mjs [top]`. Load moves the ms; read them side by side.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { compatBody, fakeProvider, streamOnce } from '../compat.bench.mjs';
import { startService, BENCH_TOKEN as TOKEN, writeCompatConfig } from '../service-process.mjs';
import { bundledSource, bundleRegions } from './bundle-regions.mjs';

const BIN = process.env.BENCH_SVC_BIN ?? resolve(import.meta.dirname, '../../dist/main.js');
const N = Number(process.env.FIRST_REQUESTS ?? 30);
const TOP = Number(process.argv[2] ?? 15);
const hr = () => Number(process.hrtime.bigint() / 1000n); // µs, the profile's clock

const ws = mkdtempSync(join(tmpdir(), 'svc-bench-first-'));
const profDir = join(ws, 'prof');
const provider = await fakeProvider();
writeCompatConfig(ws, provider.url);
const PROF = process.env.FIRST_PROF !== '0';
const spawned = performance.now();
const started = startService({
  bin: BIN,
  ws,
  nodeArgs: PROF ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
});
const svcUrl = `${await started.url}/v1`;
const readyMs = (performance.now() - spawned).toFixed(0);
const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${started.child.pid}/status`, 'utf8'))?.[1]);
const rssAtReady = (rssKb / 1024).toFixed(1);
const body = compatBody('first request');
const auth = { authorization: `Bearer ${TOKEN}` };
// The provider's own first request, outside the windows.
await streamOnce(provider.url, {}, body(0));
const windows = [];
for (let i = 0; i < N; i++) {
  const start = hr();
  await streamOnce(svcUrl, auth, body(i));
  windows.push({ start, end: hr() });
}
started.child.kill('SIGTERM');
await started.exited;
provider.server.close();
const ms = (us) => (us / 1000).toFixed(1);
const wall = windows.map((w) => w.end - w.start);
const wallTail = wall.slice(-10).sort((a, b) => a - b);
console.log(`spawn to listening line: ${readyMs} ms; svc RSS at ready: ${rssAtReady} MB`);
console.log(
  `wall ms, requests 1–5: ${wall.slice(0, 5).map(ms).join(' / ')}; median of the last ten ${ms(wallTail[5])}`,
);
if (!PROF) {
  rmSync(ws, { recursive: true, force: true });
  process.exit(0);
}

const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8'));
const regions = bundleRegions(resolve(BIN, '..'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const where = ({ callFrame: { url, lineNumber, functionName } }) => {
  const bundled = bundledSource(regions, url, lineNumber);
  if (bundled) return bundled;
  if (url.includes('node_modules')) return `npm:${/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)[1]}`;
  if (url.startsWith('node:')) return url;
  return url ? 'node' : `(${functionName})`;
};
const parentOf = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
// Inclusive time in request 1 of each function on the stack (`name source`), counted once a sample.
const inclusive = new Map();
const stackOf = (node) => {
  const names = new Set();
  for (let id = node.id; id !== undefined; id = parentOf.get(id)) {
    const n = byId.get(id);
    if (n.callFrame.functionName || n.callFrame.url)
      names.add(`${n.callFrame.functionName || '(anon)'} ${where(n)}`);
  }
  return names;
};
// Self time per request window, by where its innermost frame is; idle samples left out.
const perWindow = windows.map(() => new Map());
const busy = windows.map(() => 0);
let t = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i];
  const dt = profile.timeDeltas[i + 1] ?? 0;
  const node = byId.get(profile.samples[i]);
  if (node.callFrame.functionName === '(idle)') continue;
  const w = windows.findIndex((x) => t >= x.start && t < x.end);
  if (w < 0) continue;
  const key = where(node);
  if (w === 0 && process.env.FIRST_INCLUSIVE)
    for (const name of stackOf(node)) inclusive.set(name, (inclusive.get(name) ?? 0) + dt);
  perWindow[w].set(key, (perWindow[w].get(key) ?? 0) + dt);
  busy[w] += dt;
}
const tail = busy.slice(-10).sort((a, b) => a - b);
console.log(`sampled busy ms, requests 1–5: ${busy.slice(0, 5).map(ms).join(' / ')}`);
console.log(`median of requests ${N - 9}–${N}: ${ms(tail[5])}`);
const later = new Map();
for (const m of perWindow.slice(-10)) for (const [k, v] of m) later.set(k, (later.get(k) ?? 0) + v / 10);
const extra = [...perWindow[0]]
  .map(([k, v]) => [k, v - (later.get(k) ?? 0)])
  .filter(([, v]) => v > 0)
  .sort((a, b) => b[1] - a[1])
  .slice(0, TOP);
console.log('request 1 over the later ones, by innermost frame (ms):');
for (const [k, v] of extra) console.log(`  ${ms(v).padStart(7)}  ${k}`);
if (process.env.FIRST_INCLUSIVE) {
  console.log('request 1, inclusive ms by function:');
  const rows = [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.FIRST_INCLUSIVE));
  for (const [k, v] of rows) console.log(`  ${ms(v).padStart(7)}  ${k}`);
}
rmSync(ws, { recursive: true, force: true });
