// Compat CPU round by round: is svc's CPU per request still falling after the compat bench's
// warm-up (JIT tiering, heap growth, caches), and where does it settle? The compat bench's load
// (bench/compat.bench.mjs: 20-request warm-up, then BENCH_ROUNDS rounds of BENCH_CONCURRENCY
// streaming requests, 500 ms apart) against the built svc, but the CPU read from
// /proc/<pid>/task/*/stat after each round and after each pause, split by thread: the main JS
// thread (and its system time) and the others (all named "node" on Node 20: V8's platform workers,
// i.e. concurrent TurboFan compiles and GC helpers, and the libuv pool).
// Also the hrtime (CLOCK_MONOTONIC, the clock of a --cpu-prof file) of each round's start and end,
// to slice a profile by round, and, with --trace-opt/--trace-deopt in BENCH_NODE_ARGS, the count of
// TurboFan compiles completed and deopts svc printed by each round's end (BENCH_TRACE_FILE keeps
// svc's stdout with a line after each round). BENCH_STRACE=<file> counts syscalls over the rounds. Not a *.bench.mjs: run it on its own,
// `node bench/compat-rounds.mjs` (BENCH_SVC_BIN, BENCH_NODE_ARGS, BENCH_STORE_URL as compat's).
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { compatBody, fakeProvider, round, streamOnce } from './compat.bench.mjs';
import { startService, BENCH_TOKEN as TOKEN, writeCompatConfig } from './service-process.mjs';

const BIN = process.env.BENCH_SVC_BIN ?? resolve(import.meta.dirname, '../dist/main.js');
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const TICK_MS = 10;

/** CPU ms of `pid`'s main thread (and its system part) and of its other threads. */
function threadCpu(pid) {
  const out = { main: 0, other: 0, mainSys: 0 };
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      const ms = (Number(fields[11]) + Number(fields[12])) * TICK_MS;
      const group = tid === String(pid) ? 'main' : 'other';
      out[group] += ms;
      if (group === 'main') out.mainSys += Number(fields[12]) * TICK_MS;
    } catch {
      // a thread that ended
    }
  }
  return out;
}
const minus = (a, b) => ({
  main: a.main - b.main,
  other: a.other - b.other,
  mainSys: a.mainSys - b.mainSys,
});
const hr = () => Number(process.hrtime.bigint() / 1000n); // µs, as a cpuprofile's timestamps

const ws = mkdtempSync(join(tmpdir(), 'svc-bench-rounds-'));
const provider = await fakeProvider();
writeCompatConfig(ws, provider.url);
let opts = 0;
let deopts = 0;
const deoptNames = new Map();
const started = startService({
  bin: BIN,
  ws,
  nodeArgs: NODE_ARGS,
  env: process.env.BENCH_STORE_URL ? { SVC_STORE_URL: process.env.BENCH_STORE_URL } : {},
  onLine(line) {
    if (process.env.BENCH_TRACE_FILE) appendFileSync(process.env.BENCH_TRACE_FILE, `${line}\n`);
    if (line.startsWith('[completed compiling')) opts++;
    if (line.startsWith('[bailout (kind')) {
      deopts++;
      const fn = /<JSFunction ([^ >]+)/.exec(line)?.[1] ?? '?';
      const reason = /reason: ([^)\]]+)/.exec(line)?.[1] ?? '';
      const key = `${fn} | ${reason}`;
      deoptNames.set(key, (deoptNames.get(key) ?? 0) + 1);
    }
  },
});
const child = started.child;
const svcUrl = `${await started.url}/v1`;
const body = compatBody('bench request');
const auth = { authorization: `Bearer ${TOKEN}` };
const marks = [];
let t0 = hr();
await round(20, (i) => streamOnce(svcUrl, auth, body(i)));
marks.push({ label: 'warm-up', start: t0, end: hr(), opts, deopts });
if (process.env.BENCH_TRACE_FILE) appendFileSync(process.env.BENCH_TRACE_FILE, '==== end of warm-up\n');
await round(20, (i) => streamOnce(provider.url, {}, body(i)));
await round(CONCURRENCY, (i) => streamOnce(provider.url, {}, body(i)));
// BENCH_STRACE=<file>: syscall counts of all svc threads over the rounds (strace -c; slows svc).
const tracer = process.env.BENCH_STRACE
  ? spawn('strace', ['-c', '-f', '-o', process.env.BENCH_STRACE, '-p', String(child.pid)], {
      stdio: 'ignore',
    })
  : undefined;
if (tracer) await new Promise((w) => setTimeout(w, 1000));
const lines = [];
let before = threadCpu(child.pid);
const deoptsBefore = new Map(deoptNames);
for (let r = 1; r <= ROUNDS; r++) {
  t0 = hr();
  const result = await round(CONCURRENCY, (i) => streamOnce(svcUrl, auth, body(i)));
  const t1 = hr();
  const busy = threadCpu(child.pid);
  await new Promise((w) => setTimeout(w, 500));
  const idle = threadCpu(child.pid);
  const inRound = minus(busy, before);
  const inPause = minus(idle, busy);
  before = idle;
  marks.push({ label: `round ${r}`, start: t0, end: t1, opts, deopts });
  if (process.env.BENCH_TRACE_FILE) appendFileSync(process.env.BENCH_TRACE_FILE, `==== end of round ${r}\n`);
  const per = (v) => (v / result.latencies.length).toFixed(2);
  lines.push(
    `round ${String(r).padStart(2)}: ${per(inRound.main + inRound.other + inPause.main + inPause.other)} ms/req total | in round main ${per(inRound.main)} (sys ${per(inRound.mainSys)}) other ${per(inRound.other)} | pause ${per(inPause.main + inPause.other)} | opts ${opts} deopts ${deopts} | errors ${result.errors.length} | rss ${(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]) / 1024).toFixed(0)} MB`,
  );
}
if (tracer) {
  tracer.kill('SIGINT');
  await new Promise((w) => tracer.on('exit', w));
}
console.log(lines.join('\n'));
if (process.env.BENCH_MARKS) writeFileSync(process.env.BENCH_MARKS, JSON.stringify(marks));
if (deopts) {
  const after = [...deoptNames]
    .map(([k, n]) => [k, n - (deoptsBefore.get(k) ?? 0), n])
    .sort((a, b) => b[2] - a[2])
    .slice(0, 25);
  console.log('deopts (function | reason): during rounds / total');
  for (const [k, d, n] of after) console.log(`${String(d).padStart(4)} / ${String(n).padStart(4)}  ${k}`);
}
child.kill('SIGTERM');
await new Promise((w) => child.on('exit', w));
provider.server.close();
rmSync(ws, { recursive: true, force: true });
