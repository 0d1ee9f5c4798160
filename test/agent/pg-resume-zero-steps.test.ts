/**
 * Issue 19 item 2: a run taken over from a node that died before it stored its prompt (claimed,
 * zero steps, no message yet) starts from its prompt on the node that took it, instead of failing
 * `resume_failed`: nothing was done, so nothing can be done twice.
 */
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

describe.skipIf(!pg.available)('resuming a run with zero steps done', () => {
  it('DURABLE-5: a claimed run whose prompt was never stored is run from its prompt where it is resumed', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const provider = await fakeProvider([reply().text('started here after all')]);
    const app = await makeTestApp({
      postgres: sql,
      config: {
        providers: { fake: { type: 'openai-compat', base_url: provider.url } },
        models: { large: 'fake/m1', small: 'fake/m1' },
      },
    });
    try {
      const session = await app.sessions.create({ title: 'zero' });
      const created = await app.runs.create({
        session_id: session.id,
        family_session_id: session.id,
        agent: 'build',
        origin: 'api',
        prompt: 'say where you started',
      });
      // Claimed by a node that died at once: running, no step, no message.
      const claim = await app.runs.claim(created.id);
      expect(claim.ok).toBe(true);
      expect(await app.sessions.messages(session.id)).toEqual([]);

      const outcome = await app.agent.resume(created.id);
      expect(outcome).toMatchObject({ status: 'completed' });
      const run = await app.runs.require(created.id);
      expect(run).toMatchObject({ status: 'completed', steps: 1 });
      const messages = await app.sessions.messages(session.id);
      expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
      expect(JSON.stringify(messages[1]?.parts)).toContain('started here after all');
      expect(provider.requests).toHaveLength(1);
    } finally {
      await app.close();
      await sql.close();
      await provider.close();
    }
  });
});
