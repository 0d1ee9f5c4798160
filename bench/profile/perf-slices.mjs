// On-CPU samples of a svc process's main thread, from `perf record`, sliced by a BENCH_MARKS span
// (bench/agent-loop.bench.mjs or bench/compat-rounds.mjs), summed per step (or request) by where
// they fall: the kind of the leaf (kernel, V8/Node built-ins, JIT code, libc), the innermost
// JavaScript frame's group (svc source area by `//#region`, npm package, node: module) and
// function. Unlike --cpu-prof (wall time of the main thread, bench/profile/cpu-profile.mjs), a
// thread waiting for a core takes no sample, so the figures are CPU. p-pgstep8 (docs/performance-log.md):
//   BENCH_EXPOSURE=all BENCH_STEPS=300 BENCH_MARKS=/tmp/m.json \
//   BENCH_NODE_ARGS="--perf-basic-prof --interpreted-frames-native-stack" \
//   perf record -g -k mono -e cpu-clock -F 2000 -o /tmp/p.data -- node bench/run.mjs agent-loop
//   perf script -i /tmp/p.data -F comm,tid,time,ip,sym,dso > /tmp/p.txt
//   node bench/profile/perf-slices.mjs /tmp/p.txt /tmp/m.json dist <steps in the span> 2000 [top]
// The main thread is the thread with most samples in a frame of `dist/`. Samples of code the GC
// moved may be named from a stale perf map entry (`node:module`, `node:zlib` at 1:1): read shares.
import { readFileSync } from 'node:fs';
import { bundledSource, bundleRegions } from './bundle-regions.mjs';

const [file, marksFile, distDir, stepsArg, hzArg, topArg] = process.argv.slice(2);
const regions = bundleRegions(distDir);
const span = JSON.parse(readFileSync(marksFile, 'utf8'))[0];
const steps = Number(stepsArg);
const msPerSample = 1000 / Number(hzArg ?? 2000);
const top = Number(topArg ?? 30);

const samples = [];
const inDist = new Map();
for (const block of readFileSync(file, 'utf8').split('\n\n')) {
  const lines = block.trim().split('\n');
  const head = /^\s*(\S+)\s+(\d+)\s+([\d.]+):/.exec(lines[0] ?? '');
  if (!head) continue;
  const us = Number(head[3]) * 1e6;
  if (us < span.start || us > span.end) continue;
  const frames = lines.slice(1).map((line) => {
    const m = /^\s*[0-9a-f]+\s+(.*?) \((.*)\)\s*$/.exec(line);
    return m ? { sym: m[1], dso: m[2] } : { sym: '?', dso: '?' };
  });
  samples.push({ tid: head[2], frames });
  if (frames.some((f) => f.sym.includes('/dist/'))) inDist.set(head[2], (inDist.get(head[2]) ?? 0) + 1);
}
const main = [...inDist].sort((a, b) => b[1] - a[1])[0]?.[0];

/** The group and function of a JavaScript frame's perf name (`JS:*name url:line:col`), or undefined. */
function jsFrame(sym) {
  const m = /^(?:JS:)?[*~^+]?(\S*) (file:\/\/\S+|node:\S+|\/\S+\.m?js):(\d+):\d+/.exec(sym);
  if (!m) return undefined;
  const [, fn, url, line] = m;
  const svc = bundledSource(regions, url, Number(line) - 1);
  if (svc) {
    const area = /^src\/(store\/postgres|runs\/pg-|events\/pg-|sessions\/pg-|[^/]+)/.exec(svc);
    return { group: `svc ${area ? area[0] : svc}`, fn: `${fn || '(anonymous)'} ${svc}` };
  }
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return { group: `npm:${pkg[1]}`, fn: `${fn || '(anonymous)'} npm:${pkg[1]}` };
  const group = url.startsWith('node:internal') ? 'node:internal' : url.split('/')[0];
  return { group, fn: `${fn || '(anonymous)'} ${url}` };
}
const kindOf = ({ dso }) =>
  dso.includes('kernel')
    ? 'kernel'
    : dso.includes('JIT') || dso.includes('perf-')
      ? 'JIT'
      : dso.split('/').pop();

const kinds = new Map();
const groups = new Map();
const functions = new Map();
const bump = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);
let total = 0;
for (const { tid, frames } of samples) {
  if (tid !== main) continue;
  total++;
  bump(kinds, kindOf(frames[0]));
  let owner;
  for (const f of frames) {
    owner = jsFrame(f.sym);
    if (owner) break;
  }
  const gc = frames.some((f) => /Heap::|Scavenge|MarkCompact|GarbageCollect/.test(f.sym));
  if (gc) bump(groups, '(GC)');
  else if (owner) {
    bump(groups, owner.group);
    bump(functions, owner.fn);
  } else
    bump(
      groups,
      `(no JavaScript: ${frames.find((f) => !f.dso.includes('kernel'))?.sym ?? kindOf(frames[0])})`,
    );
}
const perStep = (n) => ((n * msPerSample) / steps).toFixed(3).padStart(7);
const print = (title, map) => {
  console.log(`\n${title}`);
  for (const [key, n] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${perStep(n)} ms/step  ${key}`);
};
console.log(`main thread ${main}: ${perStep(total)} ms/step on CPU over ${steps} steps`);
print('leaf kind', kinds);
print('innermost JavaScript frame: group', groups);
print('innermost JavaScript frame: function', functions);
