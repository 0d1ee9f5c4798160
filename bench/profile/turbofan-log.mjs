// TurboFan compiles and deopts of a V8 log, by owner (issue 17 item 3, p-deopt): which code the
// service's warm-up compiles (svc's source directories, the packages bundled into dist, Node's own
// modules), which functions are compiled more than once, and each deopt with its place.
//   BENCH_NODE_ARGS="--log-code --log-deopt --logfile=/tmp/v8.log --no-logfile-per-isolate" \
//     node bench/compat-rounds.mjs
//   node bench/profile/turbofan-log.mjs /tmp/v8.log [path/to/dist]
// dist's chunks name their sources in `//#region <path>` comments; a function's line in a chunk
// is charged to the region around it (src/<dir>, or the node_modules package). A TurboFan code
// object is one `code-creation,JS,…` line whose name ends in `*` (V8's optimized marker).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

const [log, distArg] = process.argv.slice(2);
if (!log) {
  console.error('usage: node bench/profile/turbofan-log.mjs <v8.log> [dist]');
  process.exit(2);
}
const dist = `file://${resolve(distArg ?? resolve(import.meta.dirname, '../../dist'))}/`;
const regions = new Map();
function regionOf(file, line) {
  if (!regions.has(file)) {
    let current = '?';
    const at = [];
    for (const text of readFileSync(file, 'utf8').split('\n')) {
      const region = /^\/\/#region (.*)$/.exec(text);
      if (region) current = region[1];
      at.push(current);
    }
    regions.set(file, at);
  }
  return regions.get(file)[line - 1] ?? '?';
}
const shortName = (name) => name.replaceAll(dist, '');
function ownerOf(name) {
  const place = /(\S+):(\d+):(\d+)$/.exec(name);
  if (!place) return 'other';
  if (place[1].startsWith('node:')) return `node ${place[1].slice(5).split('/')[0]}`;
  const external = !place[1].startsWith(dist);
  const region = external ? place[1] : regionOf(place[1].slice('file://'.length), Number(place[2]));
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(region);
  if (pkg) return `pkg ${pkg[1]}`;
  if (external) return `other ${place[1]}`;
  const dir = /^src\/([^/]+)/.exec(region);
  return dir ? `svc ${dir[1]}` : `svc? ${region}`;
}

const compiles = new Map();
const owners = new Map();
const deopts = [];
let total = 0;
for (const line of readFileSync(log, 'utf8').split('\n')) {
  if (line.startsWith('code-creation,JS,')) {
    const fields = line.split(',');
    if (fields.at(-1) !== '*') continue;
    const name = fields.slice(6, -2).join(',');
    total++;
    compiles.set(name, (compiles.get(name) ?? 0) + 1);
    const owner = ownerOf(name);
    owners.set(owner, (owners.get(owner) ?? 0) + 1);
  } else if (line.startsWith('code-deopt,')) {
    // code-deopt,<time µs>,<size>,<code>,<inlining id>,<offset>,<kind>,<place>,<reason>
    const fields = line.split(',');
    deopts.push({
      ms: Number(fields[1]) / 1000,
      kind: fields[6],
      place: fields[7],
      reason: fields.slice(8).join(','),
    });
  }
}
const byCount = (map) => [...map].sort((a, b) => b[1] - a[1]);
const group = (prefix) =>
  byCount(owners)
    .filter(([o]) => o.startsWith(prefix))
    .reduce((n, [, c]) => n + c, 0);
console.log(
  `TurboFan code objects ${total}, functions ${compiles.size}, compiled again ${total - compiles.size}`,
);
console.log(
  `by owner: svc ${group('svc')}, packages ${group('pkg')}, node ${group('node')}, other ${group('other')}`,
);
for (const [owner, n] of byCount(owners)) console.log(`${String(n).padStart(5)}  ${owner}`);
console.log('compiled more than once:');
for (const [name, n] of byCount(compiles).filter(([, n]) => n > 1))
  console.log(`${String(n).padStart(5)}  ${shortName(name)}  (${ownerOf(name)})`);
console.log(`deopts ${deopts.length} (ms since the process started, kind, place, reason):`);
for (const d of deopts)
  console.log(`${d.ms.toFixed(0).padStart(8)}  ${d.kind}  ${shortName(d.place)}  ${d.reason}`);
