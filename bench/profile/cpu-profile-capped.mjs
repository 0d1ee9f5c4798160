// A --cpu-prof file of bench/compat-rounds.mjs read as p-sqlcpu4 read it: the rounds' samples only,
// each sample's weight (the time to the next sample) capped (default 100 µs, so a thread descheduled
// on a loaded box does not land a long gap on whatever ran last), each sample to its innermost svc
// frame (what that code called, native and npm, is its), then by layer (AREAS below, p-sqlcpu4's
// rows) and by innermost svc function. GC and idle are their own rows.
// `node bench/profile/cpu-profile-capped.mjs <file.cpuprofile> <marks.json> <dist dir> <requests a round> <first round> <last round> [cap µs] [top]`
import { forEachRoundSample, innermostSvcFrame, loadRoundsProfile } from './rounds-profile.mjs';

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

const loaded = loadRoundsProfile(file, marksFile, distDir, perRound, from, to);
const { requests } = loaded;
const svcFrame = innermostSvcFrame(loaded);
const areas = new Map();
const fns = new Map();
const add = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);
let raw = 0;
let capped = 0;
const deltas = [];
forEachRoundSample(loaded, (n, dt) => {
  const name = n.callFrame.functionName;
  deltas.push(dt);
  const w = Math.min(dt, cap);
  raw += dt;
  capped += w;
  if (name === '(garbage collector)') {
    add(areas, 'GC (main thread)', w);
    add(fns, 'GC', w);
    return;
  }
  const f = svcFrame(n.id);
  add(areas, areaOf(f?.file), w);
  add(
    fns,
    f
      ? `${f.file} ${f.fn}`
      : `(outside svc) ${name || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}`,
    w,
  );
});
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
