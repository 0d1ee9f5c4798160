// Where a compat request's (or an agent-loop step's) SQLite statements go (issue 17 item 3): the
// SQLite counterpart of ./store-statements.mjs. One `svc service start http` node
// (./statements-harness.mjs) with the preload ./profile/sqlite-statements.cjs, 20 requests of
// warm-up (then the counts are reset), then BENCH_STATEMENTS_REQUESTS (default 50) requests, 10
// at once; prints statements per request by `<method> <SQL text>`, most run first
// (SVC_COUNT_STACKS=<regex> adds the callers' stacks; SVC_COUNT_TX=1 tags each with `[in tx]` or `[no tx]`). BENCH_STATEMENTS_LOOP=1: the agent loop
// (./agent-loop.bench.mjs, BENCH_STEPS tool steps), per step over the whole `svc run`.
// BENCH_SVC_BIN runs another build. `node bench/sqlite-statements.mjs`; not part of `npm run bench`.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { compatStatements, printRows, REQUESTS } from './statements-harness.mjs';

const here = import.meta.dirname ?? new URL('.', import.meta.url).pathname;
const PRELOAD = resolve(here, 'profile/sqlite-statements.cjs');
const FILE_PREFIX = 'svc-sqlite-statements-';

/** The preload's file: statements by text (`prepare` left out), calls. */
const rowsOf = (file) =>
  JSON.parse(readFileSync(join(tmpdir(), file), 'utf8'))
    .filter(([text]) => text !== 'prepare')
    .map(([text, s]) => ({ text, calls: s.n }));

function print(rows, per, label) {
  const statements = rows.filter((r) => !r.text.startsWith('stack: '));
  const total = statements.reduce((sum, r) => sum + r.calls, 0);
  const sessionReads = statements
    .filter((r) => /^\w+ SELECT \* FROM sessions WHERE id = \?$/.test(r.text))
    .reduce((sum, r) => sum + r.calls, 0);
  console.log(
    `${(total / per).toFixed(1)} statements per ${label}; session row reads ${(sessionReads / per).toFixed(2)}`,
  );
  printRows(rows, per);
}

if (process.env.BENCH_STATEMENTS_LOOP) {
  process.env.BENCH_NODE_ARGS = `--require ${PRELOAD}`;
  process.env.BENCH_EXPOSURE = 'all';
  const since = Date.now();
  const { runOnce } = await import('./agent-loop.bench.mjs');
  const result = await runOnce('all');
  const steps = Number(result.find((r) => r.name === 'tool steps')?.value);
  // The newest statements file written since the run started is the run's.
  const file = readdirSync(tmpdir())
    .filter((f) => f.startsWith(FILE_PREFIX))
    .map((f) => ({ f, t: statSync(join(tmpdir(), f)).mtimeMs }))
    .filter((x) => x.t >= since)
    .sort((a, b) => b.t - a.t)[0];
  print(rowsOf(file.f), steps, 'step');
  process.exit(0);
}
const { errors, result: rows } = await compatStatements({
  nodeArgs: ['--require', PRELOAD],
  env: {
    ...(process.env.SVC_COUNT_STACKS ? { SVC_COUNT_STACKS: process.env.SVC_COUNT_STACKS } : {}),
    ...(process.env.SVC_COUNT_TX ? { SVC_COUNT_TX: process.env.SVC_COUNT_TX } : {}),
    ...(process.env.NODE_OPTIONS ? { NODE_OPTIONS: process.env.NODE_OPTIONS } : {}),
  },
  warmedUp: async (child) => {
    child.kill('SIGUSR2');
    await new Promise((r) => setTimeout(r, 100));
  },
  finished: async (child, exited) => {
    child.kill('SIGTERM');
    await exited;
    return rowsOf(`${FILE_PREFIX}${child.pid}.json`);
  },
});
console.log(`${REQUESTS} compat requests (${errors} errors)`);
print(rows, REQUESTS, 'request');
process.exit(0);
