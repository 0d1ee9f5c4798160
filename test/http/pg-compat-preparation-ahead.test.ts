/**
 * A compat run's preparation writes in the model's wait on PostgreSQL (p-pgcritical): their one
 * statement (`model.resolved`, the prompt stack row, `prompt.assembled`: src/agent/held-writes.ts)
 * goes out once the model request has, not when the model's first part comes back (p-pgcompat2),
 * so a short answer's first writes (the assistant message, its deltas) no longer wait for it. The
 * first step's `phase` then rides in the assistant message's INSERT (src/agent/held-event.ts):
 * the same statements, events, seqs and payloads.
 */
import { describe, expect, it } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();
const PREPARATION = /^WITH riding AS \(INSERT INTO prompt_stack_builds /;

describe.skipIf(!pg.available)('a compat run’s preparation writes in the model’s wait on PostgreSQL', () => {
  it('STORE-PG-491: the preparation’s statement is sent while the model has not answered (was: after its first part); the step’s phase rides in the assistant message’s INSERT; the run’s events, seqs and payloads as before', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const statements = driverStatements();
    let atRequest = -1;
    const { app, client } = await compatServer(
      [
        reply().text('warm'),
        () => {
          atRequest = statements.sent.length;
          // The model answers after 1.5 s: long after the request, whatever the machine's load.
          return reply().text('one').usage(10, 2).hang(1500);
        },
      ],
      { postgres: sql },
    );
    try {
      await streamedAnswer(client);
      await settledCompatRow(app);
      await app.bus.flush();
      const answering = streamedAnswer(client);
      // While the model has not answered: the preparation's statement goes out.
      let sentInWait = false;
      for (let i = 0; i < 100 && !sentInWait; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        sentInWait = atRequest >= 0 && statements.sent.slice(atRequest).some((t) => PREPARATION.test(t));
      }
      expect(sentInWait).toBe(true);
      expect(await answering).toBe('one');
      const row = await settledCompatRow(app);
      const after = statements.calls.slice(atRequest);
      const prepared = after.filter((call) => PREPARATION.test(call.text));
      expect(prepared).toHaveLength(1);
      expect(prepared[0].values).toContainEqual(['model.resolved', 'prompt.assembled']);
      // No append of its own for the phase: in the assistant message's INSERT.
      expect(
        after.filter((call) => /^SELECT event_id, event_seq FROM svc_append_run_event\(/.test(call.text)),
      ).toEqual([]);
      const insert = after.find(
        (call) => /INSERT INTO messages /.test(call.text) && call.values?.includes('assistant'),
      );
      expect(JSON.stringify(insert?.values)).toContain('"phase"');
      const events = await app.runs.events(row.run_id);
      expect(events.map((e) => [e.seq, e.type])).toEqual(
        [
          'run.queued',
          'run.started',
          'phase',
          'openai_compat.request',
          'model.resolved',
          'prompt.assembled',
          'phase',
          'step.finished',
          'run.finished',
          'openai_compat.response',
        ].map((type, i) => [i + 1, type]),
      );
      const resolved = events.find((e) => e.type === 'model.resolved');
      const assembled = events.find((e) => e.type === 'prompt.assembled');
      expect(resolved?.payload).toMatchObject({ model: 'fake/m1' });
      expect(resolved!.created_at).toBeLessThanOrEqual(assembled!.created_at);
      expect(assembled!.created_at).toBeLessThanOrEqual(events[6].created_at);
      expect(events[6].payload).toEqual({ phase: 'model', step: 1 });
      const builds = await app.observe.promptStack.recent({ sessionId: row.session_id });
      expect(builds).toHaveLength(1);
      expect(builds[0]).toMatchObject({ run_id: row.run_id, session_id: row.session_id });
    } finally {
      statements.restore();
      await app.close();
      await sql.close();
    }
  });
});
