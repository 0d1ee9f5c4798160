/**
 * What a run's event seqs must keep on PostgreSQL, whatever takes them (issue 18 item 6, p-lastseq:
 * a `last_seq` kept on the run's row was tried and not landed, docs/performance-log.md). Pins, passing on
 * migrations 30/45's bodies (the run's row lock, then `max(seq)` after it):
 * - appends to one run from two connections at once, lists and single events, in transactions
 *   that commit or roll back: the committed seqs are 1..n, none twice, none missing, each call's
 *   consecutive;
 * - a statement that appends the run's events in a `WITH` before its own UPDATE of the run's row
 *   (the step end's statement, `updateRunWithEventAfter`: its step's events in `svc_run_events`,
 *   then the run's `steps`/`usage`): an append may lock the run's row there but not write it (an
 *   UPDATE by the function, a later command, makes the statement's UPDATE fail with "tuple to be
 *   updated was already modified by an operation triggered by the current command").
 */
import { afterEach, describe, expect, it } from 'vitest';
import { migratedInPlace, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

const LIST =
  'SELECT event_id, event_seq, ord FROM svc_append_run_event_list($1, $2, $3::text[], $4::text[], $5::bigint[])';
const ONE = 'SELECT event_id, event_seq FROM svc_append_run_event($1, $2, $3, $4, $5)';

describe.skipIf(!pg.available)('run event seqs: what any way of taking them keeps', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** A migrated database with the session `s1` and the run `run_a` (one event), and two more driver clients. */
  async function database() {
    const { url, sql, close } = await migratedInPlace(pg.cluster(), 2);
    closers.push(close);
    await sql.run("INSERT INTO sessions (id, created_at, updated_at) VALUES ('s1', 1, 1)");
    await sql.run(
      `INSERT INTO agent_runs (id, session_id, family_session_id, status, agent, origin, created_at, updated_at)
         VALUES ('run_a', 's1', 's1', 'running', 'build', 'cli', 1, 1)`,
    );
    await sql.run("SELECT svc_append_run_event('run_a', 's1', 'run.queued', '{}', 1)");
    const { default: driver } = await import('pg');
    const clients = [];
    for (let i = 0; i < 2; i++) {
      const client = new driver.Client({ connectionString: url });
      await client.connect();
      closers.push(() => client.end());
      clients.push(client);
    }
    return { sql, clients };
  }

  it('STORE-PG-760: two connections appending to one run at once, lists and single events, some rolled back: the committed seqs are 1..n, none twice, each call’s consecutive', async () => {
    const { sql, clients } = await database();
    /** Answered seqs of the calls that committed, per connection. */
    const committed: number[][] = [];
    let rolledBack = 0;
    const work = async (client: (typeof clients)[number], who: number) => {
      for (let round = 0; round < 30; round++) {
        await client.query('BEGIN');
        const calls: number[][] = [];
        const size = 1 + ((round + who) % 4);
        const list = await client.query<{ event_seq: string }>(LIST, [
          'run_a',
          's1',
          Array.from({ length: size }, (_, i) => `c${who}.r${round}.${i}`),
          Array.from({ length: size }, () => '{}'),
          Array.from({ length: size }, () => round),
        ]);
        calls.push(list.rows.map((r) => Number(r.event_seq)));
        const one = await client.query<{ event_seq: string }>(ONE, [
          'run_a',
          's1',
          `c${who}.r${round}.one`,
          '{}',
          round,
        ]);
        calls.push(one.rows.map((r) => Number(r.event_seq)));
        if (round % 7 === 3) {
          await client.query('ROLLBACK');
          rolledBack++;
        } else {
          await client.query('COMMIT');
          committed.push(...calls);
        }
      }
    };
    await Promise.all(clients.map((client, who) => work(client, who)));
    expect(rolledBack).toBeGreaterThan(0);
    for (const seqs of committed) expect(seqs).toEqual(seqs.map((_, i) => seqs[0] + i));
    const stored = (
      await sql.query<{ seq: string; type: string }>(
        "SELECT seq, type FROM agent_run_events WHERE run_id = 'run_a' ORDER BY seq",
      )
    ).map((e) => Number(e.seq));
    const answered = committed.flat();
    expect(stored).toEqual(Array.from({ length: 1 + answered.length }, (_, i) => i + 1));
    expect([...answered].sort((a, b) => a - b)).toEqual(stored.slice(1));
  });

  it('STORE-PG-761: a statement appending the run’s events in a WITH before its own UPDATE of the run’s row writes both', async () => {
    const { sql } = await database();
    const row = await sql.one<{ seqs: number[]; steps: number; updated: number }>(
      `WITH svc_run_events AS (SELECT a.event_id, a.event_seq, a.ord
              FROM agent_runs r, LATERAL svc_append_run_event_list(r.id, r.session_id, $2::text[], $3::text[], $4::bigint[]) a
             WHERE r.id = $1),
            r AS (UPDATE agent_runs SET steps = steps + 1, updated_at = 5
                   WHERE id = $1 AND (SELECT count(*) FROM svc_run_events) >= 0 RETURNING steps, updated_at)
       SELECT (SELECT array_agg(event_seq::int ORDER BY ord) FROM svc_run_events) AS seqs, r.steps, r.updated_at::int AS updated
         FROM r`,
      ['run_a', ['phase', 'step.finished'], ['{}', '{}'], [4, 5]],
    );
    expect(row).toEqual({ seqs: [2, 3], steps: 1, updated: 5 });
    // Then a single append takes the next seq.
    expect(
      await sql.one(`SELECT event_seq::int AS seq FROM svc_append_run_event('run_a', 's1', 'x', '{}', 6)`),
    ).toEqual({
      seq: 4,
    });
  });
});
