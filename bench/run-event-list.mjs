// The server's time of a run's event appends (issue 18 item 6, p-pgserver): migration 39's
// `svc_append_run_event_list` (a `svc_append_run_event` call an event) against migration 45's
// (set-based), and a finish's three events as three lateral calls against one list call, on a
// throwaway PostgreSQL (./pg-cluster.mjs, with pg_stat_statements) with the tables' real DDL
// (agent_runs, agent_run_events: their indexes and foreign key). Blocks of BENCH_LIST_CALLS
// (default 500) calls, the variants alternating BENCH_LIST_ROUNDS (default 4) times, each call a
// new run's three events (the run inserted first, not counted); prints the server's mean plan +
// execution ms a call (pg_stat_statements) for each variant and round. Not part of `npm run bench`.
// `node bench/run-event-list.mjs`
import { readFileSync } from 'node:fs';
import { startPostgres } from './pg-cluster.mjs';

/** A migration's DDL (`export const name = \`…\`` in src/store/postgres/migrations/`file`.ts, no interpolation). */
const ddl = (file, name) => {
  const text = readFileSync(new URL(`../src/store/postgres/migrations/${file}.ts`, import.meta.url), 'utf8');
  const found = text.match(new RegExp(`export const ${name} = \`([^\`]*)\``));
  if (!found) throw new Error(`no ${name} in ${file}.ts`);
  return found[1];
};
const coreDdl = ddl('baseline-core', 'coreDdl');
const appendFunctionsDdl = ddl('append-functions', 'appendFunctionsDdl');
const appendListDdl = ddl('append-list', 'appendListDdl');
const runEventsSetDdl = ddl('run-events-set', 'runEventsSetDdl');

const CALLS = Number(process.env.BENCH_LIST_CALLS ?? 500);
const ROUNDS = Number(process.env.BENCH_LIST_ROUNDS ?? 4);
const pg = await startPostgres();
const url = await pg.createDatabase('svc_list');
const { default: driver } = await import('pg');
const client = new driver.Client({ connectionString: url });
await client.connect();
await client.query(coreDdl);
await client.query(appendFunctionsDdl);
// Migration 39's list under another name, migration 45's under its own.
await client.query(appendListDdl.replace('svc_append_run_event_list(', 'svc_append_run_event_list_39('));
await client.query(runEventsSetDdl);
await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
await client.query("INSERT INTO sessions (id, created_at, updated_at) VALUES ('s1', 1, 1)");

const types = ['step.finished', 'run.finished', 'openai_compat.response'];
const payloads = ['{"step":1}', '{"status":"completed"}', '{"request_id":"req"}'];
const times = [1, 2, 3];
const variants = {
  'list, migration 39': (run) => [
    'SELECT event_id, event_seq FROM svc_append_run_event_list_39($1, $2, $3::text[], $4::text[], $5::bigint[])',
    [run, 's1', types, payloads, times],
  ],
  'list, migration 45': (run) => [
    'SELECT event_id, event_seq FROM svc_append_run_event_list($1, $2, $3::text[], $4::text[], $5::bigint[])',
    [run, 's1', types, payloads, times],
  ],
  'finish: three lateral calls': (run) => [
    `SELECT f.event_id, a.event_id, b.event_id FROM agent_runs r
       CROSS JOIN LATERAL svc_append_run_event(r.id, r.session_id, $2, $3, $4) f
       CROSS JOIN LATERAL (SELECT o.event_id FROM svc_append_run_event(r.id, r.session_id, $5, $6, $7) o WHERE f.event_id IS NOT NULL) a
       LEFT JOIN LATERAL (SELECT x.event_id FROM svc_append_run_event(r.id, r.session_id, $8, $9, $10) x WHERE a.event_id IS NOT NULL) b ON true
      WHERE r.id = $1`,
    [run, types[0], payloads[0], 1, types[1], payloads[1], 2, types[2], payloads[2], 3],
  ],
  'finish: one list call': (run) => [
    `SELECT v.* FROM agent_runs r CROSS JOIN LATERAL (SELECT max(x.event_id) FILTER (WHERE x.ord = 1) AS f,
         max(x.event_id) FILTER (WHERE x.ord = 2) AS a, max(x.event_id) FILTER (WHERE x.ord = 3) AS b
       FROM svc_append_run_event_list(r.id, r.session_id, ARRAY[$2::text, $5::text] || ARRAY[$8::text],
         ARRAY[$3::text, $6::text] || ARRAY[$9::text], ARRAY[$4::bigint, $7::bigint] || ARRAY[$10::bigint]) x) v
      WHERE r.id = $1`,
    [run, types[0], payloads[0], 1, types[1], payloads[1], 2, types[2], payloads[2], 3],
  ],
};
let runs = 0;
const results = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, make] of Object.entries(variants)) {
    const ids = Array.from({ length: CALLS }, () => `run_${++runs}`);
    await client.query(
      `INSERT INTO agent_runs (id, session_id, family_session_id, status, agent, origin, created_at, updated_at)
         SELECT id, 's1', 's1', 'running', 'build', 'cli', 1, 1 FROM unnest($1::text[]) id`,
      [ids],
    );
    await client.query('SELECT pg_stat_statements_reset()');
    for (const id of ids) {
      const [sql, values] = make(id);
      await client.query({ name: name.replace(/\W+/g, '_'), text: sql, values });
    }
    // pg_stat_statements normalizes the text it keeps: find the row by its calls.
    const { rows } = await client.query(
      `SELECT total_exec_time + total_plan_time AS ms, calls FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND toplevel AND calls = $1`,
      [CALLS],
    );
    results[name].push(Number(rows[0]?.ms ?? Number.NaN) / CALLS);
  }
}
const { execSync } = await import('node:child_process');
console.log(`load: ${execSync('uptime').toString().trim()}`);
console.log(
  `${CALLS} calls a block, ${ROUNDS} rounds; the server's ms a call (plan + execution), each round`,
);
for (const [name, list] of Object.entries(results))
  console.log(`${name.padEnd(30)} ${list.map((ms) => ms.toFixed(4)).join('  ')}`);
await client.end();
pg.stop?.();
process.exit(0);
