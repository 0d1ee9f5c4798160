// Preload (`--import`) for a svc process: how often its async scopes (src/store/async-scope.ts)
// turn Node 20's `AsyncLocalStorage` hooks on (the first enabled storage) and off (the last one
// disabled), and the wall time of each `_enable` and `disable` call (quartiles: a call the OS
// preempted reads long, so read the median, not a sum). With `?promises=1` also the promises made
// with the hooks on and off, through a `v8.promiseHooks` init hook of its own (which slows every
// promise and every toggle: read the times from a run without it). At exit writes
// `<tmpdir>/svc-scope-toggles-<pid>.json`. Two runs with different request counts, diffed, give
// counts a request: `BENCH_ROUNDS=3 BENCH_CONCURRENCY=100 BENCH_NODE_ARGS="--import
// file://$PWD/bench/profile/scope-toggles-preload.mjs?promises=1" node bench/compat-rounds.mjs`
// (then BENCH_ROUNDS=1; p-scopehooks, docs/performance-log.md).
import { AsyncLocalStorage } from 'node:async_hooks';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promiseHooks } from 'node:v8';

const counts = { enables: 0, disables: 0, runs: 0, promisesOn: 0, promisesOff: 0 };
const times = { enable: [], disable: [] };
let enabled = 0;
const now = () => performance.now() * 1000;
const proto = AsyncLocalStorage.prototype;
const enable = proto._enable;
const disable = proto.disable;
const run = proto.run;
proto._enable = function () {
  if (this.enabled) return;
  if (enabled++ === 0) counts.enables++;
  const start = now();
  enable.call(this);
  times.enable.push(now() - start);
};
proto.disable = function () {
  if (!this.enabled) return;
  if (--enabled === 0) counts.disables++;
  const start = now();
  disable.call(this);
  times.disable.push(now() - start);
};
proto.run = function (...args) {
  counts.runs++;
  return run.apply(this, args);
};
if (new URL(import.meta.url).searchParams.get('promises') === '1') {
  promiseHooks.onInit(() => {
    if (enabled > 0) counts.promisesOn++;
    else counts.promisesOff++;
  });
}
const quartiles = (list) => {
  list.sort((a, b) => a - b);
  return [0.25, 0.5, 0.75].map((q) => Number((list[Math.floor(list.length * q)] ?? 0).toFixed(2)));
};
process.on('exit', () => {
  const out = { ...counts, enableUs: quartiles(times.enable), disableUs: quartiles(times.disable) };
  writeFileSync(join(tmpdir(), `svc-scope-toggles-${process.pid}.json`), JSON.stringify(out));
});
