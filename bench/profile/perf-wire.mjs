// On-CPU samples of a compat run's main thread (perf record, as ./perf-slices.mjs), summed per
// request by layer of the wire (issue 17 item 3, branch p-leanio): the innermost JavaScript frame's
// layer (hono + node-server, svc's http layer, svc's model client, node's http/net/streams, the
// rest), Hono's layer outside the route's own work (a hono or node-server frame on the stack, none
// of acquire / prepare / streamAnswer / jsonAnswer), and the socket writes (samples whose
// innermost JavaScript frame is `clearBuffer`) with the part that wakes the reader (kernel
// `sock_def_readable`). Works for the floor too (its main thread holds `compat-floor` frames).
//   BENCH_ROUNDS=7 BENCH_MARKS=/tmp/m.json \
//   BENCH_NODE_ARGS="--perf-basic-prof --interpreted-frames-native-stack" \
//   perf record -g -k mono -e cpu-clock -F 2000 -o /tmp/p.data -- node bench/compat-rounds.mjs
//   perf script -i /tmp/p.data -F comm,tid,time,ip,sym,dso > /tmp/p.txt
//   node bench/profile/perf-wire.mjs /tmp/p.txt /tmp/m.json dist 200 [first round 3] [last round 7]
// (BENCH_CONCURRENCY requests a round, default 200.) CPU, not wall: a thread waiting for a core
// takes no sample; still read differences under ≈ 10 samples as noise.
import { readFileSync } from 'node:fs';
import { bundledSource, bundleRegions } from './bundle-regions.mjs';

const [file, marksFile, distDir, perArg, fromArg, toArg] = process.argv.slice(2);
const regions = bundleRegions(distDir);
const from = Number(fromArg ?? 3);
const to = Number(toArg ?? 7);
const marks = JSON.parse(readFileSync(marksFile, 'utf8')).filter((m) => {
  const r = Number(m.label.replace(/^round /, ''));
  return m.label.startsWith('round ') && r >= from && r <= to;
});
const requests = Number(perArg) * marks.length;
const usPerSample = 500; // -F 2000

const samples = [];
const owners = new Map();
for (const block of readFileSync(file, 'utf8').split('\n\n')) {
  const lines = block.trim().split('\n');
  const head = /^\s*(\S+)\s+(\d+)\s+([\d.]+):/.exec(lines[0] ?? '');
  if (!head) continue;
  const us = Number(head[3]) * 1e6;
  if (!marks.some((s) => us >= s.start && us <= s.end)) continue;
  const frames = lines.slice(1).map((line) => line.trim().replace(/^[0-9a-f]+\s+/, ''));
  samples.push({ tid: head[2], frames });
  if (frames.some((f) => f.includes('/dist/') || f.includes('compat-floor')))
    owners.set(head[2], (owners.get(head[2]) ?? 0) + 1);
}
const main = [...owners].sort((a, b) => b[1] - a[1])[0]?.[0];

/** A JavaScript frame's function and source (`src/…` by the bundle's regions), or undefined. */
function jsFrame(frame) {
  const m = /^(?:JS:)?[*~^+]?(\S*) (file:\/\/\S+|node:\S+|\/\S+\.m?js):(\d+):\d+/.exec(frame);
  if (!m) return undefined;
  const [, fn, url, line] = m;
  return {
    fn,
    source: (bundledSource(regions, url, Number(line) - 1) ?? url).replace(/^.*node_modules\//, ''),
  };
}
const layerOf = (source) => {
  if (/hono/.test(source)) return 'hono + node-server';
  if (
    /^src\/surfaces\/http\/(compat\/)?(index|auth|body|errors|server|sse|sse-node|routes|chat-completions|run-queue|request)\.ts/.test(
      source,
    )
  )
    return "svc's http layer";
  if (
    /^src\/providers\/(http-transport|openai-compatible-stream|openai-compatible-lean|request-body|stream-parts)/.test(
      source,
    )
  )
    return "svc's model client";
  if (/^node:(_http|http|net|internal\/streams|stream|internal\/stream_base|_stream)/.test(source))
    return 'node http/net/streams';
  if (/compat-floor/.test(source)) return 'floor gateway';
  return 'rest';
};
const route = new Set(['acquire', 'prepare', 'streamAnswer', 'jsonAnswer']);
const layers = new Map();
let total = 0;
let honoOutside = 0;
let writes = 0;
let wakeUps = 0;
for (const { tid, frames } of samples) {
  if (tid !== main) continue;
  total++;
  const js = frames.map(jsFrame).filter(Boolean);
  const layer = js[0] ? layerOf(js[0].source) : '(no JavaScript)';
  layers.set(layer, (layers.get(layer) ?? 0) + 1);
  if (js.some((f) => /hono/.test(f.source)) && !js.some((f) => route.has(f.fn))) honoOutside++;
  if (js[0]?.fn === 'clearBuffer') {
    writes++;
    if (
      frames
        .slice(
          0,
          frames.findIndex((f) => f.includes('clearBuffer')),
        )
        .some((f) => f.startsWith('sock_def_readable'))
    )
      wakeUps++;
  }
}
const us = (n) => `${((n * usPerSample) / requests).toFixed(1).padStart(7)} µs`;
console.log(
  `main thread ${main}: ${us(total)} a request on CPU over ${requests} requests (${total} samples)`,
);
console.log(`${us(honoOutside)}  hono + node-server outside the route's own work (${honoOutside} samples)`);
console.log(
  `${us(writes)}  socket writes (innermost JavaScript frame clearBuffer), of it waking the reader ${us(wakeUps).trim()}`,
);
console.log('innermost JavaScript frame by layer:');
for (const [layer, n] of [...layers].sort((a, b) => b[1] - a[1])) console.log(`${us(n)}  ${layer}`);
