// What the compat load's scavenges promote, named (issue 17 item 4, p-promote): the compat bench's
// load (warm-up, then BENCH_ROUNDS rounds of BENCH_CONCURRENCY streaming requests, 500 ms apart)
// against the built svc with ./promoted-preload.mjs and `--trace-gc-nvp`; the preload counts
// between the first round after BENCH_SKIP rounds and the last. Prints V8's own promoted bytes a
// scavenge and a request (the nvp lines) beside the preload's sampled estimate, then the top
// allocating frames, first svc frames and stacks of what was promoted.
// `node bench/profile/promoted.mjs [top]` (BENCH_SVC_BIN; BENCH_PROMOTED_OUT keeps the JSON;
// BENCH_PROMOTED_MAJOR=0: only what is still alive at the end, see the preload).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { compatBody, fakeProvider, round, streamOnce } from '../compat.bench.mjs';
import { startService, BENCH_TOKEN as TOKEN, writeCompatConfig } from '../service-process.mjs';

const here = import.meta.dirname;
const BIN = process.env.BENCH_SVC_BIN ?? resolve(here, '../../dist/main.js');
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const SKIP = Number(process.env.BENCH_SKIP ?? 2);
const TOP = Number(process.argv[2] ?? 20);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const ws = mkdtempSync(join(tmpdir(), 'svc-bench-promoted-'));
const out = process.env.BENCH_PROMOTED_OUT ?? join(ws, 'promoted.json');
const provider = await fakeProvider();
writeCompatConfig(ws, provider.url);
let counting = false;
let scavenges = 0;
let promoted = 0;
let fullGcs = 0;
const started = startService({
  bin: BIN,
  ws,
  nodeArgs: [
    '--trace-gc-nvp',
    `--import=${new URL(`./promoted-preload.mjs?out=${encodeURIComponent(out)}${process.env.BENCH_PROMOTED_MAJOR === '0' ? '&major=0' : ''}${process.env.BENCH_PROMOTED_BYTES ? `&bytes=${process.env.BENCH_PROMOTED_BYTES}` : ''}`, import.meta.url)}`,
  ],
  onLine(line) {
    if (!counting) return;
    const kind = /gc=(\S+)/.exec(line)?.[1];
    if (kind === 's') {
      scavenges++;
      promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0);
    } else if (kind === 'mc' || kind === 'mmc') fullGcs++;
  },
});
const child = started.child;
const svcUrl = `${await started.url}/v1`;
const body = compatBody('bench request');
const auth = { authorization: `Bearer ${TOKEN}` };
await round(20, (i) => streamOnce(svcUrl, auth, body(i)));
let requests = 0;
for (let r = 1; r <= ROUNDS; r++) {
  if (r === SKIP + 1) {
    child.kill('SIGUSR2');
    counting = true;
  }
  const result = await round(CONCURRENCY, (i) => streamOnce(svcUrl, auth, body(i)));
  if (result.errors.length)
    console.log(`round ${r}: ${result.errors.length} errors, first ${result.errors[0]}`);
  if (counting) requests += result.latencies.length;
  await sleep(500);
}
child.kill('SIGUSR2');
counting = false;
for (let waited = 0; waited < 60_000 && !existsSync(out); waited += 250) await sleep(250);
await sleep(250);
const found = JSON.parse(readFileSync(out, 'utf8'));
console.log(
  `preload: ${found.gcs} GCs marked (${found.marksFound} found), ${found.fullGcs} full; ${found.scavenges} scavenges counted (both neighbours scavenges)`,
);
const kb = (b) => (b / 1024).toFixed(1);
console.log(
  `V8 (--trace-gc-nvp): ${scavenges} scavenges, ${fullGcs} full GCs over ${requests} requests; promoted ${kb(promoted / scavenges)} KB a scavenge, ${kb(promoted / requests)} KB a request`,
);
console.log(
  `sampled (every ${found.interval} B): ${found.scavenges} scavenges counted, ${found.promotedSamples} samples, ≈ ${kb(found.promotedBytes / found.scavenges)} KB a scavenge, ${kb(found.promotedBytes / requests)} KB a request`,
);
for (const [title, rows] of [
  ['by allocating frame', found.byLeaf],
  ['by first svc frame', found.bySvc],
  ['by stack (8 frames)', found.byStack],
]) {
  console.log(`\n${title}: KB a request (share)`);
  for (const row of rows.slice(0, TOP)) {
    console.log(
      `${kb(row.bytes / requests).padStart(7)} ${((row.bytes / found.promotedBytes) * 100).toFixed(1).padStart(5)}%  ${row.key}`,
    );
  }
}
child.kill('SIGTERM');
await new Promise((w) => child.on('exit', w));
provider.server.close();
rmSync(ws, { recursive: true, force: true });
