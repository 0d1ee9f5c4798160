// What the SQLite transactions of a compat request cost (issue 17 item 3): one `svc service start
// http` node (./statements-harness.mjs) with the preload ./profile/sqlite-commits.cjs, 20
// requests of warm-up, then BENCH_STATEMENTS_REQUESTS (default 50) requests,
// BENCH_STATEMENTS_CONCURRENCY (default 10) at once. Prints per request the BEGIN / COMMIT /
// SAVEPOINT / RELEASE / ROLLBACK statements and their time, and per COMMIT the WAL frames written,
// its time (median, p95, max) and the commits that ran the automatic checkpoint.
// BENCH_SVC_BIN runs another build. `node bench/sqlite-commits.mjs`; not part of `npm run bench`.
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CONCURRENCY, compatStatements, REQUESTS } from './statements-harness.mjs';

const here = import.meta.dirname ?? new URL('.', import.meta.url).pathname;
const PRELOAD = resolve(here, 'profile/sqlite-commits.cjs');

const { errors, result } = await compatStatements({
  nodeArgs: ['--require', PRELOAD],
  env: process.env.NODE_OPTIONS ? { NODE_OPTIONS: process.env.NODE_OPTIONS } : {},
  warmedUp: async (child) => {
    child.kill('SIGUSR2');
    await new Promise((r) => setTimeout(r, 100));
  },
  finished: async (child, exited) => {
    child.kill('SIGTERM');
    await exited;
    return JSON.parse(readFileSync(join(tmpdir(), `svc-sqlite-commits-${child.pid}.json`), 'utf8'));
  },
});
const per = REQUESTS;
console.log(`${REQUESTS} compat requests, ${CONCURRENCY} at once (${errors} errors)`);
for (const [kind, s] of Object.entries(result.kinds)) {
  console.log(
    `${kind.padEnd(10)} ${(s.n / per).toFixed(2).padStart(6)} a request  ${(s.ns / per / 1e3).toFixed(1).padStart(7)} µs a request  ${(s.ns / s.n / 1e3).toFixed(1).padStart(7)} µs each  (${s.texts} SQL texts)`,
  );
}
const commits = result.commits;
const sorted = (values) => [...values].sort((a, b) => a - b);
const at = (values, p) => values[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];
const ms = sorted(commits.map(([ns]) => ns / 1e6));
const frames = commits.map(([, f]) => f);
const ckpt = commits.filter(([, , c]) => c > 0);
const plain = sorted(commits.filter(([, , c]) => c === 0).map(([ns]) => ns / 1e6));
const sum = (values) => values.reduce((a, b) => a + b, 0);
console.log(
  `COMMIT: ${commits.length} (${(commits.length / per).toFixed(2)} a request); WAL frames ${(sum(frames) / per).toFixed(1)} a request, ${(sum(frames) / Math.max(1, commits.length)).toFixed(1)} a commit`,
);
if (ms.length) {
  console.log(
    `COMMIT ms: median ${at(ms, 50).toFixed(3)}  p95 ${at(ms, 95).toFixed(3)}  max ${ms[ms.length - 1].toFixed(3)}  total ${(sum(ms) / per).toFixed(3)} a request`,
  );
}
if (plain.length) {
  console.log(
    `  without a checkpoint: ${plain.length}, median ${at(plain, 50).toFixed(3)} ms, total ${(sum(plain) / per).toFixed(3)} ms a request`,
  );
}
console.log(
  `  with the automatic checkpoint: ${ckpt.length}, ${ckpt.map(([ns, , c]) => `${(ns / 1e6).toFixed(1)} ms/${c} frames`).join(', ')}; total ${(sum(ckpt.map(([ns]) => ns)) / 1e6 / per).toFixed(3)} ms a request`,
);
// The service's idle WAL restart (src/store/idle-checkpoint.ts) is a COMMIT of one frame outside
// any request; a request's COMMIT writes tens.
const idle = commits.filter(([, f]) => f <= 1);
const requests = sorted(commits.filter(([, f]) => f > 1).map(([ns]) => ns / 1e6));
if (requests.length) {
  console.log(
    `COMMITs of more than one frame (the requests'): ${requests.length}, median ${at(requests, 50).toFixed(3)}  p95 ${at(requests, 95).toFixed(3)}  max ${requests[requests.length - 1].toFixed(3)} ms, total ${(sum(requests) / per).toFixed(3)} ms a request`,
  );
}
console.log(
  `COMMITs of one frame (an idle WAL restart): ${idle.length}, ${(sum(idle.map(([ns]) => ns)) / 1e6 / per).toFixed(3)} ms a request`,
);
for (const bound of [1000, 2000]) {
  const own = commits.filter(([, , , length]) => length >= bound);
  console.log(
    `COMMITs that took the WAL to ${bound} frames or more (at wal_autocheckpoint = ${bound} the committing connection checkpoints): ${own.length}, ${(sum(own.map(([ns]) => ns)) / 1e6 / per).toFixed(3)} ms a request`,
  );
}
process.exit(0);
