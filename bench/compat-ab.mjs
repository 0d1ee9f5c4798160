// Two builds of svc side by side on one fake provider, measured over the same minutes: rounds of
// 200 streaming compat requests alternating between them (A B, then B A, …), each round's CPU of
// its service read from /proc (utime + stime, all threads, 10 ms ticks: 0.05 ms a request), then N
// single requests alternating A/B (and the provider directly), their total and first-content
// times. Load that comes and goes on a shared box falls on both builds alike, which alternating
// whole `bench/run.mjs compat` runs cannot promise. BENCH_AB_BASE (default /work/base-47) and
// BENCH_AB_BRANCH (default this tree) are the two `dist/main.js`; ROUNDS (default 10) and N
// (default 200). BENCH_AB_BASE_ARGS and BENCH_AB_BRANCH_ARGS add Node flags to one side (the same build
// twice with one V8 setting apart, e.g. BENCH_AB_BRANCH_ARGS=--max-semi-space-size=32); each
// side's peak RSS (VmHWM) is printed at the end. `node bench/compat-ab.mjs`; not part of
// `npm run bench`.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { compatBody, cpuMs, fakeProvider, round, streamOnce } from './compat.bench.mjs';
import { startService, writeCompatConfig } from './service-process.mjs';

const provider = await fakeProvider();
async function svc(bin, args = '') {
  const ws = mkdtempSync(join(tmpdir(), 'svc-ab-'));
  writeCompatConfig(ws, provider.url, { token: 't' });
  mkdirSync(join(ws, '.data'), { recursive: true });
  const s = startService({
    bin,
    ws,
    nodeArgs: args.split(' ').filter(Boolean),
    env: { SVC_DATA_DIR: join(ws, '.data') },
    stderr: 'ignore',
  });
  return { ...s, ws, base: `${await s.url}/v1` };
}
const A = await svc(
  process.env.BENCH_AB_BASE ?? '/work/base-47/dist/main.js',
  process.env.BENCH_AB_BASE_ARGS,
);
const B = await svc(
  process.env.BENCH_AB_BRANCH ?? resolve(import.meta.dirname, '../dist/main.js'),
  process.env.BENCH_AB_BRANCH_ARGS,
);
const auth = { authorization: 'Bearer t' };
const body = compatBody('ab');
for (const s of [A, B]) await round(20, (i) => streamOnce(s.base, auth, body(i)));
const cpu = { A: [], B: [] };
const ROUNDS = Number(process.env.ROUNDS ?? 10);
for (let r = 0; r < ROUNDS; r++)
  for (const k of r % 2 ? ['B', 'A'] : ['A', 'B']) {
    const s = k === 'A' ? A : B;
    const before = cpuMs(s.child.pid);
    await round(200, (i) => streamOnce(s.base, auth, body(i)));
    await new Promise((r) => setTimeout(r, 300));
    cpu[k].push((cpuMs(s.child.pid) - before) / 200);
  }
console.log(
  'cpu ms/request per round, base:',
  cpu.A.map((x) => x.toFixed(2)).join(' '),
  '| branch:',
  cpu.B.map((x) => x.toFixed(2)).join(' '),
);
const m = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return ((s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2).toFixed(2);
};
console.log('cpu median base', m(cpu.A), 'branch', m(cpu.B));
async function timed(base, b) {
  const t = performance.now();
  const res = await fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth },
    body: JSON.stringify(b),
  });
  let first;
  const dec = new TextDecoder();
  let text = '';
  for await (const bytes of res.body) {
    text += dec.decode(bytes, { stream: true });
    if (first === undefined && /"content":"[^"]/.test(text)) first = performance.now() - t;
  }
  return [performance.now() - t, first];
}
const N = Number(process.env.N ?? 200);
const res = { A: [], B: [], Af: [], Bf: [], D: [] };
for (let i = 0; i < N; i++) {
  const order = i % 2 ? ['A', 'B'] : ['B', 'A'];
  for (const k of order) {
    const [t, f] = await timed(k === 'A' ? A.base : B.base, body(i));
    res[k].push(t);
    res[k + 'f'].push(f);
  }
  const [d] = await timed(provider.url, body(i));
  res.D.push(d);
}
const med = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s[s.length >> 1].toFixed(2);
};
const q = (a, p) => {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.floor(s.length * p)].toFixed(2);
};
console.log(
  `direct ${med(res.D)} | base total ${med(res.A)} (p25 ${q(res.A, 0.25)} p75 ${q(res.A, 0.75)}) first ${med(res.Af)} | branch total ${med(res.B)} (p25 ${q(res.B, 0.25)} p75 ${q(res.B, 0.75)}) first ${med(res.Bf)}`,
);
let lower = 0;
for (let i = 0; i < N; i++) if (res.B[i] < res.A[i]) lower++;
console.log(`branch faster in ${lower} of ${N} request pairs`);
const peak = (pid) =>
  (Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024).toFixed(0);
console.log(`peak RSS MB base ${peak(A.child.pid)} branch ${peak(B.child.pid)}`);
A.child.kill('SIGTERM');
B.child.kill('SIGTERM');
provider.server.close();
setTimeout(() => {
  for (const s of [A, B]) rmSync(s.ws, { recursive: true, force: true });
  process.exit(0);
}, 500);
