/**
 * A new session's first run inserted already claimed on PostgreSQL (issue 18 item 6, p-pgclaimed,
 * `RunLedger.createClaimed`): the session's held INSERT, the run `running` for this process, its
 * run.queued, run.started and prompt phase, and the sender's insert with its event, in one
 * statement; the ledger's in-memory state as create then claim leave it; a failing statement
 * leaves nothing and tells nothing.
 */
import { describe, expect, it } from 'vitest';
import { createPostgresCompatRequestRepository } from '../../src/runs/pg-compat-request-repository';
import { createPostgresRunLedger } from '../../src/runs/pg-run-ledger';
import type { ClaimAlongside, RunEvent } from '../../src/runs/types';
import { createPostgresSessionStore } from '../../src/sessions/pg-session-store';
import { createIds, systemClock } from '../../src/util/ids';
import { compatRequestRow } from '../helpers/compat-request-row';
import { migratedDatabase, postgresForFile, recordingClient } from '../helpers/postgres';

const pg = postgresForFile();

const sessionInsert = (id: string) => ({
  text: 'INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1) RETURNING id',
  values: [id],
});
const input = (sessionId: string) => ({
  session_id: sessionId,
  family_session_id: sessionId,
  agent: 'build',
  origin: 'http',
  prompt: 'hi',
  options: { max_steps: 3 },
});
const next = { type: 'phase', payload: { phase: 'prompt' } };

