/**
 * A step's whole end as one statement on PostgreSQL (issue 18 item 6, p-pgstep2): the session
 * store's step close (`closeStepWrite`: the messages finished, the session's usage) written first
 * in the run ledger's statement of the run's row and its `step.finished` event
 * (`updateAndAppendAfter`), so the step end needs no transaction (no BEGIN, no COMMIT, no second
 * round trip). Pinned: the rows and the event are those of the separate writes; it is all or
 * nothing (a missing message or run: not_found and nothing written); a tool step on a PostgreSQL
 * App sends its end as that one statement, outside a transaction, with the same rows and events.
 */
import { describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/sessions/types';
import type { SqlClient } from '../../src/store/postgres/client';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { driverStatements, migratedDatabase, postgresForFile, recordingClient } from '../helpers/postgres';
import { appendStepMessages, sessionWithRun } from '../helpers/step-messages';

/** A step end's part of a statement: its message updates, or its session usage when it has no message to patch (p-pgnopatch). */
const STEP_END_PART = /UPDATE messages|prompt_tokens = prompt_tokens \+/;

const pg = postgresForFile();

const tokens = { input_tokens: 120, output_tokens: 30, reasoning_tokens: 0, cached_input_tokens: 0 };
const finalParts = [
  { type: 'tool-result' as const, tool_call_id: 'c1', tool: 'echo', output: 'second', is_error: false },
];
const usage = { input_tokens: 120, output_tokens: 30, cost: 0.25 };
const patch = { steps: 1, usage: { ...tokens }, cost: 0.25 };
const finished = { step: 1, finish_reason: 'tool-calls', tool_calls: 1, usage: tokens, cost: 0.25 };

type App = Awaited<ReturnType<typeof makeTestApp>>;

/** A session with a running run and a step's two messages as the recorder leaves them. */
async function stepOf(app: App) {
  const { sessions } = app;
  const { session, run } = await sessionWithRun(app, 'step');
  const { assistant, tool } = await appendStepMessages(sessions, session.id, run.id);
  const close = {
    sessionId: session.id,
    messages: [
      { id: assistant.id, patch: { usage: tokens, cost: 0.25, finished: true } },
      { id: tool.id, patch: { parts: finalParts, finished: true } },
    ],
    usage,
  };
  return { session, run, assistant, tool, close };
}

/** The stored rows of a step (messages, search rows, session, run, its events), ids masked. */
async function rowsOf(sql: SqlClient, sessionId: string, runId: string) {
  return {
    session: await sql.one('SELECT prompt_tokens, completion_tokens, cost FROM sessions WHERE id = $1', [
      sessionId,
    ]),
    messages: await sql.query(
      'SELECT role, parts, usage, cost, finished_at IS NOT NULL AS finished FROM messages WHERE session_id = $1 ORDER BY row_seq',
      [sessionId],
    ),
    docs: await sql.query(
      `SELECT d.role, d.tools, d.body, d.terms::text AS terms FROM message_search_docs d
         JOIN messages m ON m.id = d.message_id WHERE d.session_id = $1 ORDER BY m.row_seq`,
      [sessionId],
    ),
    run: await sql.one(
      'SELECT status, steps, input_tokens, output_tokens, reasoning_tokens, cached_input_tokens, cost FROM agent_runs WHERE id = $1',
      [runId],
    ),
    events: await sql.query(
      'SELECT seq, type, payload FROM agent_run_events WHERE run_id = $1 ORDER BY seq',
      [runId],
    ),
  };
}

function joined(app: App) {
  const { closeStepWrite } = app.sessions as SessionStore;
  const after = app.runs.updateAndAppendAfter;
  if (!closeStepWrite || !after) throw new Error('the PostgreSQL stores cannot write a step end as one');
  return { closeStepWrite, after: after.bind(app.runs) };
}

describe.skipIf(!pg.available)('a step`s whole end in one statement on PostgreSQL', () => {
  it('STORE-PG-180: the messages, usage, run row and step.finished of the separate writes, in one statement', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const sent: string[] = [];
    const app = await makeTestApp({ postgres: recordingClient(sql, sent) });
    try {
      const { closeStepWrite, after } = joined(app);
      const closeStep = app.sessions.closeStep;
      if (!closeStep) throw new Error('no closeStep');
      // Separately, as the step's end wrote them before (in a transaction).
      const apart = await stepOf(app);
      const [closedApart, appendedApart] = await app.store.transactions.run(() =>
        Promise.all([
          closeStep(apart.close),
          app.runs.updateAndAppend?.(apart.run.id, patch, 'step.finished', finished),
        ]),
      );
      // In one statement.
      const together = await stepOf(app);
      await app.bus.flush();
      sent.length = 0;
      const written = await after(
        together.run.id,
        patch,
        'step.finished',
        finished,
        closeStepWrite(together.close),
      );
      const writes = sent.filter((text) =>
        /\b(UPDATE|INSERT INTO)\s+(messages|message_search_docs|sessions|agent_runs)\b|svc_append_run_event/.test(
          text,
        ),
      );
      expect(writes).toHaveLength(1);
      expect(writes[0]).toMatch(
        /UPDATE messages[\s\S]*UPDATE message_search_docs[\s\S]*UPDATE sessions[\s\S]*UPDATE agent_runs[\s\S]*svc_append_run_event/,
      );
      expect(await rowsOf(sql, together.session.id, together.run.id)).toEqual(
        await rowsOf(sql, apart.session.id, apart.run.id),
      );
      // The answers: the session row as the usage UPDATE left it, the run row, the event.
      const {
        id: _a,
        created_at: _b,
        ...sessionTogether
      } = written.before ?? ({} as Record<string, unknown>);
      const { id: _c, created_at: _d, ...sessionApart } = closedApart ?? ({} as Record<string, unknown>);
      expect(sessionTogether).toEqual(sessionApart);
      expect(written.before?.prompt_tokens).toBe(120);
      expect(written.run.steps).toBe(1);
      expect(written.run.cancel_requested).toBe(appendedApart?.run.cancel_requested);
      expect(written.event).toMatchObject({
        type: 'step.finished',
        seq: appendedApart?.event.seq,
        payload: finished,
      });
      expect((await app.runs.events(together.run.id)).at(-1)?.id).toBe(written.event.id);
    } finally {
      await app.close();
      await sql.close();
    }
  });

  it('STORE-PG-181: a missing message or run is not_found and nothing is written', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const app = await makeTestApp({ postgres: sql });
    try {
      const { closeStepWrite, after } = joined(app);
      const step = await stepOf(app);
      await app.bus.flush();
      const before = await rowsOf(sql, step.session.id, step.run.id);
      const gone = {
        ...step.close,
        messages: [...step.close.messages, { id: 'msg_gone', patch: { finished: true } }],
      };
      await expect(
        after(step.run.id, patch, 'step.finished', finished, closeStepWrite(gone)),
      ).rejects.toMatchObject({ code: 'not_found', message: 'message_id: no message "msg_gone"' });
      expect(await rowsOf(sql, step.session.id, step.run.id)).toEqual(before);
      await expect(
        after('run_gone', patch, 'step.finished', finished, closeStepWrite(step.close)),
      ).rejects.toMatchObject({ code: 'not_found', message: 'run_id: no run "run_gone"' });
      expect(await rowsOf(sql, step.session.id, step.run.id)).toEqual(before);
    } finally {
      await app.close();
      await sql.close();
    }
  });

  it('STORE-PG-182: a tool step`s end on a PostgreSQL App is one statement outside a transaction; rows and events as before', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const { app } = await agentApp(
      [reply().toolCall('echo', { text: 'hi' }).usage(100, 20), reply().text('done').usage(130, 10)],
      { extraTools: [echoTool], postgres: sql },
    );
    const driver = driverStatements();
    try {
      const session = await app.sessions.create({ title: 'step end' });
      const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
      expect((await app.agent.wait(run_id)).status).toBe('completed');
      await app.bus.flush();
      const sent = [...driver.sent];
      // Two steps: each end one statement with the run's row, no BEGIN before it nor COMMIT after.
      const ends = sent.flatMap((text, i) =>
        STEP_END_PART.test(text) && /UPDATE agent_runs/.test(text) ? [i] : [],
      );
      expect(ends).toHaveLength(2);
      for (const i of ends) {
        expect(sent[i - 1]).not.toBe('BEGIN');
        expect(sent[i + 1]).not.toBe('COMMIT');
      }
      // The rows: messages finished with their usage, the session's and the run's totals.
      const messages = await app.sessions.messages(session.id);
      expect(messages.map((m) => [m.role, m.finished_at !== null])).toEqual([
        ['user', true],
        ['assistant', true],
        ['tool', true],
        ['assistant', true],
      ]);
      expect(messages[1].usage).toMatchObject({ input_tokens: 100, output_tokens: 20 });
      const stored = await app.sessions.require(session.id);
      expect([stored.prompt_tokens, stored.completion_tokens]).toEqual([230, 30]);
      const run = await app.runs.require(run_id);
      expect([run.steps, run.usage.input_tokens, run.usage.output_tokens]).toEqual([2, 230, 30]);
      // The run's events: each step's end after its tool, in order.
      const types = (await app.runs.events(run_id)).map((e) => e.type);
      const stepEnds = types.flatMap((type, i) => (type === 'step.finished' ? [i] : []));
      expect(stepEnds).toHaveLength(2);
      expect(types.indexOf('tool.finished')).toBeLessThan(stepEnds[0]);
      expect(types.indexOf('run.finished')).toBeGreaterThan(stepEnds[1]);
    } finally {
      driver.restore();
      await app.close();
      await sql.close();
    }
  });
});
