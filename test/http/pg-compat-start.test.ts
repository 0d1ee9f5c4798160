/**
 * A compat request's ledger row in its run's claim on PostgreSQL (issue 18 item 6, p-pgstart): the
 * row and its `openai_compat.request` event ride in the claim's statement (`svc_claim_run_started`
 * with the run's prompt phase), so a lone request's start is five statements: BEGIN, the run's
 * INSERT with its session, the claim with the compat row, the prompt's message, COMMIT. The run's
 * events keep their order and the row its values.
 */
import { describe, expect, it } from 'vitest';
import type { ClaimAlongside } from '../../src/runs/types';
import { compatRequestRow } from '../helpers/compat-request-row';
import { reply } from '../helpers/fake-provider';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();

describe.skipIf(!pg.available)('a compat request’s row in its run’s claim on PostgreSQL', () => {
  it('STORE-PG-280: a lone compat request’s start is five statements, its ledger row and event in the claim’s; the rows and events as before', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const statements = driverStatements();
    const { app, client } = await compatServer([reply().text('warm'), reply().text('one').usage(7, 3)], {
      postgres: sql,
    });
    try {
      await streamedAnswer(client);
      await settledCompatRow(app);
      await app.bus.flush();
      const from = statements.sent.length;
      expect(await streamedAnswer(client)).toBe('one');
      const row = await settledCompatRow(app);
      const sent = statements.sent.slice(from);
      const begin = sent.indexOf('BEGIN');
      const start = sent.slice(begin, sent.indexOf('COMMIT', begin) + 1);
      expect(start).toHaveLength(5);
      expect(start[1]).toMatch(/INSERT INTO sessions .*INSERT INTO agent_runs /s);
      expect(start[2]).toMatch(/svc_claim_run_started\(.*INSERT INTO openai_compat_requests /s);
      expect(start[3]).toMatch(/INSERT INTO messages /);
      // The row is written once, in the claim: no statement of its own.
      expect(sent.filter((t) => /INSERT INTO openai_compat_requests /.test(t))).toHaveLength(1);

      expect(row).toMatchObject({
        run_id: expect.stringMatching(/^run_/),
        requested_model: 'fake/m1',
        model: 'fake/m1',
        stream: true,
        session_binding: 'new',
        message_count: 1,
        status: 'completed',
        http_status: 200,
        prompt_tokens: 7,
        completion_tokens: 3,
      });
      const events = await app.runs.events(row.run_id);
      expect(events.slice(0, 4).map((e) => [e.seq, e.type])).toEqual([
        [1, 'run.queued'],
        [2, 'run.started'],
        [3, 'phase'],
        [4, 'openai_compat.request'],
      ]);
      expect(events[3].payload).toMatchObject({
        request_id: row.request_id,
        stream: true,
        session_binding: 'new',
        messages: 1,
        prompt: 'user',
      });
      expect(events.filter((e) => e.type === 'openai_compat.request')).toHaveLength(1);
      expect(events.at(-1)?.type).toBe('openai_compat.response');
    } finally {
      statements.restore();
      await app.close();
      await sql.close();
    }
  });

  it('STORE-PG-282: a send’s claim insert tells `opened` only when the claim wrote it, after `written` and the prompt message; a run queued behind another is told neither', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const { app } = await compatServer([reply().text('one'), reply().text('two')], { postgres: sql });
    try {
      const session = await app.agent.createSession({ title: 't' });
      const told: string[] = [];
      // What the messages table holds when `opened` is told (another connection: committed rows).
      const atOpened: Promise<{ role: string }[]>[] = [];
      const along =
        (requestId: string) =>
        (runId: string): ClaimAlongside => ({
          runId,
          write: app.compatRequests.insertAfterClaim!(
            compatRequestRow(
              { request_id: requestId, run_id: runId, session_id: session.id },
              {
                requested_model: 'fake/m1',
                model_source: 'request',
                stream: false,
                session_binding: 'header',
                message_count: 1,
                ignored_fields: [],
                created_at: 1,
              },
            ),
          ),
          event: { type: 'openai_compat.request', payload: { request_id: requestId } },
          written: () => told.push(`written ${requestId}`),
          opened: () => {
            told.push(`opened ${requestId}`);
            atOpened.push(sql.query('SELECT role FROM messages WHERE run_id = $1', [runId]));
          },
        });
      const first = await app.agent.send({
        sessionId: session.id,
        prompt: 'first',
        ifBusy: 'queue',
        claimAlongside: along('req-a'),
      });
      // Sent while the first runs: queued behind it, started later by the first's finish.
      const second = await app.agent.send({
        sessionId: session.id,
        prompt: 'second',
        ifBusy: 'queue',
        claimAlongside: along('req-b'),
      });
      expect(first.status).toBe('running');
      expect(second.status).toBe('queued');
      await app.agent.wait(first.run_id);
      await app.agent.wait(second.run_id);
      expect(told).toEqual(['written req-a', 'opened req-a']);
      expect(await Promise.all(atOpened)).toEqual([[{ role: 'user' }]]);
      const messages = await sql.query<{ role: string; run_id: string }>(
        'SELECT role, run_id FROM messages WHERE session_id = $1 ORDER BY created_at, id',
        [session.id],
      );
      expect(messages.filter((m) => m.role === 'user').map((m) => m.run_id)).toEqual([
        first.run_id,
        second.run_id,
      ]);
      expect((await app.compatRequests.get('req-a'))?.run_id).toBe(first.run_id);
      // Not written in the queued run's claim: the caller records it (here: nothing did).
      expect(await app.compatRequests.get('req-b')).toBeUndefined();
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
