// The memory bench's service load (bench/memory.bench.mjs: rounds of BENCH_CONCURRENCY concurrent
// streaming compat requests, 500 ms apart, no warm-up) for many rounds, with where the memory is
// after each: is the RSS growth between rounds 3 and 5 a leak or V8 and the allocator sizing
// themselves? After each round's pause the RSS is read from /proc (the bench's figure), then
// ./profile/memory-probe-preload.mjs, loaded into svc, reports from inside: V8's heap (total, used,
// and used after a full GC: the live heap), external and array buffers, malloc'd memory V8 counts,
// /proc/self/smaps by kind (glibc's `[heap]`, other anonymous, file), handles; and from its
// `--trace-gc` lines (./gc-trace.mjs) the scavenges and full GCs of the round and the heap after the
// last full GC (V8's own live-heap figure, no extra GC). A line a round, then
// the growth of each figure between rounds 3 and 5 and over the last rounds.
// Not a *.bench.mjs: `node bench/memory-rounds.mjs`. BENCH_ROUNDS (20), BENCH_CONCURRENCY (200),
// BENCH_SVC_BIN, BENCH_NODE_ARGS (more node flags), BENCH_SVC_ENV (./service-process.mjs);
// MEMPROBE_GC=0 reads without the full GC (the GC each round perturbs what V8 sizes next);
// BENCH_SNAPSHOTS=3,5 keeps heap snapshots after those rounds in BENCH_SNAPSHOT_DIR (default: a temp
// dir, printed), for ./profile/heap-diff.mjs. BENCH_JSON=<file> writes the rows as JSON.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { compatBody, cpuMs, fakeProvider, round, streamOnce } from './compat.bench.mjs';
import { gcTrace } from './gc-trace.mjs';
import { startService, BENCH_TOKEN as TOKEN, writeCompatConfig } from './service-process.mjs';

const here = import.meta.dirname ?? new URL('.', import.meta.url).pathname;
const BIN = process.env.BENCH_SVC_BIN ?? resolve(here, '../dist/main.js');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 200);
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const SNAPSHOTS = process.env.BENCH_SNAPSHOTS ?? '';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function rssMb(pid) {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return kb / 1024;
}

/** The probe's next line: signal svc and wait for the line to appear. */
async function probe(pid, file, n) {
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 120_000;
  for (;;) {
    let lines = [];
    try {
      lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    } catch {
      // not written yet
    }
    if (lines.length >= n) return JSON.parse(lines[n - 1]);
    if (Date.now() > deadline) throw new Error('memory probe: no answer');
    await sleep(100);
  }
}

const MB = 1024 * 1024;
const m = (bytes) => (bytes === undefined ? Number.NaN : bytes / MB);
const k = (kb) => kb / 1024;

/** The figures of a round's row, in MB (handles a count). */
function row(r, rss, cpu, line, gcs) {
  const b = line.before;
  const a = line.after;
  const spaces = (f, name) => m(f.spaces[name]?.size);
  return {
    round: r,
    rss,
    cpuMs: cpu,
    heapTotal: m(b.heapTotal),
    heapUsed: m(b.heapUsed),
    liveHeap: a ? m(a.heapUsed) : Number.NaN,
    oldSpace: spaces(b, 'old_space'),
    oldLive: a ? m(a.spaces.old_space?.used) : Number.NaN,
    newSpace: spaces(b, 'new_space'),
    codeSpace: spaces(b, 'code_space'),
    largeSpace: spaces(b, 'large_object_space'),
    external: m(b.external),
    arrayBuffers: m(b.arrayBuffers),
    malloced: m(b.mallocedMemory),
    brkHeap: k(b.smaps.brkHeap),
    anon: k(b.smaps.anon),
    file: k(b.smaps.file),
    anonMappings: b.smaps.anonMappings,
    native: rss - m(b.totalPhysical),
    handles: b.handles,
    rssAfterGc: a ? m(a.rss) : Number.NaN,
    scavenges: gcs.scavenges,
    fullGcs: gcs.fullGcs,
    gcMs: gcs.mainThreadMs,
    fullGcMs: gcs.fullGcMs,
    liveAfterFullGc: gcs.liveAfterFullGc ?? Number.NaN,
  };
}

