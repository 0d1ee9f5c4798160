// A --cpu-prof file of bench/compat-rounds.mjs read as p-sqlcpu4 read it: the rounds' samples only,
// each sample's weight (the time to the next sample) capped (default 100 µs, so a thread descheduled
// on a loaded box does not land a long gap on whatever ran last), each sample to its innermost svc
// frame (what that code called, native and npm, is its), then by layer (AREAS below, p-sqlcpu4's
// rows) and by innermost svc function. GC and idle are their own rows.
// `node bench/profile/cpu-profile-capped.mjs <file.cpuprofile> <marks.json> <dist dir> <requests a round> <first round> <last round> [cap µs] [top]`
import { readFileSync } from 'node:fs';
import { bundledSource, bundleRegions } from './bundle-regions.mjs';

const [file, marksFile, distDir, perRound, from, to, capArg, topArg] = process.argv.slice(2);
const cap = Number(capArg ?? 100);
const top = Number(topArg ?? 40);

/** p-sqlcpu4's layers, by the innermost svc source file: the first pattern that matches. */
const AREAS = [
  [
    'transactions (BEGIN / COMMIT / SAVEPOINT / RELEASE)',
    /^src\/store\/(transaction|transactions|group-commit|batch-yield|tx-)/,
  ],
  ['compat ledger row', /^src\/runs\/compat-request-repository|^src\/surfaces\/http\/compat\/.*ledger/],
  ['compat parse, prepare and answer', /^src\/surfaces\/http\/compat\//],
  ['SSE answer (sse-node: the socket writes)', /^src\/surfaces\/http\/sse|^src\/surfaces\/sse/],
  ['route / http front', /^src\/surfaces\//],
  ['prompt stack row', /^src\/observe\/prompt-stack/],
  [
    'system prompt (prompt, environment, context files)',
    /^src\/agent\/(prompt|system-prompt\.prompt|environment)\.ts|^src\/workspace\//,
  ],
  [
    'provider: model request and parse',
    /^src\/providers\/(cloud-models|openai-compatible|stream-parts|http-transport|request-body|build-request|prompt-messages|message-regions|metered-model|wrap-model)/,
  ],
  ['providers other (resolution, credentials)', /^src\/providers\//],
  ['metrics, telemetry', /^src\/telemetry\/|^src\/observe\//],
  ['run ledger (runs/)', /^src\/runs\//],
  ['sessions and messages', /^src\/sessions\//],
  ['session events (bus, event store)', /^src\/events\//],
  ['agent run (step driver, run loop, run control, held writes)', /^src\/agent\//],
  ['store other (statement cache, wide rows, data version, held rows)', /^src\/store\//],
  ['ids', /^src\/util\/ids/],
  ['log', /^src\/log\.ts|^src\/redact/],
];
const areaOf = (f) =>
  f
    ? (AREAS.find(([, re]) => re.test(f))?.[0] ?? `other svc (${f.split('/').slice(0, 2).join('/')})`)
    : 'outside svc (node:http, sockets, microtasks, npm)';

const marks = JSON.parse(readFileSync(marksFile, 'utf8')).filter((m) => {
  const r = Number(m.label.slice(6));
  return m.label.startsWith('round ') && r >= Number(from) && r <= Number(to);
});
const requests = Number(perRound) * marks.length;
const regions = bundleRegions(distDir);
const p = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const memo = new Map();
/** The innermost svc frame of a node: { file, fn } or undefined. */
const svcFrame = (id) => {
  if (memo.has(id)) return memo.get(id);
  const n = byId.get(id);
  const s = bundledSource(regions, n.callFrame.url, n.callFrame.lineNumber);
  const found = s?.startsWith('src/')
    ? { file: s, fn: n.callFrame.functionName || '(anonymous)' }
    : parent.has(id)
      ? svcFrame(parent.get(id))
      : undefined;
  memo.set(id, found);
  return found;
};
const areas = new Map();
const fns = new Map();
const add = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);
let t = p.startTime;
let raw = 0;
let capped = 0;
const deltas = [];
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i];
  const dt = p.timeDeltas[i + 1] ?? 0;
  if (!marks.some((m) => t >= m.start && t <= m.end)) continue;
  const n = byId.get(p.samples[i]);
  const name = n.callFrame.functionName;
  if (name === '(idle)') continue;
  deltas.push(dt);
  const w = Math.min(dt, cap);
  raw += dt;
  capped += w;
  if (name === '(garbage collector)') {
    add(areas, 'GC (main thread)', w);
    add(fns, 'GC', w);
    continue;
  }
  const f = svcFrame(p.samples[i]);
  add(areas, areaOf(f?.file), w);
  add(
    fns,
    f
      ? `${f.file} ${f.fn}`
      : `(outside svc) ${name || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}`,
    w,
  );
}
deltas.sort((a, b) => a - b);
console.log(
  `${requests} requests, rounds ${from}-${to}; samples ${deltas.length}, delta median ${deltas[deltas.length >> 1]} µs, p99 ${deltas[Math.floor(deltas.length * 0.99)]} µs, max ${deltas.at(-1)} µs`,
);
console.log(
  `busy a request: raw ${(raw / requests).toFixed(0)} µs, capped at ${cap} µs ${(capped / requests).toFixed(0)} µs\n`,
);
const table = (m, n) => {
  console.log('| row | µs a request | share |\n| --- | ---: | ---: |');
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n))
    console.log(`| ${k} | ${(v / requests).toFixed(1)} | ${((100 * v) / capped).toFixed(1)}% |`);
  console.log('');
};
table(areas, 100);
table(fns, top);
