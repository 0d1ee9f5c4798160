/**
 * A run's finish inserting its run events itself on PostgreSQL (issue 18 item 6, p-lastseq,
 * migration 48): the finish's UPDATE holds the run's row lock, `svc_run_last_seq` reads the run's
 * highest seq once after it (a snapshot of its own) and the statement's own INSERT takes the seqs
 * after it; no `svc_append_run_event_list` call (its lock statement, its `RETURN QUERY`). Pins: the
 * finish's nested statements (pg_stat_statements, `track = all`, the finish's text replayed on a
 * run of its own): one seq read, no lock statement, no nested INSERT; a finish waiting on the run's
 * lock for another connection's append takes the seqs after it (and the same statement with the
 * seq read in its own snapshot takes them twice: why the read is a function's).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createPostgresCompatRequestRepository } from '../../src/runs/pg-compat-request-repository';
import type { SqlClient } from '../../src/store/postgres/client';
import { compatRequestRow } from '../helpers/compat-request-row';
import { postgresForFile } from '../helpers/postgres';
import { ledgerNodes, runInput } from './ledger-nodes';

const pg = postgresForFile({ statements: true });

const outcome = {
  status: 'completed' as const,
  finish_reason: 'stop',
  http_status: 200,
  error: null,
  prompt_tokens: 12,
  completion_tokens: 3,
  finished_at: 2_000,
};

/** `sql` recording each statement's text and values in `sent`. */
function recording(sql: SqlClient, sent: { text: string; values: readonly unknown[] }[]): SqlClient {
  return {
    ...sql,
    one: (text, params) => {
      sent.push({ text, values: params ?? [] });
      return sql.one(text, params);
    },
  };
}

