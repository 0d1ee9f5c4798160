// One table of a compat request's cost by svc layer: CPU (a --cpu-prof of bench/compat-rounds.mjs,
// sliced by its rounds), promises (two ./layer-census-preload.mjs files of runs with different
// request counts) and bytes allocated (two ./alloc-sampling.mjs profiles of the same two runs).
// Each sample, promise or allocation goes to the innermost svc source file on its stack (what that
// code called, Node's and SQLite's native time included, is the layer's), then the file to a layer
// (LAYERS below); none on the stack: "outside svc" (node:http, hono, GC, microtask plumbing).
//   node bench/profile/layer-table.mjs \
//     --cpu <file.cpuprofile> <marks.json> <dist dir> <requests a round> <first round> <last round> \
//     --census <fewer.json> <more.json> <requests between> \
//     --alloc <fewer.heapprofile> <more.heapprofile> <requests between> [--alloc-dist <dir>] [--files]
import { readFileSync } from 'node:fs';
import { bundleRegions } from './bundle-regions.mjs';
import { forEachRoundSample, innermostSvcFrame, loadRoundsProfile } from './rounds-profile.mjs';

/** Layer of a svc source file: the first pattern that matches. */
export const LAYERS = [
  ['compat surface (prepare, stream answer, ledger, queue)', /^src\/surfaces\/http\/compat\//],
  ['http (routes, SSE writer, auth, body)', /^src\/surfaces\/http\//],
  ['log', /^src\/log\.ts|^src\/redact/],
  [
    'run control (send, enqueue, claim, launch, queue)',
    /^src\/agent\/(agent-service|run-control|session-runtime|run-queue|run-leases|run-cancel|subscribe)\.ts/,
  ],
  [
    'run preparation (open run, history, held writes, read scope)',
    /^src\/agent\/(run-loop|prompt-message|history|held-writes|held-event|held-calls|last-step-end|run-types|host)\.ts|^src\/store\/read-scope/,
  ],
  [
    'prompt stack (system prompt, environment, context files)',
    /^src\/agent\/(prompt|system-prompt\.prompt|environment)\.ts|^src\/observe\/prompt-stack|^src\/workspace\//,
  ],
  [
    'funnel, tools, policies',
    /^src\/agent\/(run-stream|tool-bridge|tool-exposure|active-tools|run-bridge|toolbox)\.ts|^src\/(permissions|tools|packs|plugins)\//,
  ],
  [
    'step driver, model request (providers)',
    /^src\/agent\/(step-driver|step-request|step-ahead|pulled-parts)\.ts|^src\/providers\//,
  ],
  [
    'step recorder, step end',
    /^src\/agent\/(step-recorder|step-recorder-core|end-step|step-ends|step-close|step-message-writes|step-calls|step-sink|step-held-result|call-start)\.ts/,
  ],
  ['metered model, telemetry, metrics', /^src\/telemetry\//],
  ['finish (run finish, result)', /^src\/agent\/(run-finish|run-failure|failure|reports)\.ts/],
  [
    'bus (publish, write queue, listeners)',
    /^src\/events\/(bus|bus-writes|bus-batches|bus-feed|write-queue|held-publishes|own-context|ring)\.ts/,
  ],
  [
    'listeners (readouts, adaptive, quality, health)',
    /^src\/(readouts|adaptive|quality|health|coordination|scheduler)\//,
  ],
  ['rows: events, runs, sessions, messages (statements)', /^src\/(events\/event-store|runs\/|sessions\/)/],
  ['transactions, commits (store/db, statements)', /^src\/store\//],
  ['app, util, other svc', /^src\//],
];
const layerOf = (file) =>
  file
    ? (LAYERS.find(([, re]) => re.test(file))?.[0] ?? 'app, util, other svc')
    : 'outside svc (node, hono, GC, microtasks)';

const args = process.argv.slice(2);
const opt = (name, n) => {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args.slice(i + 1, i + 1 + n);
};
const byFile = args.includes('--files');
const columns = {};
const key = (file) => (byFile ? (file ?? '(outside svc)') : layerOf(file));
const add = (col, file, v) => {
  columns[col] ??= new Map();
  const k = key(file);
  columns[col].set(k, (columns[col].get(k) ?? 0) + v);
};

const cpu = opt('--cpu', 6);
if (cpu) {
  const loaded = loadRoundsProfile(...cpu);
  const svcFrame = innermostSvcFrame(loaded);
  forEachRoundSample(loaded, (n, dt) => add('CPU µs', svcFrame(n.id)?.file, dt / loaded.requests));
}

const layerOfChain = (chain) => chain.split(' < ').find((r) => r.startsWith('src/'));
const census = opt('--census', 3);
if (census) {
  const [fewer, more, requests] = census;
  for (const [f, sign] of [
    [fewer, -1],
    [more, 1],
  ]) {
    const c = JSON.parse(readFileSync(f, 'utf8'));
    for (const [chain, count] of c.chains)
      add('promises', layerOfChain(chain), (sign * count * c.every) / Number(requests));
  }
}

let allocRegions;
// `--alloc-dist <dir>`: the build the profiles ran (default: the dist/ their frames name, as it is now).
const allocDist = opt('--alloc-dist', 1)?.[0];
const alloc = opt('--alloc', 3);
if (alloc) {
  const [fewer, more, requests] = alloc;
  for (const [f, sign] of [
    [fewer, -1],
    [more, 1],
  ]) {
    const prof = JSON.parse(readFileSync(f, 'utf8'));
    const walk = (node, inherited) => {
      const { url, lineNumber } = node.callFrame;
      const bundled = /\/dist\/([^/]+\.js)$/.exec(url);
      let own = inherited;
      if (bundled) {
        allocRegions ??= bundleRegions(allocDist ?? url.replace(/^file:\/\//, '').replace(/\/[^/]+$/, ''));
        const s = allocRegions.get(bundled[1])?.[lineNumber];
        if (s?.startsWith('src/')) own = s;
      }
      add('KB alloc', own, (sign * node.selfSize) / 1024 / Number(requests));
      for (const child of node.children) walk(child, own);
    };
    walk(prof.head, undefined);
  }
}

const cols = Object.keys(columns);
const keys = new Set(cols.flatMap((c) => [...columns[c].keys()]));
const rows = [...keys].map((k) => [k, ...cols.map((c) => columns[c].get(k) ?? 0)]);
rows.sort((a, b) => b[1] - a[1]);
const fmt = (v, c) => (c === 'CPU µs' ? v.toFixed(0) : v.toFixed(1));
console.log(`| layer | ${cols.join(' | ')} |`);
console.log(`| --- | ${cols.map(() => '---:').join(' | ')} |`);
for (const r of rows)
  console.log(
    `| ${r[0]} | ${r
      .slice(1)
      .map((v, i) => fmt(v, cols[i]))
      .join(' | ')} |`,
  );
console.log(
  `| total | ${cols
    .map((c, i) =>
      fmt(
        rows.reduce((s, r) => s + r[i + 1], 0),
        c,
      ),
    )
    .join(' | ')} |`,
);
