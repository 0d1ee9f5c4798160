// A `--cpu-prof` file of a built svc, summed by svc source: self and inclusive time of each
// function (named by the `//#region src/…` its bundle line falls in), per request. Idle time and a
// heap snapshot's time are left out. Samples are wall-clock time on the main thread: on a loaded
// box the time a thread waits for a core lands on the frame it resumes in (syscalls above all),
// so read the shares, and check a syscall's cost on its own.
// `node bench/profile/cpu-profile.mjs <file.cpuprofile> <dist dir> <requests> [top]`
import { readFileSync } from 'node:fs';
import { bundledSource, bundleRegions } from './bundle-regions.mjs';

const [file, distDir, requestsArg, topArg] = process.argv.slice(2);
const requests = Number(requestsArg);
const top = Number(topArg ?? 25);
const regions = bundleRegions(distDir);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const source = ({ callFrame: { url, lineNumber, functionName } }) => {
  const bundled = bundledSource(regions, url, lineNumber);
  if (bundled) return bundled;
  if (url.includes('node_modules')) return url.replace(/^.*node_modules\//, '').replace(/\/.*$/, '');
  return url ? 'node' : functionName;
};
const nameOf = (n) => `${n.callFrame.functionName || '(anonymous)'} ${source(n)}`;
const self = new Map();
const inclusive = new Map();
const bump = (map, key, ms) => map.set(key, (map.get(key) ?? 0) + ms);
let total = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const ms = profile.timeDeltas[i] / 1000;
  const leaf = byId.get(profile.samples[i]);
  const stack = [];
  for (let id = leaf.id; id !== undefined; id = parent.get(id)) stack.push(byId.get(id));
  if (leaf.callFrame.functionName === '(idle)') continue;
  if (stack.some((n) => n.callFrame.functionName === 'writeHeapSnapshot')) continue;
  total += ms;
  bump(self, nameOf(leaf), ms);
  for (const key of new Set(stack.map(nameOf))) bump(inclusive, key, ms);
}
const print = (title, map, keep = () => true) => {
  console.log(`\n${title}`);
  for (const [key, ms] of [...map]
    .filter(([k]) => keep(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top))
    console.log(
      `${(ms / requests).toFixed(3).padStart(7)} ms/request ${((100 * ms) / total).toFixed(1).padStart(5)}%  ${key}`,
    );
};
console.log(`busy: ${total.toFixed(0)} ms, ${(total / requests).toFixed(2)} ms a request over ${requests}`);
print('self time by function', self);
print('inclusive time by svc function', inclusive, (k) => / src\//.test(k));
