// Where a compat request's PostgreSQL statements go (issue 18, item 6): a throwaway PostgreSQL
// (./pg-cluster.mjs, with pg_stat_statements), one `svc service start http` node on a new
// database, 20 requests of warm-up, then BENCH_STATEMENTS_REQUESTS (default 50) requests, 10 at
// once; prints the statements per request, in total and by statement text (pg_stat_statements'
// normalized query), most called first. BENCH_SVC_BIN runs another build.
// BENCH_STATEMENTS_LOOP=1: the agent loop instead (bench/agent-loop.bench.mjs, BENCH_STEPS tool
// steps on a new database; BENCH_CALLS calls a step), statements per step over the whole `svc run`,
// start-up included.
// With each statement's calls its plans (`track_planning` on for the database): a named statement
// whose plan the server keeps is planned fewer times than it is called (p-pgprep).
// After the plans, the server's mean plan + execution ms a call (pg_stat_statements' times: not the
// round trip), and of it the planning's ms a call. BENCH_STATEMENTS_NESTED=1 tracks the statements run inside functions and triggers
// too (`pg_stat_statements.track = all`), each its own row.
// `node bench/store-statements.mjs`; not part of `npm run bench`.
import { runOnce as agentLoopOnce } from './agent-loop.bench.mjs';
import { startPostgres } from './pg-cluster.mjs';
import { compatStatements, printRows, REQUESTS } from './statements-harness.mjs';

const pg = await startPostgres();
const { default: driver } = await import('pg');
/** The statements pg_stat_statements counted in the database of `url` (read in `postgres`, where it is created). */
async function statements(url) {
  const admin = new driver.Client({ connectionString: pg.urlOf('postgres') });
  await admin.connect();
  try {
    const database = new URL(url).pathname.slice(1);
    return (
      await admin.query(
        `SELECT queryid, calls, plans, total_exec_time, total_plan_time, query FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`,
        [database],
      )
    ).rows;
  } finally {
    await admin.end();
  }
}
/** A new database whose connections count their plans too (pg_stat_statements' `plans`). */
async function plannedDatabase(prefix) {
  const url = await pg.createDatabase(prefix);
  const admin = new driver.Client({ connectionString: pg.urlOf('postgres') });
  await admin.connect();
  try {
    await admin.query(
      `ALTER DATABASE ${new URL(url).pathname.slice(1)} SET pg_stat_statements.track_planning = on`,
    );
    // BENCH_STATEMENTS_NESTED=1: the statements of functions and triggers too (their own rows).
    if (process.env.BENCH_STATEMENTS_NESTED)
      await admin.query(
        `ALTER DATABASE ${new URL(url).pathname.slice(1)} SET pg_stat_statements.track = 'all'`,
      );
  } finally {
    await admin.end();
  }
  return url;
}
function print(rows, per, label) {
  const total = rows.reduce((sum, r) => sum + r.calls, 0);
  const plans = rows.reduce((sum, r) => sum + r.plans, 0);
  console.log(
    `${(total / per).toFixed(1)} statements per ${label}, ${(plans / per).toFixed(1)} planned (calls, plans, text)`,
  );
  printRows(
    rows.map((r) => ({ text: r.query, calls: r.calls, plans: r.plans, ms: r.ms, planMs: r.planMs })),
    per,
  );
}
if (process.env.BENCH_STATEMENTS_LOOP) {
  const url = await plannedDatabase('svc_statements_loop');
  process.env.BENCH_STORE_URL = url;
  const result = await agentLoopOnce('all');
  const steps = Number(result.find((r) => r.name === 'tool steps')?.value);
  await new Promise((r) => setTimeout(r, 1000));
  print(
    (await statements(url)).map((r) => ({ query: r.query, calls: Number(r.calls), plans: Number(r.plans) })),
    steps,
    'step',
  );
  pg.stop?.();
  process.exit(0);
}
const url = await plannedDatabase('svc_statements');
let before;
try {
  const { errors, result: rows } = await compatStatements({
    // SVC_STEP_ONCE=0: a step's message written as before its step end held it (p-heldstep), for A/B.
    env: {
      SVC_STORE_URL: url,
      ...(process.env.SVC_STEP_ONCE ? { SVC_STEP_ONCE: process.env.SVC_STEP_ONCE } : {}),
    },
    warmedUp: async () => {
      before = new Map((await statements(url)).map((r) => [r.queryid, r]));
    },
    finished: async () =>
      (await statements(url))
        .map((r) => ({
          query: r.query,
          calls: Number(r.calls) - Number(before.get(r.queryid)?.calls ?? 0),
          plans: Number(r.plans) - Number(before.get(r.queryid)?.plans ?? 0),
          ms:
            Number(r.total_exec_time) +
            Number(r.total_plan_time) -
            Number(before.get(r.queryid)?.total_exec_time ?? 0) -
            Number(before.get(r.queryid)?.total_plan_time ?? 0),
          planMs: Number(r.total_plan_time) - Number(before.get(r.queryid)?.total_plan_time ?? 0),
        }))
        .filter((r) => r.calls > 0),
  });
  console.log(`${REQUESTS} compat requests (${errors} errors)`);
  print(rows, REQUESTS, 'request');
} finally {
  pg.stop?.();
}
process.exit(0);
