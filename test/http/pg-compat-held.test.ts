/**
 * A compat run's preparation writes held past its preparation on PostgreSQL (issue 18 item 6,
 * p-pgcompat2, src/agent/held-writes.ts): `model.resolved`, the prompt stack row and
 * `prompt.assembled` go in one statement with the run's next event (nearly always its first step's
 * `phase` (model), STORE-PG-223), so that event has no statement of its own. A run whose model
 * fails before any step writes them in its `error`'s statement; a run stopped in the model's wait
 * (no event after its preparation) writes them at its end, before `run.finished`. Order, payloads
 * and the prompt stack row as before.
 */
import { describe, expect, it } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { until } from '../helpers/until';
import { compatServer, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();
/** The held writes' list (its arrays parameters; a finish's own events are a list of `ARRAY[…]`, p-pgserver). */
const LIST = /svc_append_run_event_list\((r\.id, r\.session_id|\$\d+, \$\d+), \$\d+::text\[\]/;
const ALONE = /^SELECT event_id, event_seq FROM svc_append_run_event\(/;

describe.skipIf(!pg.available)('a compat run’s held preparation writes on PostgreSQL', () => {
  it('STORE-PG-261: a model request failing before any step: the held writes and the error in one statement, in order', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const statements = driverStatements();
    const { app, client } = await compatServer([reply().text('warm'), reply().httpError(400)], {
      postgres: sql,
    });
    try {
      await streamedAnswer(client);
      await settledCompatRow(app);
      await app.bus.flush();
      const from = statements.sent.length;
      const status = await client.chat.completions
        .create({ model: 'fake/m1', messages: [{ role: 'user', content: 'hello' }] })
        .then(
          () => 200,
          (error: { status?: number }) => error.status,
        );
      expect(status).toBeGreaterThanOrEqual(400);
      const row = await settledCompatRow(app);
      expect(row.status).toBe('failed');
      const sent = statements.sent.slice(from);
      expect(sent.filter((t) => LIST.test(t))).toHaveLength(1);
      expect(sent.filter((t) => ALONE.test(t))).toEqual([]);
      const events = await app.runs.events(row.run_id);
      expect(events.map((e) => [e.seq, e.type])).toEqual(
        [
          'run.queued',
          'run.started',
          'phase',
          'openai_compat.request',
          'model.resolved',
          'prompt.assembled',
          'error',
          'run.finished',
          'openai_compat.response',
        ].map((type, i) => [i + 1, type]),
      );
      expect(events[6].payload).toMatchObject({ source: 'provider' });
      expect(events[4].created_at).toBeLessThanOrEqual(events[5].created_at);
      expect(events[5].created_at).toBeLessThanOrEqual(events[6].created_at);
      expect(await app.observe.promptStack.recent({ sessionId: row.session_id })).toHaveLength(1);
    } finally {
      statements.restore();
      await app.close();
      await sql.close();
    }
  });

  it('STORE-PG-262: a run stopped in the model’s wait writes its held preparation at its end, before run.finished and the request`s end', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const { app, client, provider } = await compatServer([reply().text('warm'), reply().hang(30_000)], {
      postgres: sql,
    });
    try {
      await streamedAnswer(client);
      await settledCompatRow(app);
      const aborter = new AbortController();
      const asked = client.chat.completions
        .create(
          { model: 'fake/m1', messages: [{ role: 'user', content: 'hello' }], stream: true },
          { signal: aborter.signal },
        )
        .then(
          async (stream) => {
            for await (const _ of stream);
          },
          () => {},
        )
        .catch(() => {});
      let runId = '';
      await until(async () => {
        const [row] = (await app.compatRequests.list({ limit: 1 })).rows;
        if (row?.status !== 'running') return false;
        runId = row.run_id;
        return true;
      }, 'the request running');
      // In the model's wait (the provider has the request): the preparation is held, not written.
      await until(async () => provider.requests.length === 2, 'the model asked');
      expect((await app.runs.events(runId)).map((e) => e.type)).not.toContain('model.resolved');
      aborter.abort();
      await asked;
      const row = await settledCompatRow(app);
      expect(row.status).not.toBe('running');
      await until(async () => (await app.runs.require(runId)).status !== 'running', 'the run ended');
      const types = (await app.runs.events(runId)).map((e) => e.type);
      expect(types.slice(0, 6)).toEqual([
        'run.queued',
        'run.started',
        'phase',
        'openai_compat.request',
        'model.resolved',
        'prompt.assembled',
      ]);
      expect(types.indexOf('run.finished')).toBeGreaterThan(types.indexOf('prompt.assembled'));
      // The request's end (its client gone) is written after what the run held (StopState.written).
      expect(types.indexOf('openai_compat.response')).toBeGreaterThan(types.indexOf('prompt.assembled'));
      expect(await app.observe.promptStack.recent({ sessionId: row.session_id })).toHaveLength(1);
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
