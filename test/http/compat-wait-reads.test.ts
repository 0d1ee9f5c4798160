/**
 * A JSON compat request waits for its run through the run's deferred, reading no run row first
 * (src/agent/run-cancel.ts `waitRun`): that read went out beside the run's start statement, and on
 * PostgreSQL took a second connection whenever the two fell in different turns of the event loop
 * (STORE-PG-874 failed under a loaded suite so). Counted, never timed.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { migratedDatabase, postgresForFile, recordingClient } from '../helpers/postgres';
import { compatServer, settledCompatRow, warmedJsonCompat } from './compat-helpers';

const pg = postgresForFile();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

describe('a JSON compat request waits for its run with no read of the run row', () => {
  it('STORE-PG-918: on SQLite the wait reads the run by neither get nor require (was one require a request); the answer whole', async () => {
    const server = await compatServer([reply().text('one')]);
    closers.push(() => server.app.close());
    const get = vi.spyOn(server.app.runs, 'get');
    const require = vi.spyOn(server.app.runs, 'require');
    const answer = await server.client.chat.completions.create({
      model: 'fake/m1',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(answer.choices[0]?.message.content).toBe('one');
    expect(require).not.toHaveBeenCalled();
    expect(get).not.toHaveBeenCalled();
    expect((await settledCompatRow(server.app)).status).toBe('completed');
  });

  it.skipIf(!pg.available)(
    'STORE-PG-918: on PostgreSQL a warm request sends no `SELECT * FROM agent_runs WHERE id` (was one, beside the start statement); the row completed',
    async () => {
      const sql = await migratedDatabase(pg.cluster());
      closers.push(() => sql.close());
      const sent: string[] = [];
      const { app, ask } = await warmedJsonCompat(recordingClient(sql, sent), ['one']);
      closers.push(() => app.close());
      sent.length = 0;
      expect((await ask()).choices[0]?.message.content).toBe('one');
      expect(sent.filter((text) => /FROM agent_runs WHERE id = \$1$/.test(text.trim()))).toEqual([]);
      expect(sent.some((text) => text.includes('svc_session_has_queued'))).toBe(true);
      expect((await settledCompatRow(app)).status).toBe('completed');
    },
  );
});
