/**
 * A run's events appended set-based on PostgreSQL (issue 18 item 6, p-pgserver, migration 45):
 * `svc_append_run_event_list` takes the run's row lock and its highest seq once and inserts the
 * whole list in one `INSERT … SELECT FROM unnest` (it called `svc_append_run_event` an event: a
 * lock, a seq read, an INSERT and a nested call each). Pins: the events stored and answered as the
 * appends one after another (seqs after the run's highest, in the arrays' order, ids ascending,
 * each its place), one INSERT a call whatever the list's length (pg_stat_statements, `track =
 * all`), an empty list writes nothing, a missing run fails; and a list waiting on the run's lock
 * for another connection's append takes the seqs after it (its seq read after the lock). A run's
 * finish with another domain's write (a compat request's row end) appends its run events (the
 * run's own, then the other's when its write answered a row) in one list call, not a call each.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createPostgresCompatRequestRepository } from '../../src/runs/pg-compat-request-repository';
import type { RunEvent } from '../../src/runs/types';
import type { SqlClient } from '../../src/store/postgres/client';
import { compatRequestRow } from '../helpers/compat-request-row';
import { migratedInPlace, postgresForFile, recordingClient } from '../helpers/postgres';
import { ledgerNodes, runInput } from './ledger-nodes';

const pg = postgresForFile({ statements: true });

const LIST =
  'SELECT event_id, event_seq, ord FROM svc_append_run_event_list($1, $2, $3::text[], $4::text[], $5::bigint[])';

describe.skipIf(!pg.available)('a run’s events appended set-based', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** A migrated database with the session `s1` and the run `run_a` (two events), and a driver client on it. */
  async function database() {
    const { url, sql, client, close } = await migratedInPlace(pg.cluster(), 2);
    closers.push(close);
    await sql.run("INSERT INTO sessions (id, created_at, updated_at) VALUES ('s1', 1, 1)");
    await sql.run(
      `INSERT INTO agent_runs (id, session_id, family_session_id, status, agent, origin, created_at, updated_at)
         VALUES ('run_a', 's1', 's1', 'running', 'build', 'cli', 1, 1)`,
    );
    for (const type of ['run.queued', 'run.started'])
      await sql.run("SELECT svc_append_run_event('run_a', 's1', $1, '{}', 2)", [type]);
    return { sql, client, url };
  }

  async function events(sql: SqlClient, runId: string) {
    return (
      await sql.query<{ id: string; seq: string; type: string; payload: string; created_at: string }>(
        'SELECT id, seq, type, payload, created_at FROM agent_run_events WHERE run_id = $1 ORDER BY seq',
        [runId],
      )
    ).map((e) => ({
      id: Number(e.id),
      seq: Number(e.seq),
      type: e.type,
      payload: e.payload,
      at: Number(e.created_at),
    }));
  }

  it('STORE-PG-630: one INSERT a list: the events after the run’s highest seq in the arrays’ order, ids ascending, answered with their places; an empty list writes nothing, a missing run fails', async () => {
    const { sql, client } = await database();
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await client.query("SET pg_stat_statements.track = 'all'");
    await client.query('SELECT pg_stat_statements_reset()');

    const { rows } = await client.query(LIST, [
      'run_a',
      's1',
      ['model.resolved', 'prompt.assembled', 'phase'],
      ['{"m":1}', '{"p":2}', '{"phase":"model"}'],
      [10, 11, 12],
    ]);
    const stored = await events(sql, 'run_a');
    expect(stored.map((e) => [e.seq, e.type, e.payload, e.at])).toEqual([
      [1, 'run.queued', '{}', 2],
      [2, 'run.started', '{}', 2],
      [3, 'model.resolved', '{"m":1}', 10],
      [4, 'prompt.assembled', '{"p":2}', 11],
      [5, 'phase', '{"phase":"model"}', 12],
    ]);
    const listed = stored.slice(2);
    expect(listed.map((e) => e.id)).toEqual([...listed.map((e) => e.id)].sort((a, b) => a - b));
    expect(rows.map((r) => [Number(r.event_id), Number(r.event_seq), r.ord])).toEqual(
      listed.map((e, i) => [e.id, e.seq, i + 1]),
    );

    // One INSERT for the three events, no call an event (on the base: three of each).
    const nested = await client.query<{ query: string; calls: string }>(
      `SELECT query, calls FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND NOT toplevel`,
    );
    const calls = (pattern: RegExp) =>
      nested.rows.filter((r) => pattern.test(r.query)).reduce((n, r) => n + Number(r.calls), 0);
    expect(calls(/^(WITH ins AS \(\s*)?INSERT INTO agent_run_events/), JSON.stringify(nested.rows)).toBe(1);
    expect(calls(/svc_append_run_event\(/)).toBe(0);

    // Nothing to append: no row, nothing written.
    expect((await client.query(LIST, ['run_a', 's1', [], [], []])).rows).toEqual([]);
    expect(await events(sql, 'run_a')).toHaveLength(5);
    // No such run: refused (its foreign key), nothing written.
    await expect(client.query(LIST, ['run_missing', 's1', ['phase'], ['{}'], [13]])).rejects.toThrow(
      /agent_run_events_run_id_fkey/,
    );
    expect(await sql.one('SELECT count(*)::int AS n FROM agent_run_events')).toEqual({ n: 5 });
  });

  it('STORE-PG-631: a list waiting on the run’s lock for another connection’s append takes the seqs after it, in order', async () => {
    const { sql, client, url } = await database();
    const { default: driver } = await import('pg');
    const other = new driver.Client({ connectionString: url });
    await other.connect();
    closers.push(() => other.end());
    await other.query('BEGIN');
    await other.query("SELECT svc_append_run_event('run_a', 's1', 'tool.started', '{}', 20)");
    let settled = false;
    const waiting = client
      .query(LIST, ['run_a', 's1', ['tool.finished', 'phase'], ['{}', '{}'], [21, 22]])
      .finally(() => {
        settled = true;
      });
    // The list waits for the other transaction's row lock.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const waits = await sql.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%svc_append_run_event_list%'",
    );
    expect(waits[0]?.n).toBe(1);
    expect(settled).toBe(false);
    await other.query('COMMIT');
    const { rows } = await waiting;
    expect(rows.map((r) => Number(r.event_seq))).toEqual([4, 5]);
    expect((await events(sql, 'run_a')).map((e) => [e.seq, e.type])).toEqual([
      [1, 'run.queued'],
      [2, 'run.started'],
      [3, 'tool.started'],
      [4, 'tool.finished'],
      [5, 'phase'],
    ]);
  });

  it('STORE-PG-632: a finish with a compat row’s end appends its events in one list call, the row’s event after the run’s own only when the row was there; stored, answered and announced as before', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    closers.push(() => nodes.close());
    await nodes.sessions('s-one');
    const sent: string[] = [];
    const sql = recordingClient(nodes.sql, sent);
    const ledger = nodes.open('rnr_a', 'host-a', 3_600_000, sql);
    const compat = createPostgresCompatRequestRepository({ sql });
    const outcome = {
      status: 'completed' as const,
      finish_reason: 'stop',
      http_status: 200,
      error: null,
      prompt_tokens: 12,
      completion_tokens: 3,
      finished_at: 2_000,
    };
    const seen: RunEvent[] = [];
    ledger.onAppend((event) => seen.push(event));
    const finish = async (requestId: string) => {
      const run = await ledger.create(runInput('s-one'));
      await ledger.append(run.id, 'phase', { phase: 'model' });
      if (requestId === 'req_a')
        await compat.insert(compatRequestRow({ request_id: requestId, run_id: run.id, session_id: 's-one' }));
      const written: RunEvent[] = [];
      seen.length = 0;
      sent.length = 0;
      const answer = await ledger.updateAndAppend!(
        run.id,
        { status: 'completed', finished_at: 3_000 },
        'run.finished',
        { status: 'completed' },
        {
          queue: true,
          alongside: {
            write: compat.finishInRunFinish!(requestId, outcome),
            event: { type: 'openai_compat.response', payload: { request_id: requestId } },
            written: (event) => written.push(event),
          },
        },
      );
      return {
        run,
        answer,
        written,
        statements: [...sent],
        events: await ledger.events(run.id),
        announced: [...seen],
      };
    };

    const there = await finish('req_a');
    expect(there.statements).toHaveLength(1);
    const text = there.statements[0] ?? '';
    // One list for the run's events, no call an event (on the base: one each): since p-lastseq the
    // statement's own INSERT after one read of the run's highest seq, no list call.
    expect(text.match(/INSERT INTO agent_run_events/g)).toHaveLength(1);
    expect(text.match(/svc_run_last_seq\(/g)).toHaveLength(1);
    expect(text).not.toMatch(/svc_append_run_event(_list)?\(/);
    expect(there.events.map((e) => [e.seq, e.type])).toEqual([
      [1, 'run.queued'],
      [2, 'phase'],
      [3, 'run.finished'],
      [4, 'openai_compat.response'],
    ]);
    expect(there.answer.event).toEqual(there.events[2]);
    expect(there.written).toEqual([there.events[3]]);
    expect(there.announced).toEqual(there.events.slice(2));
    expect(there.answer.run.status).toBe('completed');
    expect((await compat.get('req_a'))?.status).toBe('completed');

    // No compat row: the run's own event alone.
    const missing = await finish('req_missing');
    expect(missing.events.map((e) => [e.seq, e.type])).toEqual([
      [1, 'run.queued'],
      [2, 'phase'],
      [3, 'run.finished'],
    ]);
    expect(missing.answer.event).toEqual(missing.events[2]);
    expect(missing.written).toEqual([]);
    expect(missing.announced).toEqual(missing.events.slice(2));
  });
});
