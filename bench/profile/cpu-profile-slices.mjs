// A --cpu-prof file sliced by the rounds of bench/compat-rounds.mjs (its BENCH_MARKS file: each
// round's CLOCK_MONOTONIC start/end in µs, the clock of the profile's timestamps), self time per
// request grouped by package / svc area, and the top svc functions by self time.
// `node bench/profile/cpu-profile-slices.mjs <file.cpuprofile> <marks.json> <dist dir> <requests a round> <first round> <last round> [top]`
import { readFileSync } from 'node:fs';
import { bundledSource, bundleRegions } from './bundle-regions.mjs';

const [file, marksFile, distDir, perRoundArg, fromArg, toArg, topArg] = process.argv.slice(2);
const marks = JSON.parse(readFileSync(marksFile, 'utf8')).filter((m) => m.label.startsWith('round '));
const from = Number(fromArg);
const to = Number(toArg);
const slices = marks.filter((m) => {
  const r = Number(m.label.slice(6));
  return r >= from && r <= to;
});
const requests = Number(perRoundArg) * slices.length;
const regions = bundleRegions(distDir);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const source = ({ callFrame: { url, lineNumber, functionName } }) => {
  const bundled = bundledSource(regions, url, lineNumber);
  if (bundled) return bundled;
  if (url.includes('node_modules')) return `npm:${/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)[1]}`;
  if (url.startsWith('node:')) return url;
  return url ? 'node' : `(${functionName})`;
};
const group = (src) => {
  if (src.startsWith('npm:')) return src;
  if (src.startsWith('node:'))
    return `node:${src
      .slice(5)
      .split('/')[0]
      .replace(/^internal$/, 'internal')}`;
  const m = /^src\/(store\/postgres|runs\/pg-|events\/pg-|[^/]+)/.exec(src);
  return m ? `svc ${m[0]}` : src;
};
const self = new Map();
const groups = new Map();
const bump = (map, key, ms) => map.set(key, (map.get(key) ?? 0) + ms);
let t = profile.startTime;
let total = 0;
let inSlices = 0;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i];
  if (!slices.some((s) => t >= s.start && t <= s.end)) continue;
  inSlices++;
  const leaf = byId.get(profile.samples[i]);
  if (leaf.callFrame.functionName === '(idle)') continue;
  const ms = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i]) / 1000;
  total += ms;
  const src = source(leaf);
  bump(self, `${leaf.callFrame.functionName || '(anonymous)'} ${src}`, ms);
  bump(groups, group(src), ms);
}
console.log(
  `rounds ${from}..${to}: ${inSlices} samples, busy ${total.toFixed(0)} ms, ${(total / requests).toFixed(2)} ms a request over ${requests}`,
);
console.log('\nself time by package / area');
for (const [k, ms] of [...groups].sort((a, b) => b[1] - a[1]).slice(0, 30))
  console.log(
    `${(ms / requests).toFixed(3).padStart(7)} ms/req ${((100 * ms) / total).toFixed(1).padStart(5)}%  ${k}`,
  );
console.log('\nself time by function');
for (const [k, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg ?? 40)))
  console.log(
    `${(ms / requests).toFixed(3).padStart(7)} ms/req ${((100 * ms) / total).toFixed(1).padStart(5)}%  ${k}`,
  );
