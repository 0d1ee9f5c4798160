// The modules svc loaded after it was ready, from the file ./late-loads-preload.mjs wrote:
// `node bench/profile/late-loads.mjs <file>`. Run the load with, e.g.,
//   BENCH_SVC_ENV=LATE_LOADS_OUT=/tmp/loads.jsonl \
//   BENCH_NODE_ARGS="--import $PWD/bench/profile/late-loads-preload.mjs" \
//   BENCH_ROUNDS=3 node bench/compat-rounds.mjs
// Prints the count of modules loaded before and after ready, and each late one with the request
// count at its load and (CommonJS) the ms its load took, its own dependencies included.
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) throw new Error('usage: node bench/profile/late-loads.mjs <file written by late-loads-preload>');
const entries = readFileSync(file, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => JSON.parse(line));
const ready = entries.find((e) => e.mark === 'ready');
const loads = entries.filter((e) => e.kind);
const late = loads.filter((e) => e.ready);
const short = (id) => id.replace(/^file:\/\//, '').replace(/^.*\/node_modules\//, 'node_modules/');
console.log(`ready at ${ready ? `${ready.t} ms` : '(never)'}`);
console.log(`modules loaded before ready: ${loads.length - late.length}`);
console.log(`modules loaded after ready: ${late.length}`);
for (const e of late) {
  const ms = e.ms === undefined ? '' : ` (${e.ms} ms)`;
  console.log(
    `  +${(e.t - (ready?.t ?? 0)).toFixed(0)} ms, request ${e.requests}: ${e.kind} ${short(e.id)}${ms}`,
  );
}