describe.skipIf(!pg.available)('a new session’s first run inserted claimed on PostgreSQL', () => {
  it('STORE-PG-290: session, running run, its three events and the alongside row and event in one statement; announced in seq order; the next append seq 5', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const sent: string[] = [];
    const ledger = createPostgresRunLedger({
      clock: systemClock,
      ids: createIds(),
      sql: recordingClient(sql, sent),
      runner: 'rnr_t',
    });
    const requests = createPostgresCompatRequestRepository({ sql });
    const announced: RunEvent[] = [];
    const off = ledger.onAppend((event) => announced.push(event));
    try {
      const told: RunEvent[] = [];
      const alongside = (runId: string): ClaimAlongside => ({
        runId,
        write: requests.insertAfterClaim!(
          compatRequestRow(
            { request_id: 'req-1', run_id: runId, session_id: 'ses_n' },
            { requested_model: 'fake/m1', model_source: 'request', ignored_fields: [], created_at: 1 },
          ),
        ),
        event: { type: 'openai_compat.request', payload: { request_id: 'req-1' } },
        written: (event) => told.push(event),
      });
      await ledger.queued('ses_none'); // the first-use recovery, before the recording counts
      sent.length = 0;
      const claimed = await ledger.createClaimed!(input('ses_n'), sessionInsert('ses_n'), {
        next,
        alongside,
      });
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(
        /INSERT INTO sessions .*INSERT INTO agent_runs .*INSERT INTO openai_compat_requests /s,
      );
      expect(sent[0]).not.toMatch(/svc_claim_run|pg_advisory/);
      const { run } = claimed;
      expect(run).toMatchObject({ session_id: 'ses_n', status: 'running', pid: ledger.owner.pid });
      expect(run.started_at).toBeTypeOf('number');
      expect(await ledger.get(run.id)).toMatchObject({ status: 'running', runner: ledger.owner.runner });

      const events = await ledger.events(run.id);
      expect(events.map((e) => [e.seq, e.type])).toEqual([
        [1, 'run.queued'],
        [2, 'run.started'],
        [3, 'phase'],
        [4, 'openai_compat.request'],
      ]);
      // run.started's payload as the claim (migration 33) writes it.
      expect(events[1]!.payload).toEqual({
        agent: 'build',
        origin: 'http',
        pid: ledger.owner.pid,
        options: { max_steps: 3 },
      });
      expect(claimed.started).toMatchObject({ seq: 2, type: 'run.started', payload: events[1]!.payload });
      expect(claimed.next).toMatchObject({ seq: 3, type: 'phase', payload: { phase: 'prompt' } });
      expect(claimed.alongside).toMatchObject({ seq: 4, type: 'openai_compat.request' });
      expect(told.map((e) => [e.seq, e.type])).toEqual([[4, 'openai_compat.request']]);
      expect(await requests.get('req-1')).toMatchObject({ run_id: run.id, session_id: 'ses_n' });
      expect(announced.filter((e) => e.run_id === run.id).map((e) => [e.seq, e.type])).toEqual([
        [1, 'run.queued'],
        [2, 'run.started'],
        [3, 'phase'],
        [4, 'openai_compat.request'],
      ]);
      // The ledger knows the run's session: an append goes on at seq 5.
      const appended = await ledger.append(run.id, 'note', { n: 1 });
      expect(appended.seq).toBe(5);
    } finally {
      off();
      await ledger.close?.();
      await sql.close();
    }
  });

  it('STORE-PG-291: a request id already there writes no row and no event, the run still claimed; a failing statement leaves no session, run, event or row and tells nothing', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const ledger = createPostgresRunLedger({ clock: systemClock, ids: createIds(), sql, runner: 'rnr_t' });
    const requests = createPostgresCompatRequestRepository({ sql });
    try {
      const told: RunEvent[] = [];
      const along =
        (requestId: string, sessionId: string, runOf?: string) =>
        (runId: string): ClaimAlongside => ({
          runId,
          write: requests.insertAfterClaim!(
            compatRequestRow(
              { request_id: requestId, run_id: runOf ?? runId, session_id: sessionId },
              { requested_model: 'fake/m1', model_source: 'request', ignored_fields: [], created_at: 1 },
            ),
          ),
          event: { type: 'openai_compat.request', payload: { request_id: requestId } },
          written: (event) => told.push(event),
        });
      const first = await ledger.createClaimed!(input('ses_a'), sessionInsert('ses_a'), {
        next,
        alongside: along('req-a', 'ses_a'),
      });
      // req-a again: the run claimed, no second row, no event, nothing told.
      const again = await ledger.createClaimed!(input('ses_b'), sessionInsert('ses_b'), {
        next,
        alongside: along('req-a', 'ses_b'),
      });
      expect(again.run.status).toBe('running');
      expect(again.alongside).toBeUndefined();
      expect((await ledger.events(again.run.id)).map((e) => e.type)).toEqual([
        'run.queued',
        'run.started',
        'phase',
      ]);
      expect((await requests.get('req-a'))?.run_id).toBe(first.run.id);
      expect(told).toHaveLength(1);

      // The alongside row names a run that does not exist (its foreign key): nothing is written.
      await expect(
        ledger.createClaimed!(input('ses_c'), sessionInsert('ses_c'), {
          next,
          alongside: along('req-c', 'ses_c', 'run_missing'),
        }),
      ).rejects.toThrow(/foreign key|openai_compat_requests/);
      // The session is there already (its primary key): nothing is written either.
      await expect(ledger.createClaimed!(input('ses_a'), sessionInsert('ses_a'), { next })).rejects.toThrow(
        /duplicate key|sessions_pkey/,
      );
      expect(await sql.query("SELECT id FROM sessions WHERE id = 'ses_c'")).toEqual([]);
      expect(await requests.get('req-c')).toBeUndefined();
      const runs = await sql.query<{ session_id: string }>(
        'SELECT session_id FROM agent_runs ORDER BY session_id',
      );
      expect(runs.map((r) => r.session_id)).toEqual(['ses_a', 'ses_b']);
      const events = await sql.query<{ n: string }>('SELECT count(*) AS n FROM agent_run_events');
      expect(Number(events[0]!.n)).toBe(7);
      expect(told).toHaveLength(1);
    } finally {
      await ledger.close?.();
      await sql.close();
    }
  });
  it('STORE-PG-296: the prompt message and its search row as trailing inserts: in the run’s one statement, the row as appendMessage writes it, told once written; a failing statement writes neither and tells nothing', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const sent: string[] = [];
    const ids = createIds();
    const ledger = createPostgresRunLedger({
      clock: systemClock,
      ids,
      sql: recordingClient(sql, sent),
      runner: 'rnr_t',
    });
    const sessions = createPostgresSessionStore({ sql, clock: systemClock, ids, workspace: '/w' });
    try {
      const promptOf = (sessionId: string, runId: string) =>
        sessions.promptInsert!({
          session_id: sessionId,
          role: 'user',
          parts: [{ type: 'text', text: 'walrus tusks' }],
          run_id: runId,
        });
      let held: ReturnType<typeof promptOf> | undefined;
      await ledger.queued('ses_none'); // the first-use recovery, before the recording counts
      sent.length = 0;
      const claimed = await ledger.createClaimed!(input('ses_p'), sessionInsert('ses_p'), {
        next,
        trailing: (runId) => {
          held = promptOf('ses_p', runId);
          return held.inserts;
        },
      });
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(
        /INSERT INTO agent_runs .*INSERT INTO messages .*INSERT INTO message_search_docs /s,
      );
      const message = held!.message;
      expect(message).toMatchObject({ session_id: 'ses_p', role: 'user', run_id: claimed.run.id });
      // The row as stored is the message answered, as an append's read answers it.
      expect(await sessions.getMessage(message.id)).toEqual(message);
      expect(await sessions.messages('ses_p')).toEqual([message]);
      const docs = await sql.query<{ body: string; session_id: string }>(
        'SELECT body, session_id FROM message_search_docs WHERE message_id = $1',
        [message.id],
      );
      expect(docs).toEqual([{ body: expect.stringContaining('walrus tusks'), session_id: 'ses_p' }]);
      // Told: the session's messages (this one) at the version its write left.
      const written = held!.written();
      expect(written?.messages).toEqual([message]);
      expect(written?.version).toBe(sessions.messagesVersion!('ses_p'));
      // The run's events are those of a start without it.
      expect((await ledger.events(claimed.run.id)).map((e) => e.type)).toEqual([
        'run.queued',
        'run.started',
        'phase',
      ]);

      // The session is there already (its primary key): no run, no message, no search row, not told.
      held = undefined;
      await expect(
        ledger.createClaimed!(input('ses_p'), sessionInsert('ses_p'), {
          next,
          trailing: (runId) => {
            held = promptOf('ses_p', runId);
            return held.inserts;
          },
        }),
      ).rejects.toThrow(/duplicate key|sessions_pkey/);
      expect(held!.written()).toBeUndefined();
      expect(await sessions.getMessage(held!.message.id)).toBeUndefined();
      const counts = await sql.query<{ runs: string; messages: string; docs: string }>(
        `SELECT (SELECT count(*) FROM agent_runs) AS runs, (SELECT count(*) FROM messages) AS messages,
                (SELECT count(*) FROM message_search_docs) AS docs`,
      );
      expect(counts[0]).toEqual({ runs: 1, messages: 1, docs: 1 });
    } finally {
      await ledger.close?.();
      await sql.close();
    }
  });
});