const COLUMNS = [
  ['round', 'r', 0],
  ['rss', 'RSS', 1],
  ['heapTotal', 'heapT', 1],
  ['heapUsed', 'used', 1],
  ['liveHeap', 'live', 1],
  ['oldSpace', 'old', 1],
  ['oldLive', 'oldLv', 1],
  ['newSpace', 'new', 1],
  ['codeSpace', 'code', 1],
  ['largeSpace', 'large', 1],
  ['external', 'ext', 1],
  ['arrayBuffers', 'ab', 1],
  ['malloced', 'v8mal', 1],
  ['native', 'native', 1],
  ['brkHeap', '[heap]', 1],
  ['anon', 'anon', 1],
  ['file', 'file', 1],
  ['anonMappings', 'maps', 0],
  ['handles', 'hdl', 0],
  ['rssAfterGc', 'RSSgc', 1],
  ['cpuMs', 'cpu', 0],
  ['scavenges', 'scav', 0],
  ['fullGcs', 'full', 0],
  ['gcMs', 'gcMs', 0],
  ['fullGcMs', 'fullMs', 0],
  ['liveAfterFullGc', 'mcLive', 1],
];

const line = (cells) => cells.map((c) => String(c).padStart(7)).join('');

export async function main() {
  const provider = await fakeProvider();
  const ws = mkdtempSync(join(tmpdir(), 'svc-bench-memrounds-'));
  const snapshotDir = process.env.BENCH_SNAPSHOT_DIR ?? join(ws, 'snapshots');
  mkdirSync(snapshotDir, { recursive: true });
  const probeFile = join(ws, 'probe.jsonl');
  writeCompatConfig(ws, provider.url, { small: true });
  const gcs = gcTrace();
  const started = startService({
    bin: BIN,
    ws,
    onLine: gcs.onLine,
    nodeArgs: [...NODE_ARGS, '--trace-gc', '--import', resolve(here, 'profile/memory-probe-preload.mjs')],
    env: {
      MEMPROBE_FILE: probeFile,
      MEMPROBE_DIR: snapshotDir,
      MEMPROBE_SNAPSHOTS: SNAPSHOTS,
      ...(process.env.MEMPROBE_GC ? { MEMPROBE_GC: process.env.MEMPROBE_GC } : {}),
    },
  });
  const { child } = started;
  const rows = [];
  try {
    const url = `${await started.url}/v1`;
    const auth = { authorization: `Bearer ${TOKEN}` };
    const body = compatBody('memory bench request');
    console.log(`# ${CONCURRENCY} × ${ROUNDS}, MB; node ${NODE_ARGS.join(' ')}; ${BIN}`);
    console.log(line(COLUMNS.map(([, title]) => title)));
    let errors = 0;
    for (let r = 1; r <= ROUNDS; r++) {
      const cpuBefore = cpuMs(child.pid);
      const result = await round(CONCURRENCY, (i) => streamOnce(url, auth, body(r * CONCURRENCY + i)));
      errors += result.errors.length;
      await sleep(500);
      const rss = rssMb(child.pid);
      const cpu = cpuMs(child.pid) - cpuBefore;
      const counts = gcs.take();
      const r0 = row(r, rss, cpu, await probe(child.pid, probeFile, r), counts);
      rows.push(r0);
      console.log(line(COLUMNS.map(([key, , digits]) => r0[key].toFixed(digits))));
    }
    const growth = (from, to, title) => {
      const a = rows[from - 1];
      const b = rows[to - 1];
      if (!a || !b) return;
      console.log(
        line([title, ...COLUMNS.slice(1).map(([key, , digits]) => (b[key] - a[key]).toFixed(digits))]),
      );
    };
    growth(3, 5, 'r3→5');
    growth(5, ROUNDS, `r5→${ROUNDS}`);
    growth(ROUNDS - 5, ROUNDS, `r${ROUNDS - 5}→${ROUNDS}`);
    console.log(`errors: ${errors}${SNAPSHOTS ? `; snapshots in ${snapshotDir}` : ''}`);
    if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, `${JSON.stringify(rows, null, 1)}\n`);
  } finally {
    child.kill('SIGTERM');
    provider.server.close();
    await sleep(300);
    rmSync(join(ws, 'probe.jsonl'), { force: true });
    if (!process.env.BENCH_SNAPSHOT_DIR && !SNAPSHOTS) rmSync(ws, { recursive: true, force: true });
  }
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
