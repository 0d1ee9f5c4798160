// The server's time of `svc_append_events_across` (issue 18 item 6, p-pgserver): migration 34's
// body (on generic plans, 44) against migration 46's, side by side on a throwaway PostgreSQL
// (./pg-cluster.mjs, with pg_stat_statements) with session_events' real DDL: blocks of 500 calls of
// BENCH_ACROSS_EVENTS (default 3) events of one session (50 sessions in turn), the two alternating 4
// times; prints the server's mean plan + execution ms a call. `node bench/append-across.mjs`; not
// part of `npm run bench`.
import { readFileSync } from 'node:fs';
import { startPostgres } from './pg-cluster.mjs';

/** A migration's DDL (`export const name = \`…\`` in src/store/postgres/migrations/`file`.ts, no interpolation). */
const ddl = (file, name) =>
  readFileSync(new URL(`../src/store/postgres/migrations/${file}.ts`, import.meta.url), 'utf8').match(
    new RegExp(`export const ${name} = \`([^\`]*)\``),
  )[1];
const pg = await startPostgres();
const url = await pg.createDatabase('svc_across');
const { default: driver } = await import('pg');
const c = new driver.Client({ connectionString: url });
await c.connect();
await c.query(ddl('baseline-core', 'coreDdl'));
await c.query(ddl('baseline-operations', 'operationsDdl'));
await c.query(ddl('append-across', 'appendAcrossDdl'));
await c.query(ddl('generic-plans', 'genericPlansDdl'));
// Migration 46's body under another name.
await c.query(
  ddl('append-across-once', 'appendAcrossOnceDdl').replace(
    'FUNCTION svc_append_events_across(',
    'FUNCTION svc_append_events_across_new(',
  ),
);
await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
const CALLS = 500;
const res = { old: [], new: [] };
const n = Number(process.env.BENCH_ACROSS_EVENTS ?? 3);
let s = 0;
for (let round = 0; round < 4; round++)
  for (const v of ['old', 'new']) {
    await c.query('SELECT pg_stat_statements_reset()');
    const fn = v === 'old' ? 'svc_append_events_across' : 'svc_append_events_across_new';
    for (let i = 0; i < CALLS; i++) {
      const sid = `s${++s % 50}`;
      await c.query({
        name: v,
        text: `SELECT event_id, previous_id FROM ${fn}($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6)`,
        values: [
          Array(n).fill(sid),
          Array(n).fill('state.changed'),
          Array(n).fill('{"a":1}'),
          Array(n).fill(1),
          [s % 50],
          'svc_x',
        ],
      });
    }
    const { rows } = await c.query(
      `SELECT total_exec_time + total_plan_time AS ms FROM pg_stat_statements WHERE toplevel AND calls = $1 AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [CALLS],
    );
    res[v].push((Number(rows[0].ms) / CALLS).toFixed(4));
  }
const { execSync } = await import('node:child_process');
console.log(`load: ${execSync('uptime').toString().trim()}`);
console.log(
  `${n} events a call, the server's ms a call each round: migration 34/44 ${res.old.join('  ')}; migration 46 ${res.new.join('  ')}`,
);
await c.end();
pg.stop?.();
process.exit(0);
