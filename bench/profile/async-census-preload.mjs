// Preload (`--import`) for a svc process: counts the async resources it creates by type (PROMISE,
// TickObject, Timeout, …) and, for one promise in 37, the six innermost frames of where it was made.
// At exit writes `<tmpdir>/svc-async-census-<pid>.json`: { types, stacks: [[frames, count], …] }.
// Two runs of a bench with different request counts, diffed, give async resources per request:
// `BENCH_STORES=postgres BENCH_ROUNDS=3 BENCH_CONCURRENCY=100 BENCH_NODE_ARGS="--import
// $PWD/bench/profile/async-census-preload.mjs" node bench/pg-probe-run.mjs` (then BENCH_ROUNDS=1).
// The hook slows svc several-fold: read counts from it, never times.
import { createHook } from 'node:async_hooks';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const types = Object.create(null);
const stacks = new Map();
let promises = 0;
let inside = false;
createHook({
  init(_id, type) {
    types[type] = (types[type] ?? 0) + 1;
    if (type !== 'PROMISE' || inside || ++promises % 37 !== 0) return;
    inside = true;
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 14;
    const frames = (new Error().stack ?? '')
      .split('\n')
      .slice(2)
      .map((line) => line.trim().replace(/^at /, ''))
      .filter(
        (line) => !line.includes('node:internal/async_hooks') && !line.includes('async-census-preload'),
      );
    Error.stackTraceLimit = limit;
    const key = frames.slice(0, 6).join(' < ');
    stacks.set(key, (stacks.get(key) ?? 0) + 1);
    inside = false;
  },
}).enable();
process.on('exit', () => {
  const top = [...stacks].sort((a, b) => b[1] - a[1]).slice(0, 200);
  writeFileSync(
    join(tmpdir(), `svc-async-census-${process.pid}.json`),
    JSON.stringify({ types, stacks: top }),
  );
});
