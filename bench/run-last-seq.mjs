// The server's time of a run finish's event appends (issue 18 item 6, p-lastseq), on a throwaway
// PostgreSQL (./pg-cluster.mjs, with pg_stat_statements) with the tables' real DDL, two databases:
// - "47": migrations 30/33/45 and 48 as they are: the finish's list through
//   `svc_append_run_event_list` (a lock statement, `max(seq)`, the INSERT under `RETURN QUERY`), or
//   (what the finish sends since p-lastseq) its own INSERT after one `svc_run_last_seq` read;
// - "last_seq": a candidate not landed (`CANDIDATE` below): the run's highest seq kept on its row,
//   `agent_runs.last_seq`, every append function moving it on with an UPDATE; the finish's list
//   call, or its seqs taken from its own UPDATE (no read at all).
// Blocks of BENCH_SEQ_CALLS (default 500) calls, alternating BENCH_SEQ_ROUNDS (default 4) times,
// each call a new run with BENCH_SEQ_BEFORE (default 4) events (inserted first, not counted). Shapes:
// a finish (the run's UPDATE and six events in one statement, as a compat request's finish) and one
// event alone (a tool's). Prints the server's mean plan + execution ms a call (pg_stat_statements,
// top level) each round, then the nested statements a call and the shared buffers a call (`track =
// all`, one more block each). BENCH_SEQ_FILLFACTOR: agent_runs' fillfactor on both. Not part of
// `npm run bench`. `node bench/run-last-seq.mjs`
import { execSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { startPostgres } from './pg-cluster.mjs';

/** A migration's DDL (`export const name = \`…\`` in src/store/postgres/migrations/`file`.ts, no interpolation). */
const ddl = (file, name) => {
  const text = readFileSync(new URL(`../src/store/postgres/migrations/${file}.ts`, import.meta.url), 'utf8');
  const found = text.match(new RegExp(`export const ${name} = \`([^\`]*)\``));
  if (!found) throw new Error(`no ${name} in ${file}.ts`);
  return found[1];
};
const base = [
  ddl('baseline-core', 'coreDdl'),
  ddl('append-functions', 'appendFunctionsDdl'),
  ddl('claim-started', 'claimStartedDdl'),
  ddl('run-events-set', 'runEventsSetDdl'),
];
/** The candidate not landed (p-lastseq): it makes an append's UPDATE of the run's row fail a statement that updates that row after it (STORE-PG-761). */
const CANDIDATE = `
ALTER TABLE agent_runs ADD COLUMN last_seq BIGINT;
UPDATE agent_runs r SET last_seq = coalesce((SELECT max(e.seq) FROM agent_run_events e WHERE e.run_id = r.id), 0);
CREATE OR REPLACE FUNCTION svc_run_last_seq(p_run_id TEXT, p_count INTEGER) RETURNS BIGINT
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_last BIGINT;
BEGIN
  PERFORM 1 FROM agent_runs r WHERE r.id = p_run_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN p_count;
  END IF;
  SELECT coalesce(max(e.seq), 0) + p_count INTO v_last FROM agent_run_events e WHERE e.run_id = p_run_id;
  UPDATE agent_runs r SET last_seq = v_last WHERE r.id = p_run_id;
  RETURN v_last;
END
$fn$;
CREATE OR REPLACE FUNCTION svc_append_run_event(
  p_run_id TEXT, p_session_id TEXT, p_type TEXT, p_payload TEXT, p_created_at BIGINT,
  OUT event_id BIGINT, OUT event_seq BIGINT
) LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  UPDATE agent_runs r SET last_seq = r.last_seq + 1 WHERE r.id = p_run_id AND r.last_seq IS NOT NULL
    RETURNING r.last_seq INTO event_seq;
  IF NOT FOUND THEN
    event_seq := svc_run_last_seq(p_run_id, 1);
  END IF;
  INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
    VALUES (p_run_id, p_session_id, coalesce(event_seq, 1), p_type, p_payload, p_created_at)
    RETURNING id, seq INTO event_id, event_seq;
END
$fn$;
CREATE OR REPLACE FUNCTION svc_append_run_event_list(
  p_run_id TEXT, p_session_id TEXT, p_types TEXT[], p_payloads TEXT[], p_created_at BIGINT[]
) RETURNS TABLE (event_id BIGINT, event_seq BIGINT, ord INTEGER) LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_count INTEGER := coalesce(array_length(p_types, 1), 0);
  v_base BIGINT;
BEGIN
  IF v_count = 0 THEN
    RETURN;
  END IF;
  UPDATE agent_runs r SET last_seq = r.last_seq + v_count WHERE r.id = p_run_id AND r.last_seq IS NOT NULL
    RETURNING r.last_seq - v_count INTO v_base;
  IF NOT FOUND THEN
    v_base := svc_run_last_seq(p_run_id, v_count) - v_count;
  END IF;
  RETURN QUERY
    WITH ins AS (
      INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
        SELECT p_run_id, p_session_id, v_base + b.ord, b.type, b.payload, b.created_at
          FROM unnest(p_types, p_payloads, p_created_at) WITH ORDINALITY AS b(type, payload, created_at, ord)
          ORDER BY b.ord
        RETURNING id, seq
    ) SELECT ins.id, ins.seq, (ins.seq - v_base)::integer FROM ins ORDER BY ins.seq;
END
$fn$;
ALTER FUNCTION svc_append_run_event_list(TEXT, TEXT, TEXT[], TEXT[], BIGINT[])
  SET plan_cache_mode = force_generic_plan;
CREATE OR REPLACE FUNCTION svc_claim_run_started(
  p_run_id TEXT, p_session_id TEXT, p_now BIGINT, p_pid BIGINT, p_host TEXT, p_runner TEXT
) RETURNS TABLE (run agent_runs, svc_event_id BIGINT, svc_event_seq BIGINT)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_run agent_runs;
  v_id BIGINT;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('svc.runs.claim:' || p_session_id));
  IF EXISTS (SELECT 1 FROM agent_runs r
               WHERE r.session_id = p_session_id AND r.status = 'running' AND r.id <> p_run_id) THEN
    RETURN;
  END IF;
  UPDATE agent_runs r SET status = 'running', started_at = p_now, updated_at = p_now,
                          pid = p_pid, host = p_host, runner = p_runner,
                          last_seq = coalesce(r.last_seq, (SELECT max(e.seq) FROM agent_run_events e WHERE e.run_id = p_run_id), 0) + 1
    WHERE r.id = p_run_id AND r.session_id = p_session_id AND r.status = 'queued'
    RETURNING * INTO v_run;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
    VALUES (p_run_id, p_session_id, v_run.last_seq, 'run.started',
            '{"agent":' || to_json(v_run.agent)::text || ',"origin":' || to_json(v_run.origin)::text
              || ',"pid":' || coalesce(v_run.pid::text, 'null') || ',"options":' || v_run.options || '}',
            p_now)
    RETURNING id INTO v_id;
  RETURN QUERY SELECT v_run, v_id, v_run.last_seq;
END
$fn$;
`;
const sides = { 47: [...base, ddl('run-last-seq', 'runLastSeqDdl')], last_seq: [...base, CANDIDATE] };

const CALLS = Number(process.env.BENCH_SEQ_CALLS ?? 500);
const ROUNDS = Number(process.env.BENCH_SEQ_ROUNDS ?? 4);
const BEFORE = Number(process.env.BENCH_SEQ_BEFORE ?? 4);
/** BENCH_SEQ_FILLFACTOR: agent_runs' fillfactor on both sides (room on a run's page for its row's next versions). */
const FILLFACTOR = Number(process.env.BENCH_SEQ_FILLFACTOR ?? 0);
const pg = await startPostgres();
const { default: driver } = await import('pg');
const clients = {};
for (const [side, parts] of Object.entries(sides)) {
  const client = new driver.Client({ connectionString: await pg.createDatabase('svc_seq') });
  await client.connect();
  for (const part of parts) await client.query(part);
  await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  if (FILLFACTOR) await client.query(`ALTER TABLE agent_runs SET (fillfactor = ${FILLFACTOR})`);
  await client.query("INSERT INTO sessions (id, created_at, updated_at) VALUES ('s1', 1, 1)");
  clients[side] = client;
}

const types = [
  'phase',
  'prompt.assembled',
  'phase',
  'step.finished',
  'run.finished',
  'openai_compat.response',
];
const payloads = types.map((type, i) => JSON.stringify({ type, i, text: 'x'.repeat(40) }));
const times = types.map((_, i) => i + 10);
const shapes = {
  'finish, list call': (run) => [
    `WITH r AS (UPDATE agent_runs SET status = 'completed', updated_at = $2, finished_at = $2 WHERE id = $1 RETURNING *)
     SELECT r.*, v.* FROM r CROSS JOIN LATERAL (SELECT max(x.event_id) FILTER (WHERE x.ord = 5) AS own_id,
         max(x.event_seq) FILTER (WHERE x.ord = 5) AS own_seq
       FROM svc_append_run_event_list(r.id, r.session_id, $3::text[], $4::text[], $5::bigint[]) x) v`,
    [run, 20, types, payloads, times],
  ],
  // The finish's own UPDATE moving `last_seq` on and its events inserted from it in the same
  // statement: no lock, no seq read, no second row version (on the `last_seq` side only).
  'finish, seqs from its UPDATE': (run) => [
    `WITH r AS (UPDATE agent_runs SET status = 'completed', updated_at = $2, finished_at = $2,
                  last_seq = last_seq + cardinality($3::text[]) WHERE id = $1 RETURNING *),
          x AS (INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
                  SELECT r.id, r.session_id, r.last_seq - cardinality($3::text[]) + b.ord, b.type, b.payload, b.created_at
                    FROM r, unnest($3::text[], $4::text[], $5::bigint[]) WITH ORDINALITY AS b(type, payload, created_at, ord)
                    ORDER BY b.ord
                  RETURNING id AS event_id, seq AS event_seq)
     SELECT r.*, v.* FROM r CROSS JOIN LATERAL (SELECT max(x.event_id) FILTER (WHERE x.event_seq = r.last_seq - 1) AS own_id,
         max(x.event_seq) FILTER (WHERE x.event_seq = r.last_seq - 1) AS own_seq FROM x) v`,
    [run, 20, types, payloads, times],
  ],
  // The finish's UPDATE locking the row, then the run's highest seq read once by a volatile
  // function (a snapshot of its own, taken after the lock) and the events inserted in the same
  // statement: no lock statement, no list function (side 47 only).
  'finish, own INSERT after svc_run_last_seq': (run) => [
    `WITH r AS (UPDATE agent_runs SET status = 'completed', updated_at = $2, finished_at = $2 WHERE id = $1 RETURNING *),
          s AS MATERIALIZED (SELECT svc_run_last_seq(r.id) AS base FROM r),
          x AS (INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
                  SELECT r.id, r.session_id, s.base + b.ord, b.type, b.payload, b.created_at
                    FROM r, s, unnest($3::text[], $4::text[], $5::bigint[]) WITH ORDINALITY AS b(type, payload, created_at, ord)
                    ORDER BY b.ord
                  RETURNING id AS event_id, seq AS event_seq)
     SELECT r.*, v.* FROM r CROSS JOIN LATERAL (SELECT max(x.event_id) FILTER (WHERE x.event_seq = s.base + 5) AS own_id,
         max(x.event_seq) FILTER (WHERE x.event_seq = s.base + 5) AS own_seq FROM x, s) v`,
    [run, 20, types, payloads, times],
  ],
  'one event': (run) => [
    'SELECT event_id, event_seq FROM svc_append_run_event($1, $2, $3, $4, $5)',
    [run, 's1', 'tool.started', payloads[0], 20],
  ],
};

/** Each finish shape on the side it is written for (the list call and one event on both). */
const runsOn = (shape, side) =>
  shape.includes('svc_run_last_seq')
    ? side === '47'
    : !shape.includes('from its UPDATE') || side === 'last_seq';

let runs = 0;
/** `CALLS` new runs with `BEFORE` events each, as a start writes them (`last_seq` set where there is one). */
async function newRuns(client, side) {
  const ids = Array.from({ length: CALLS }, () => `run_${++runs}`);
  const kept = side === 'last_seq';
  await client.query(
    `INSERT INTO agent_runs (id, session_id, family_session_id, status, agent, origin, created_at, updated_at${kept ? ', last_seq' : ''})
       SELECT id, 's1', 's1', 'running', 'build', 'cli', 1, 1${kept ? `, ${BEFORE}` : ''} FROM unnest($1::text[]) id`,
    [ids],
  );
  await client.query(
    `INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
       SELECT id, 's1', s, 'run.created', '{}', 1 FROM unnest($1::text[]) id, generate_series(1, ${BEFORE}) s`,
    [ids],
  );
  return ids;
}

/** One block: `CALLS` calls of `shape` on `side`; the server's ms a call, nested statements and buffers a call. */
async function block(side, shape, nested) {
  const client = clients[side];
  const ids = await newRuns(client, side);
  await client.query(`SET pg_stat_statements.track = '${nested ? 'all' : 'top'}'`);
  await client.query('SELECT pg_stat_statements_reset()');
  for (const id of ids) {
    const [text, values] = shapes[shape](id);
    await client.query({ name: shape.replace(/\W+/g, '_'), text, values });
  }
  const { rows } = await client.query(
    `SELECT toplevel, sum(calls) AS calls, sum(total_exec_time + total_plan_time) AS ms, sum(shared_blks_hit + shared_blks_read) AS blocks
       FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE 'SET %'
      GROUP BY toplevel`,
  );
  const top = rows.find((r) => r.toplevel);
  const inner = rows.find((r) => !r.toplevel);
  return {
    ms: Number(top?.ms ?? Number.NaN) / CALLS,
    nested: Number(inner?.calls ?? 0) / CALLS,
    blocks: Number(top?.blocks ?? 0) / CALLS,
  };
}

const results = {};
for (let round = 0; round < ROUNDS; round++)
  for (const shape of Object.keys(shapes))
    for (const side of Object.keys(sides)) {
      if (!runsOn(shape, side)) continue;
      const key = `${shape}: ${side}`;
      results[key] ??= [];
      results[key].push((await block(side, shape, false)).ms);
    }
console.log(`load: ${execSync('uptime').toString().trim()}`);
console.log(
  `${CALLS} calls a block, ${ROUNDS} rounds, ${BEFORE} events a run before; the server's ms a call (plan + execution)`,
);
for (const [name, list] of Object.entries(results))
  console.log(`${name.padEnd(30)} ${list.map((ms) => ms.toFixed(4)).join('  ')}`);
console.log(
  '\nnested statements a call (track = all), shared buffers a call (the top-level statement, its nested included)',
);
for (const shape of Object.keys(shapes))
  for (const side of Object.keys(sides)) {
    if (!runsOn(shape, side)) continue;
    const { nested, blocks } = await block(side, shape, true);
    console.log(
      `${`${shape}: ${side}`.padEnd(30)} ${nested.toFixed(2)} nested, ${blocks.toFixed(1)} buffers`,
    );
  }
for (const client of Object.values(clients)) await client.end();
pg.stop?.();
process.exit(0);
