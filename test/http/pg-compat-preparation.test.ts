/**
 * A compat request's run preparation on a PostgreSQL App (issue 18 item 6, p-pgprep): its
 * `model.resolved` event, its prompt stack row and its `prompt.assembled` event are one statement
 * (src/agent/held-writes.ts), not three, since p-pgcompat2 after the model request, with the first
 * step's `phase` (model) in it, since p-pgprep3 in the run's finish (a lone text step's end, held
 * for it, carries them) (STORE-PG-223); the run's
 * events keep their order and payloads, the prompt stack row its run and size; a preparation that
 * fails after the model is resolved still writes `model.resolved` before its `error`.
 */
import { describe, expect, it } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer, PG_LONE_RUN_EVENTS, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();

/** The run ledger's and the prompt stack's writes among statement texts (the start's included). */
const preparationWrites = (texts: string[]) =>
  texts.filter((t) => /agent_run_events|svc_append_run_event|prompt_stack_builds/.test(t));

describe.skipIf(!pg.available)('a compat run’s preparation on PostgreSQL', () => {
  it('STORE-PG-223: model.resolved, the prompt stack row, prompt.assembled and the first step`s phase ride in one statement after the model request, the run`s finish; events and row as before', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const statements = driverStatements();
    let atModelRequest = -1;
    const { app, client } = await compatServer(
      [
        reply().text('warm'),
        () => {
          atModelRequest = statements.sent.length;
          return reply().text('one').usage(10, 2);
        },
      ],
      { postgres: sql },
    );
    try {
      await streamedAnswer(client);
      await settledCompatRow(app);
      await app.bus.flush();
      const from = statements.sent.length;
      expect(await streamedAnswer(client)).toBe('one');
      const row = await settledCompatRow(app);
      // Before the model request only the start's writes (the run, its claim, the compat row);
      // after it, the preparation's writes in one statement with the step's phase, the run's
      // finish (p-pgprep3): no append of their own.
      const start =
        /svc_claim_run_started|^WITH alongside AS|^WITH (riding AS \(INSERT INTO sessions .*)?r AS \(INSERT INTO agent_runs/s;
      expect(
        preparationWrites(statements.sent.slice(from, atModelRequest)).filter((t) => !start.test(t)),
      ).toEqual([]);
      const after = preparationWrites(statements.sent.slice(atModelRequest)).filter(
        (t) => !/^WITH alongside AS \(UPDATE openai_compat_requests/.test(t),
      );
      const prepared = after.filter((t) => /prompt_stack_builds/.test(t));
      expect(prepared).toHaveLength(1);
      expect(prepared[0]).toMatch(/svc_following_row AS \(INSERT INTO prompt_stack_builds /);
      expect(prepared[0]).toMatch(/UPDATE agent_runs SET status = /);
      // The run events' list: the finish's own INSERT after one seq read (p-lastseq).
      expect(prepared[0]).toContain('svc_run_last_seq(');
      expect(after.filter((t) => /^SELECT event_id, event_seq FROM svc_append_run_event\(/.test(t))).toEqual(
        [],
      );

      const events = await app.runs.events(row.run_id);
      expect(events.map((e) => [e.seq, e.type])).toEqual(PG_LONE_RUN_EVENTS);
      const resolved = events.find((e) => e.type === 'model.resolved');
      expect(resolved?.payload).toMatchObject({ model: 'fake/m1' });
      const assembled = events.find((e) => e.type === 'prompt.assembled');
      const builds = await app.observe.promptStack.recent({ sessionId: row.session_id });
      expect(builds).toHaveLength(1);
      expect(builds[0]).toMatchObject({
        run_id: row.run_id,
        session_id: row.session_id,
        total_chars: (assembled?.payload as { chars?: number } | undefined)?.chars,
      });
      // Held in the order made, each at its own time, before the step's.
      expect(resolved!.created_at).toBeLessThanOrEqual(assembled!.created_at);
      expect(assembled!.created_at).toBeLessThanOrEqual(events[6].created_at);
      expect(events[6].payload).toEqual({ phase: 'model', step: 1 });
      expect(builds[0].created_at).toBeLessThanOrEqual(assembled!.created_at);
    } finally {
      statements.restore();
      await app.close();
      await sql.close();
    }
  });

  it('STORE-PG-224: a preparation failing after its model is resolved writes model.resolved before its error, and the request fails as before', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const { app, client } = await compatServer([reply().text('warm')], { postgres: sql });
    try {
      await streamedAnswer(client);
      const adaptive = app.adaptive as unknown as { compactionThreshold: (id: string) => Promise<unknown> };
      expect(adaptive).toBeDefined();
      adaptive.compactionThreshold = async () => {
        throw new Error('threshold unavailable');
      };
      const answer = await client.chat.completions
        .create({ model: 'fake/m1', messages: [{ role: 'user', content: 'hello' }] })
        .then(
          () => 'answered',
          (error: { status?: number }) => error.status,
        );
      expect(answer).toBe(500);
      const row = await settledCompatRow(app);
      expect(row).toMatchObject({ status: 'failed' });
      const events = await app.runs.events(row.run_id);
      expect(events.map((e) => [e.seq, e.type])).toEqual(
        [
          'run.queued',
          'run.started',
          'phase',
          'openai_compat.request',
          'model.resolved',
          'error',
          'run.finished',
          'openai_compat.response',
        ].map((type, i) => [i + 1, type]),
      );
      expect(await app.observe.promptStack.count(row.session_id)).toBe(0);
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
