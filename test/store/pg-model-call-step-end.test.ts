/**
 * A step's `model_calls` row in its step end's statement on PostgreSQL (issue 18 item 6,
 * p-pgfirst, src/agent/held-calls.ts): held from the model's `finish`, it rides in the step end's
 * statement (`RunLedger.updateAndAppendAfter`'s `riding`) or, in a tool step, in its first tool's
 * `tool.started` statement (`appendAnnounced`'s `riding`: never held across a tool's run), alone
 * at the run's end when nothing carried it. Pinned: no `INSERT INTO model_calls` of its own; one row a
 * call with the same columns and readouts; a failed step's row still written; the riding insert
 * written whatever the step end's gate decided, and told so.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createPostgresRunWrites } from '../../src/runs/pg-run-write-repository';
import { createPostgresModelCallStore } from '../../src/telemetry/pg-model-call-store';
import type { agentApp } from '../helpers/agent-harness';
import { echoSteps, reply } from '../helpers/fake-provider';
import { modelCallRow, pgAgentApp } from '../helpers/pg-recorded-app';
import { driverStatements, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

/** The model call's INSERT in a statement of its own. */
const ALONE = /^INSERT INTO model_calls/;
/** A statement that starts with the riding model call. */
const WITH_CALL = /^WITH svc_riding AS \(INSERT INTO model_calls/;
/** The run event with its session event (`insertEventWith`: a tool's `tool.started`) carrying it. */
const toolStartedWithCall = (text: string) => WITH_CALL.test(text) && !text.includes('UPDATE agent_runs');
/**
 * An assistant message's INSERT carrying it, with its first tool's `tool.started` (p-pgride,
 * src/agent/step-recorder.ts `startCall`).
 */
const MESSAGE_WITH_CALL =
  /^WITH s AS \(UPDATE sessions[\s\S]*INSERT INTO messages[\s\S]*svc_riding AS \(INSERT INTO model_calls[\s\S]*svc_append_run_event_list/;
/** A step end's statement (the run's row with `step.finished`) carrying the model call. */
// The last step end's: since p-pglast in the run's finish statement, after its queue read.
const STEP_END_WITH_CALL =
  /^WITH (q AS MATERIALIZED \(SELECT svc_session_has_queued\(\$\d+\) AS queued\), )?svc_riding AS \(INSERT INTO model_calls[\s\S]*UPDATE agent_runs/;

describe.skipIf(!pg.available)('a step`s model call in its step end`s statement (PostgreSQL)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function runApp(script: Parameters<typeof agentApp>[0]) {
    return pgAgentApp(pg.cluster(), script, closers);
  }

  async function sentWhile<T>(work: () => Promise<T>): Promise<{ sent: string[]; result: T }> {
    const driver = driverStatements();
    try {
      const result = await work();
      return { sent: [...driver.sent], result };
    } finally {
      driver.restore();
    }
  }

  it('STORE-PG-284: no model call INSERT of its own: a tool step`s rides in its tool`s `tool.started` statement, the last step`s in its step end; rows and readouts as before (tool.started with the call 2 → 0, in its assistant INSERT 0 → 2, p-pgride)', async () => {
    const steps = 2;
    const { app: a } = await runApp(echoSteps(steps));
    const session = await a.sessions.create({ title: 'calls' });
    const { sent, result: runId } = await sentWhile(async () => {
      const id = (await a.agent.send({ sessionId: session.id, prompt: 'go' })).run_id;
      expect((await a.agent.wait(id)).status).toBe('completed');
      return id;
    });
    // Without the hold: one INSERT a step (3). A tool step's rides in its tool's `tool.started`
    // statement (before the tool runs); the last step's in its step end.
    // Since p-pgride that `tool.started` is in the step's assistant message INSERT, the row with it.
    expect(sent.filter((text) => ALONE.test(text))).toEqual([]);
    expect(sent.filter(toolStartedWithCall)).toHaveLength(0);
    expect(sent.filter((text) => MESSAGE_WITH_CALL.test(text))).toHaveLength(steps);
    expect(sent.filter((text) => STEP_END_WITH_CALL.test(text))).toHaveLength(1);

    const calls = await a.telemetry.ledger.calls({ runId });
    expect(calls).toHaveLength(steps + 1);
    for (const call of calls) {
      expect(call).toMatchObject({
        session_id: session.id,
        run_id: runId,
        purpose: 'agent_step',
        status: 'ok',
        provider: expect.any(String),
        model: expect.any(String),
      });
      expect(call.id).toMatch(/^mc/);
      expect(call.day).toBe(new Date(call.at).toISOString().slice(0, 10));
    }
    expect(calls.map((c) => [c.input_tokens, c.output_tokens])).toEqual([
      [100, 20],
      [100, 20],
      [130, 10],
    ]);
    const spend = await a.telemetry.ledger.spend(session.id);
    expect(spend.session).toMatchObject({ calls: steps + 1, input_tokens: 330, output_tokens: 50 });
    expect(spend.today.calls).toBe(steps + 1);
  });

  it('STORE-PG-285: a step whose stream fails still writes its model call (status error), once, in the step end or alone', async () => {
    const { app: a } = await runApp([
      reply().toolCall('echo', { text: 'first' }).usage(100, 20),
      reply().text('half an answer').streamError('the provider broke'),
    ]);
    const session = await a.sessions.create({ title: 'broken' });
    const runId = (await a.agent.send({ sessionId: session.id, prompt: 'go' })).run_id;
    expect((await a.agent.wait(runId)).status).toBe('failed');
    const calls = await a.telemetry.ledger.calls({ runId });
    expect(calls.map((c) => c.status)).toEqual(['ok', 'error']);
    expect(calls[1]).toMatchObject({ run_id: runId, session_id: session.id, purpose: 'agent_step' });
    // Nothing still held: a new run's calls are its own.
    expect((await a.telemetry.ledger.calls({ sessionId: session.id })).length).toBe(2);
  });

  it('STORE-PG-286: the riding insert is written whatever the step end`s gate decides (no such run), and told; a failed statement writes none of it', async () => {
    const { sql } = await runApp([reply().text('unused')]);
    const writes = createPostgresRunWrites({ sql });
    const calls = createPostgresModelCallStore({ sql });
    const row = (id: string) => modelCallRow(id, null, null);
    // A preceding write that is always ready and writes nothing of its own.
    const before = {
      values: [],
      ready: 'true',
      ctes: () => 'b AS (SELECT 1 AS one)',
      last: 'b',
      answer: () => 'null',
      read: () => undefined,
    };
    let told = 0;
    const answered = await writes.updateRunWithEventAfter(
      'run_missing',
      { steps: 1 },
      1_000,
      { type: 'step.finished', payload: '{}', created_at: 1_000 },
      before,
      undefined,
      calls.insertWrite?.(row('mc_rides'), () => told++),
    );
    expect(answered.written).toBeUndefined();
    expect(told).toBe(0); // the repository answers; the ledger (pg-run-announced) tells
    expect((await calls.list({ limit: 10 })).map((r) => r.id)).toEqual(['mc_rides']);
    await expect(
      writes.updateRunWithEventAfter(
        'run_missing',
        { steps: 1 },
        1_000,
        { type: 'step.finished', payload: '{}', created_at: 1_000 },
        { ...before, ready: '1/0 = 1' },
        undefined,
        calls.insertWrite?.(row('mc_lost'), () => told++),
      ),
    ).rejects.toThrow();
    expect((await calls.list({ limit: 10 })).map((r) => r.id)).toEqual(['mc_rides']);
  });
});
