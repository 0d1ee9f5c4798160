// What a compat request holds while it is in flight (issue 17 item 4, p-gcrate): the objects V8
// promotes are the ones alive across two scavenges, and with 200 requests at once those are what
// each in-flight request holds. Two heap snapshots of the service (./memory-probe-preload.mjs,
// each after a full GC, so only live objects): one idle after BENCH_ROUNDS rounds of
// BENCH_CONCURRENCY compat requests, one taken BENCH_INFLIGHT_MS into the next round (the
// snapshot is synchronous: the requests in flight stay where they are), diffed by constructor with
// ./heap-diff.mjs per request of the round. `node bench/profile/inflight-heap.mjs [top]`
// (BENCH_SVC_BIN as the compat bench's; BENCH_SNAPSHOT_DIR keeps the snapshots).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { compatBody, fakeProvider, round, streamOnce } from '../compat.bench.mjs';
import { startService, BENCH_TOKEN as TOKEN, writeCompatConfig } from '../service-process.mjs';

const here = import.meta.dirname;
const BIN = process.env.BENCH_SVC_BIN ?? resolve(here, '../../dist/main.js');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 200);
const INFLIGHT_MS = Number(process.env.BENCH_INFLIGHT_MS ?? 150);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const ws = mkdtempSync(join(tmpdir(), 'svc-bench-inflight-'));
const dir = process.env.BENCH_SNAPSHOT_DIR ?? join(ws, 'snapshots');
mkdirSync(dir, { recursive: true });
const probeFile = join(ws, 'probe.jsonl');
const provider = await fakeProvider();
writeCompatConfig(ws, provider.url);
const started = startService({
  bin: BIN,
  ws,
  nodeArgs: ['--import', resolve(here, 'memory-probe-preload.mjs')],
  env: { MEMPROBE_FILE: probeFile, MEMPROBE_DIR: dir, MEMPROBE_SNAPSHOTS: '1,2' },
  onLine() {},
});
const child = started.child;
const url = `${await started.url}/v1`;
const body = compatBody('bench request');
const auth = { authorization: `Bearer ${TOKEN}` };

async function probe(n) {
  process.kill(child.pid, 'SIGUSR2');
  for (;;) {
    let lines = [];
    try {
      lines = readFileSync(probeFile, 'utf8').split('\n').filter(Boolean);
    } catch {
      // not written yet
    }
    if (lines.length >= n) return;
    await sleep(100);
  }
}

await round(20, (i) => streamOnce(url, auth, body(i)));
for (let r = 0; r < ROUNDS; r++) await round(CONCURRENCY, (i) => streamOnce(url, auth, body(i)));
await sleep(500);
await probe(1);
let done = 0;
const next = round(CONCURRENCY, (i) => streamOnce(url, auth, body(i)).finally(() => done++));
await sleep(INFLIGHT_MS);
const before = done;
await probe(2);
const result = await next;
child.kill('SIGTERM');
await new Promise((w) => child.on('exit', w));
await provider.close?.();
const snaps = readdirSync(dir)
  .filter((f) => f.endsWith('.heapsnapshot'))
  .sort((a, b) => Number(/-(\d+)\.heap/.exec(a)[1]) - Number(/-(\d+)\.heap/.exec(b)[1]));
const inflight = CONCURRENCY - before;
console.log(
  `in flight at the snapshot: ≤ ${inflight} of ${CONCURRENCY} (done ${before}); errors ${result.errors.length}`,
);
console.log(
  execFileSync(
    'node',
    [
      resolve(here, 'heap-diff.mjs'),
      join(dir, snaps[0]),
      join(dir, snaps[1]),
      process.argv[2] ?? '30',
      String(inflight),
    ],
    { encoding: 'utf8', maxBuffer: 1 << 26 },
  ),
);
console.log(`snapshots in ${dir}`);
process.exit(0);
