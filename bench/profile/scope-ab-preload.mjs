// Preload (`--import`) for a svc process: an A/B, in one process, of its async scopes' way of
// turning Node 20's hooks off (src/store/async-scope.ts: when the last scope ends) against turning
// them off later, if no scope opened meanwhile: at the next check phase (`setImmediate`, the
// default) or at the end of the turn's microtasks (`process.nextTick`, `?defer=tick`). The mode
// flips at every pause of the load (no scope opened for 200 ms: between the rounds of
// bench/compat-rounds.mjs), so the modes alternate round by round under the same load and JIT
// state. At exit writes `<tmpdir>/svc-scope-ab-<pid>.json`: per segment its mode, scopes opened
// (four a compat request on SQLite), main-thread CPU ms (`/proc/self/task/<pid>/stat`, 10 ms
// ticks) and whole-process CPU ms (`process.cpuUsage`). Drop the first segments (start-up, JIT):
// `BENCH_ROUNDS=40 BENCH_NODE_ARGS="--import file://$PWD/bench/profile/scope-ab-preload.mjs?defer=tick"
// node bench/compat-rounds.mjs` (p-scopehooks, docs/performance-log.md).
import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const proto = AsyncLocalStorage.prototype;
const realDisable = proto.disable;
const realRun = proto.run;
const tick = new URL(import.meta.url).searchParams.get('defer') === 'tick';
const later = tick ? process.nextTick : setImmediate;
let deferred = false;
const pendingOff = new Set();
let runs = 0;
let lastRun = 0;
proto.disable = function () {
  if (!deferred) return realDisable.call(this);
  if (pendingOff.has(this)) return;
  pendingOff.add(this);
  later(() => {
    if (pendingOff.delete(this)) realDisable.call(this);
  });
};
proto.run = function (...args) {
  runs++;
  lastRun = performance.now();
  pendingOff.delete(this);
  return realRun.apply(this, args);
};

const mainCpu = () => {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const allCpu = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};
const segments = [];
let start = { runs, main: mainCpu(), all: allCpu() };
setInterval(() => {
  if (runs === start.runs || performance.now() - lastRun < 200) return;
  const end = { runs, main: mainCpu(), all: allCpu() };
  segments.push({
    mode: deferred ? (tick ? 'tick' : 'check-phase') : 'at-last-end',
    scopes: end.runs - start.runs,
    mainMs: end.main - start.main,
    allMs: Number((end.all - start.all).toFixed(1)),
  });
  start = end;
  deferred = !deferred;
}, 50).unref();
process.on('exit', () => {
  writeFileSync(join(tmpdir(), `svc-scope-ab-${process.pid}.json`), JSON.stringify(segments));
});
