// What one PostgreSQL statement costs svc's CPU, by shape (issue 18, item 6): the compat request's
// CPU did not fall with its statement count (docs/performance-log.md, the evening of 2026-11-30), so
// this calibrates the marginal cost. On a throwaway PostgreSQL (./pg-cluster.mjs) and svc's own
// client (src/store/postgres/client.ts, bundled from this tree by ./tree-drivers.mjs), each case
// runs BENCH_RT_OPS statements (default 3000) after a warm-up and reports svc's process CPU
// (utime + stime) and wall time per statement:
// - `awaited`: a small indexed SELECT with a parameter, each awaited before the next (a round trip each);
// - `pipelined ×4`: four such SELECTs issued together, then awaited (one write, four answers);
// - `transaction of 3`: BEGIN, three such SELECTs awaited in turn, COMMIT, per statement sent (5);
// - `raw pg`: the same SELECT through a bare `pg` Client, awaited: the driver without svc's layer;
// - `raw pg, rowMode array`: the same without building row objects;
// - `awaited, wide row`: a 24-column row of mixed types (a run's row is 25), awaited: the per-column
//   cost of a row (parsers, the row object).
// Each case also counts the young-generation collections per 1000 statements (the garbage it
// leaves, unmoved by the box's load). `node bench/pg-roundtrip.mjs`; not part of `npm run bench`.
import { startPostgres } from './pg-cluster.mjs';
import { benchTrees, runTreeDrivers, showMedian } from './tree-drivers.mjs';

const ROUNDS = Number(process.env.BENCH_RT_ROUNDS ?? 3);
const OPS = Number(process.env.BENCH_RT_OPS ?? 3000);
const pg = await startPostgres();
try {
  process.env.BENCH_RT_URL = await pg.createDatabase('svc_bench_rt');
  const driver = (tree) => `
import { constants, PerformanceObserver } from 'node:perf_hooks';
import pg from 'pg';
import { createPostgresClient } from '${tree}/src/store/postgres/client';

const OPS = ${OPS};
const url = process.env.BENCH_RT_URL;
const sql = await createPostgresClient({ url, pool_size: 4, statement_timeout_ms: 30_000, connect_timeout_ms: 5_000 });
await sql.run('CREATE TABLE IF NOT EXISTS rt (id text PRIMARY KEY, body text NOT NULL, n bigint NOT NULL)');
await sql.run("INSERT INTO rt SELECT 'k' || g, repeat('x', 200), g FROM generate_series(1, 1000) g ON CONFLICT DO NOTHING");
const SELECT = 'SELECT id, body, n FROM rt WHERE id = $1';
const wideColumns = Array.from({ length: 8 }, (_, i) => \`t\${i} text, n\${i} bigint, f\${i} boolean\`).join(', ');
await sql.run(\`CREATE TABLE IF NOT EXISTS rtw (id text PRIMARY KEY, \${wideColumns})\`);
await sql.run(\`INSERT INTO rtw SELECT 'k' || g, \${Array.from({ length: 8 }, () => "'some text', g, true").join(', ')}
  FROM generate_series(1, 1000) g ON CONFLICT DO NOTHING\`);
const WIDE = 'SELECT * FROM rtw WHERE id = $1';
const key = (i) => 'k' + ((i % 1000) + 1);
const raw = new pg.Client({ connectionString: url });
await raw.connect();
const cases = [
  ['awaited', 1, (i) => sql.one(SELECT, [key(i)])],
  ['pipelined x4', 4, (i) => Promise.all([0, 1, 2, 3].map((j) => sql.one(SELECT, [key(i * 4 + j)])))],
  ['transaction of 3', 5, (i) => sql.transaction(async (tx) => {
    await tx.one(SELECT, [key(i)]);
    await tx.one(SELECT, [key(i + 1)]);
    await tx.one(SELECT, [key(i + 2)]);
  })],
  ['raw pg', 1, (i) => raw.query(SELECT, [key(i)])],
  ['raw pg, rowMode array', 1, (i) => raw.query({ text: SELECT, values: [key(i)], rowMode: 'array' })],
  ['awaited, wide row', 1, (i) => sql.one(WIDE, [key(i)])],
];
// Every case warmed up before any is measured: the driver's code is shared, so a case measured
// first would otherwise pay the JIT's warm-up for the others.
for (const [, , op] of cases) for (let i = 0; i < 500; i++) await op(i);
const out = {};
// Young-generation collections: the garbage a statement leaves, counted (no clock, so the box's load does not move it).
let scavenges = 0;
const gc = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) scavenges++;
});
gc.observe({ entryTypes: ['gc'] });
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
for (const [name, statementsPerOp, op] of cases) {
  const ops = Math.ceil(OPS / statementsPerOp);
  await settle();
  const scavengesBefore = scavenges;
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < ops; i++) await op(i);
  const used = process.cpuUsage(cpu);
  const n = ops * statementsPerOp;
  out[name + ' cpu'] = (used.user + used.system) / n;
  out[name + ' wall'] = ((performance.now() - start) * 1000) / n;
  await settle();
  out[name + ' scavenges per 1000'] = ((scavenges - scavengesBefore) * 1000) / n;
}
gc.disconnect();
await raw.end();
await sql.close();
console.log(JSON.stringify(out));
`;
  const trees = benchTrees();
  const results = runTreeDrivers({ name: 'pg-roundtrip', trees, rounds: ROUNDS, driver });
  const keys = Object.keys(results[0][0]);
  console.log(`µs of svc CPU and wall time per statement, median (min–max) of ${ROUNDS} rounds of ${OPS}`);
  for (const key of keys)
    console.log(`${key.padEnd(32)} ${trees.map((_, i) => showMedian(results[i], key)).join('   ')}`);
} finally {
  await pg.stop();
}
