// A --cpu-prof file sliced by the rounds of bench/compat-rounds.mjs (as cpu-profile-slices.mjs),
// per request: self time by coarse area (svc, the transaction statements, node:http/net/streams,
// microtasks, GC, the AI SDK, hono, undici, better-sqlite3), inclusive time by area (an area
// counted once per sample when any frame of it is on the stack), the top functions by self time
// and the top svc functions by inclusive time. Wall-clock samples: read the shares.
// `node bench/profile/cpu-profile-areas.mjs <file.cpuprofile> <marks.json> <dist dir> <requests a round> <first round> <last round> [top]`
import { bundledSource } from './bundle-regions.mjs';
import { forEachRoundSample, loadRoundsProfile } from './rounds-profile.mjs';

const [file, marksFile, distDir, perRound, from, to, topArg] = process.argv.slice(2);
const top = Number(topArg ?? 15);
const loaded = loadRoundsProfile(file, marksFile, distDir, perRound, from, to);
const { requests, regions, byId, parent } = loaded;
const src = ({ callFrame: { url, lineNumber, functionName } }) => {
  const b = bundledSource(regions, url, lineNumber);
  if (b) return b;
  if (url.includes('node_modules')) return `npm:${/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)[1]}`;
  if (url.startsWith('node:')) return url;
  return url ? 'node' : `(${functionName})`;
};
const area = (n) => {
  const s = src(n);
  if (s === '(garbage collector)') return 'GC';
  if (s.startsWith('src/store/transaction-statements')) return 'sqlite: BEGIN/COMMIT/SAVEPOINT';
  if (s.startsWith('src/')) return 'svc';
  if (s === 'npm:ai' || s.startsWith('npm:@ai-sdk')) return 'ai SDK';
  if (s === 'npm:better-sqlite3') return 'better-sqlite3 (js)';
  if (s.startsWith('npm:hono') || s.startsWith('npm:@hono') || s.includes('hono')) return 'hono';
  if (s.startsWith('npm:undici') || s.includes('undici')) return 'undici';
  if (
    /node:(_http|http|net|stream|internal\/streams|internal\/http|_stream)/.test(s) ||
    /^\((writev|writeString|writeBuffer|writeUtf8String|readStart)\)$/.test(s)
  )
    return 'node:http/net/streams (+socket writes)';
  if (s === '(runMicrotasks)' || /task_queues|async_hooks|timers/.test(s))
    return 'node: microtasks/ticks/timers/async_hooks';
  if (s.startsWith('npm:')) return 'other npm (' + s.slice(4) + ')';
  if (s.startsWith('node')) return 'node: other';
  return 'native other ' + s;
};
const selfA = new Map(),
  incA = new Map(),
  selfF = new Map(),
  incF = new Map();
const bump = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);
let total = 0;
forEachRoundSample(loaded, (leaf, dt) => {
  const ms = dt / 1000;
  total += ms;
  const stack = [];
  for (let id = leaf.id; id !== undefined; id = parent.get(id)) stack.push(byId.get(id));
  bump(selfA, area(leaf), ms);
  bump(selfF, `${leaf.callFrame.functionName || '(anon)'} ${src(leaf)}`, ms);
  for (const a of new Set(stack.map(area))) bump(incA, a, ms);
  for (const k of new Set(
    stack
      .filter((n) => src(n).startsWith('src/'))
      .map((n) => `${n.callFrame.functionName || '(anon)'} ${src(n)}`),
  ))
    bump(incF, k, ms);
});
const pr = (title, m, n = top) => {
  console.log(`\n${title}`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n))
    console.log(
      `${(v / requests).toFixed(3).padStart(7)} ms/req ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`,
    );
};
console.log(`busy ${(total / requests).toFixed(2)} ms/req over ${requests}`);
pr('self by area', selfA, 30);
pr('inclusive by area (any frame on stack)', incA, 30);
pr('self by function', selfF);
pr('inclusive by svc function', incF, 40);