describe.skipIf(!pg.available)('a run’s finish inserting its run events itself', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** Two ledger nodes, the session `s-one`, node A's ledger and compat rows over a recording client, a driver client. */
  async function setUp() {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    closers.push(() => nodes.close());
    await nodes.sessions('s-one');
    const sent: { text: string; values: readonly unknown[] }[] = [];
    const sql = recording(nodes.sql, sent);
    const ledger = nodes.open('rnr_a', 'host-a', 3_600_000, sql);
    const compat = createPostgresCompatRequestRepository({ sql });
    return { nodes, sent, ledger, compat };
  }

  /** A run of `s-one` with a `phase` event and its compat request row; its finish with the row's end. */
  async function runToFinish(ctx: Awaited<ReturnType<typeof setUp>>, requestId: string) {
    const run = await ctx.ledger.create(runInput('s-one'));
    await ctx.ledger.append(run.id, 'phase', { phase: 'model' });
    await ctx.compat.insert(compatRequestRow({ request_id: requestId, run_id: run.id, session_id: 's-one' }));
    const finish = () =>
      ctx.ledger.updateAndAppend!(
        run.id,
        { status: 'completed', finished_at: 3_000 },
        'run.finished',
        { status: 'completed' },
        {
          queue: true,
          alongside: {
            write: ctx.compat.finishInRunFinish!(requestId, outcome),
            event: { type: 'openai_compat.response', payload: { request_id: requestId } },
            written: () => {},
          },
        },
      );
    return { run, finish };
  }

  it('STORE-PG-762: a compat finish’s run events: one seq read after the UPDATE, no lock statement, no list call, the INSERT its own; seqs as before', async () => {
    const ctx = await setUp();
    const first = await runToFinish(ctx, 'req_a');
    ctx.sent.length = 0;
    const answer = await first.finish();
    const [finish] = ctx.sent;
    expect(ctx.sent).toHaveLength(1);
    expect(finish?.text).not.toMatch(/svc_append_run_event(_list)?\(/);
    expect(finish?.text.match(/svc_run_last_seq\(/g)).toHaveLength(1);
    expect(finish?.text.match(/INSERT INTO agent_run_events/g)).toHaveLength(1);
    const events = await ctx.ledger.events(first.run.id);
    expect(events.map((e) => [e.seq, e.type])).toEqual([
      [1, 'run.queued'],
      [2, 'phase'],
      [3, 'run.finished'],
      [4, 'openai_compat.response'],
    ]);
    expect(answer.event).toEqual(events[2]);
    expect(events[3]?.id).toBeGreaterThan(events[2]?.id ?? Number.POSITIVE_INFINITY);

    // The same text replayed for a second run, on a connection counting nested statements.
    const second = await runToFinish(ctx, 'req_b');
    const values = (finish?.values ?? []).map((v) =>
      v === first.run.id ? second.run.id : v === 'req_a' ? 'req_b' : v,
    );
    const { default: driver } = await import('pg');
    const url = ctx.nodes.url;
    const client = new driver.Client({ connectionString: url });
    await client.connect();
    closers.push(() => client.end());
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await client.query("SET pg_stat_statements.track = 'all'");
    await client.query('SELECT pg_stat_statements_reset()');
    await client.query(finish?.text ?? '', values);
    const nested = await client.query<{ query: string; calls: string }>(
      `SELECT query, calls FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND NOT toplevel`,
    );
    const calls = (pattern: RegExp) =>
      nested.rows.filter((r) => pattern.test(r.query)).reduce((n, r) => n + Number(r.calls), 0);
    const shown = JSON.stringify(nested.rows.map((r) => [r.calls, r.query.slice(0, 80)]));
    // The seq read once, no lock statement (migration 45's `FOR UPDATE`), no nested INSERT.
    expect(calls(/max\(e\.seq\)/), shown).toBe(1);
    expect(calls(/FOR UPDATE/), shown).toBe(0);
    expect(calls(/INSERT INTO agent_run_events/), shown).toBe(0);
    expect((await ctx.ledger.events(second.run.id)).map((e) => [e.seq, e.type])).toEqual([
      [1, 'run.queued'],
      [2, 'phase'],
      [3, 'run.finished'],
      [4, 'openai_compat.response'],
    ]);
  });

  it('STORE-PG-763: a finish waiting on the run’s lock for another connection’s append takes the seqs after it; the seq read in the statement’s own snapshot would take them twice', async () => {
    const ctx = await setUp();
    const { default: driver } = await import('pg');
    const url = ctx.nodes.url;
    const other = new driver.Client({ connectionString: url });
    await other.connect();
    closers.push(() => other.end());
    const watcher = new driver.Client({ connectionString: url });
    await watcher.connect();
    closers.push(() => watcher.end());
    const waitingOn = async (pattern: string) => {
      for (let i = 0; i < 100; i++) {
        const { rows } = await watcher.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1",
          [pattern],
        );
        if (rows[0]?.n === 1) return true;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return false;
    };

    const a = await runToFinish(ctx, 'req_a');
    await other.query('BEGIN');
    await other.query("SELECT svc_append_run_event($1, 's-one', 'tool.started', '{}', 20)", [a.run.id]);
    ctx.sent.length = 0;
    const finishing = a.finish();
    expect(await waitingOn('%svc_run_last_seq%')).toBe(true);
    await other.query('COMMIT');
    const answer = await finishing;
    const events = await ctx.ledger.events(a.run.id);
    expect(events.map((e) => [e.seq, e.type])).toEqual([
      [1, 'run.queued'],
      [2, 'phase'],
      [3, 'tool.started'],
      [4, 'run.finished'],
      [5, 'openai_compat.response'],
    ]);
    expect(answer.event).toEqual(events[3]);

    // The same statement with the seq read inline (the statement's snapshot, taken before the
    // lock was granted): the other connection's event is missed and its seq taken again.
    const [finish] = ctx.sent;
    const b = await runToFinish(ctx, 'req_b');
    const inline = (finish?.text ?? '').replace(
      'svc_run_last_seq(r.id)',
      '(SELECT coalesce(max(e.seq), 0) FROM agent_run_events e WHERE e.run_id = r.id)',
    );
    expect(inline).not.toBe(finish?.text);
    const values = (finish?.values ?? []).map((v) =>
      v === a.run.id ? b.run.id : v === 'req_a' ? 'req_b' : v,
    );
    const client = new driver.Client({ connectionString: url });
    await client.connect();
    closers.push(() => client.end());
    await other.query('BEGIN');
    await other.query("SELECT svc_append_run_event($1, 's-one', 'tool.started', '{}', 20)", [b.run.id]);
    const refused = client.query(inline, values).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(await waitingOn('%max(e.seq)%')).toBe(true);
    await other.query('COMMIT');
    expect(String(await refused)).toMatch(/agent_run_events_run/);
  });
});
