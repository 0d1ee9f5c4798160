// The server's time of `svc_append_events_across` for one session's events (issue 18 item 6,
// p-pgappend): migration 46's body against migration 47's (its one-session path), side by side on
// a throwaway PostgreSQL (./pg-cluster.mjs, with pg_stat_statements) with session_events' real
// DDL: blocks of 500 calls of BENCH_ACROSS_EVENTS (default 7, a finish's) events of one session
// (50 sessions in turn, every session with events before), the two alternating
// BENCH_ACROSS_ROUNDS (default 4) times; prints the server's mean plan + execution ms a call and
// the nested statements a call (pg_stat_statements `track = all`). `node bench/append-across-one.mjs`;
// not part of `npm run bench`.
import { execSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { startPostgres } from './pg-cluster.mjs';

/** A migration's DDL (`export const name = \`…\`` in src/store/postgres/migrations/`file`.ts, no interpolation). */
const ddl = (file, name) =>
  readFileSync(new URL(`../src/store/postgres/migrations/${file}.ts`, import.meta.url), 'utf8').match(
    new RegExp(`export const ${name} = \`([^\`]*)\``),
  )[1];
const pg = await startPostgres();
const url = await pg.createDatabase('svc_across_one');
const { default: driver } = await import('pg');
const c = new driver.Client({ connectionString: url });
await c.connect();
await c.query(ddl('baseline-core', 'coreDdl'));
await c.query(ddl('baseline-operations', 'operationsDdl'));
const named = (sql, name) => sql.replace('FUNCTION svc_append_events_across(', `FUNCTION ${name}(`);
await c.query(named(ddl('append-across-once', 'appendAcrossOnceDdl'), 'svc_across_46'));
await c.query(named(ddl('append-across-one', 'appendAcrossOneDdl'), 'svc_across_47'));
await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
await c.query("SET pg_stat_statements.track = 'all'");
const CALLS = 500;
const n = Number(process.env.BENCH_ACROSS_EVENTS ?? 7);
const rounds = Number(process.env.BENCH_ACROSS_ROUNDS ?? 4);
const res = { 46: [], 47: [] };
const nested = { 46: 0, 47: 0 };
let s = 0;
const call = (v) => {
  const sid = `s${++s % 50}`;
  return c.query({
    name: `v${v}`,
    text: `SELECT event_id, previous_id FROM svc_across_${v}($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6)`,
    values: [
      Array(n).fill(sid),
      Array(n).fill('state.changed'),
      Array(n).fill('{"a":1}'),
      Array(n).fill(1),
      Array(n).fill(s % 50),
      'svc_x',
    ],
  });
};
for (let i = 0; i < 100; i++) await call(46);
for (let round = 0; round < rounds; round++)
  for (const v of [46, 47]) {
    await c.query('SELECT pg_stat_statements_reset()');
    for (let i = 0; i < CALLS; i++) await call(v);
    const { rows } = await c.query(
      `SELECT toplevel, calls, total_exec_time + total_plan_time AS ms FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    const top = rows.find((r) => r.toplevel && Number(r.calls) === CALLS);
    res[v].push((Number(top.ms) / CALLS).toFixed(4));
    nested[v] = rows.filter((r) => !r.toplevel).reduce((sum, r) => sum + Number(r.calls), 0) / CALLS;
  }
console.log(`load: ${execSync('uptime').toString().trim()}`);
console.log(
  `${n} events of one session a call, the server's ms a call each round: migration 46 ${res[46].join('  ')}; migration 47 ${res[47].join('  ')}`,
);
console.log(`nested statements a call: migration 46 ${nested[46]}, migration 47 ${nested[47]}`);
await c.end();
pg.stop?.();
process.exit(0);
