/**
 * A lone compat start's failure after its one statement committed, on PostgreSQL (issue 18 item 6,
 * p-pgstart3): since p-pgstart2 the start is one statement without BEGIN/COMMIT, so a send that
 * fails after it cannot roll it back; the request cancels the run instead (prepare.ts `inClaim`).
 * The failing start's model request goes out during the statement's round trip (p-pgmodel) and is
 * aborted when the start does not go on; whether it reaches the fake model first is timing (under
 * CI load it did), so the model answers by prompt (`laterOnly`), not by the order of requests.
 */
import { describe, expect, it } from 'vitest';
import { faultAfterWritten, lastUser, laterOnly } from '../helpers/held-answer';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer } from './compat-helpers';

const pg = postgresForFile();

describe.skipIf(!pg.available)('a lone compat start that fails after its statement on PostgreSQL', () => {
  it('STORE-PG-310: a send failing after the lone statement committed answers as one failing before it; the run is cancelled, not left running; a later request works', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const { app, post, provider } = await compatServer([laterOnly, laterOnly], { postgres: sql });
    try {
      const body = (content: string) => ({ model: 'fake/m1', messages: [{ role: 'user', content }] });
      const count = async (table: string) =>
        Number((await sql.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`))[0]!.n);
      const fault = faultAfterWritten(app);

      // A failure before the statement: nothing written.
      fault.set('before');
      const before = await post('/v1/chat/completions', body('first'));
      const beforeBody = await before.json();
      expect(before.status).toBeGreaterThanOrEqual(500);
      for (const table of ['sessions', 'agent_runs', 'messages', 'openai_compat_requests']) {
        expect(await count(table)).toBe(0);
      }

      expect(beforeBody).toEqual({ error: expect.stringMatching(/injected fault$/), code: before.status });
      // A failure after it: the same answer.
      fault.set('after');
      const after = await post('/v1/chat/completions', body('second'));
      expect(after.status).toBe(before.status);
      const afterBody = await after.json();
      expect(afterBody).toEqual(beforeBody);
      expect(after.headers.get('x-svc-session-id')).toBe(before.headers.get('x-svc-session-id'));

      // What stays of the committed statement: the session, its run cancelled, the prompt message.
      const sessions = await sql.query<{ id: string }>('SELECT id FROM sessions');
      expect(sessions).toHaveLength(1);
      const runs = await sql.query<{ id: string; status: string; reason: string }>(
        'SELECT id, status, reason FROM agent_runs',
      );
      expect(runs).toEqual([
        {
          id: expect.stringMatching(/^run_/),
          status: 'cancelled',
          reason: 'the chat-completions request failed at its start',
        },
      ]);
      const events = (await app.runs.events(runs[0]!.id)).map((e) => e.type);
      expect(events).toEqual([
        'run.queued',
        'run.started',
        'phase',
        'openai_compat.request',
        'run.finished',
        'openai_compat.response',
      ]);
      expect((await app.runs.get(runs[0]!.id))?.status).toBe('cancelled');
      const messages = await sql.query<{ role: string; run_id: string }>('SELECT role, run_id FROM messages');
      expect(messages).toEqual([{ role: 'user', run_id: runs[0]!.id }]);
      // The request's row (written in the statement) ended as failed with the answer's error.
      const compat = await sql.query<Record<string, unknown>>(
        'SELECT run_id, status, http_status, error, finished_at FROM openai_compat_requests',
      );
      expect(compat).toEqual([
        {
          run_id: runs[0]!.id,
          status: 'failed',
          http_status: after.status,
          error: afterBody.error,
          finished_at: expect.anything(),
        },
      ]);
      expect((await app.agent.state(sessions[0]!.id)).state).toBe('idle');

      // A later request works.
      fault.set(undefined);
      const later = await post('/v1/chat/completions', body('later'));
      expect(later.status).toBe(200);
      expect((await later.json()).choices[0].message.content).toBe('later');
      // 'first' never asked the model; 'second' may have (aborted then: STORE-PG-916).
      expect(provider.requests.map(lastUser).filter((prompt) => prompt !== 'second')).toEqual(['later']);
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
