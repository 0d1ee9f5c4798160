/**
 * The model request's gate of a lone compat run prepared during its start's round trip, on
 * PostgreSQL (issue 18 item 6, p-pgoverlap: src/agent/run-early.ts `launchEarly`,
 * src/agent/start-answer.ts). The start's answer is held by the test (its `createClaimed` answers
 * only when the test lets it), so the order is the test's, not the load's: the run reaches its
 * stream (it has read its bound model for its first request; since p-pgscope its first step is
 * prepared after that, up to the gate right before the model's `doStream`), then a cancel, or a
 * failure of the start after its statement, comes in the window, then the answer.
 *
 * Changed by p-pgmodel (src/agent/early-request.ts): the model request now goes out in the window
 * (once the first step is prepared), its stream read only after the answer. These tests said "0
 * model requests"; they now say "the model request, if sent, was aborted and nothing of it
 * recorded": the provider saw at most one request of the held prompt, its connection closed by svc
 * before its answer was written whole (`FakeProvider.closed`: aborted, none completed), and the run
 * has no step. With the request provably out before the stop or the failure:
 * ./pg-compat-start-model.test.ts (STORE-PG-916, 917).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { type FakeProvider, reply } from '../helpers/fake-provider';
import { faultAfterWritten, holdStartAnswer, lastUser, laterOnly } from '../helpers/held-answer';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';
import { until } from '../helpers/until';
import { compatServer, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();

const body = (content: string) => ({ model: 'fake/m1', messages: [{ role: 'user', content }] });

/**
 * The start held: `createClaimed` answers once `release` is called (its statement answered
 * before); `order` gets `prepared` (the run binds its handed model), `gate` (its
 * first read of the bound model's language model: the stream's start, right before the gate),
 * `answered` (the start's answer let go); `sessionId()` the run's session once at `gate`. The next
 * request's run alone.
 */
function heldStart(app: App) {
  let gateSession = '';
  const order: string[] = [];
  const { release, statement } = holdStartAnswer(app, order);
  let reached!: () => void;
  const gate = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const bind = app.models.bind.bind(app.models);
  let once = false;
  app.models.bind = (resolved, request) => {
    const bound = bind(resolved, request);
    if (!bound || !request.sessionId || once) return bound;
    once = true;
    order.push('prepared');
    const sessionId = request.sessionId;
    let read = false;
    const model = bound.language_model;
    return Object.defineProperty({ ...bound }, 'language_model', {
      enumerable: true,
      get() {
        if (!read) {
          read = true;
          order.push('gate');
          gateSession = sessionId;
          reached();
        }
        return model;
      },
    });
  };
  /**
   * The run running already when its statement answered (on the base: launched only after the
   * answer, so nothing runs while it is held), then at its gate.
   */
  const atGate = async () => {
    await statement;
    expect(app.agent.active().map((run) => run.state)).toEqual(['running']);
    await gate;
  };
  return { order, release, atGate, sessionId: () => gateSession };
}

/**
 * The outcomes at the provider of the model requests of `prompt` (once each closed): `[]` when none
 * was sent, `['aborted']` when svc closed it before its answer was written whole.
 */
async function outcomesOf(provider: FakeProvider, prompt: string): Promise<string[]> {
  const sent = provider.requests.filter((request) => lastUser(request) === prompt);
  await until(
    () => sent.every((r) => provider.closed.some((c) => c.request === r)),
    'the model request closed',
  );
  return provider.closed.filter((c) => sent.includes(c.request)).map((c) => c.outcome);
}

describe.skipIf(!pg.available)('the model request’s gate of a run prepared during its start', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** A PostgreSQL compat service on a new database (`sql`), warmed by one streamed request; `requests` its model requests so far. */
  async function warmedServer() {
    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    const server = await compatServer([reply().text('warm'), laterOnly, laterOnly, laterOnly], {
      postgres: sql,
      allowExtra: true,
    });
    closers.push(() => server.app.close());
    await streamedAnswer(server.client);
    await settledCompatRow(server.app);
    return { ...server, sql, requests: server.provider.requests.length };
  }

  it('STORE-PG-894: a cancel issued once the run waits at its gate, before the start’s answer: the answer released, the model request, if sent, aborted; the run cancelled, the session idle; a later request works', async () => {
    const { app, post, provider, requests } = await warmedServer();

    const held = heldStart(app);
    closers.push(async () => held.release());
    const answering = post('/v1/chat/completions', body('stop me'));
    // Issued once the statement has answered (the session committed) and the run is at its gate,
    // not from the gate itself: the gate can be reached before the statement answers (the run is
    // prepared during the round trip), and a cancel then names a session no connection sees yet.
    await held.atGate();
    // The cancel answered in the window: its stop waits for the start's answer.
    const answer = await app.agent.cancel(held.sessionId());
    held.order.push('cancel answered');
    expect(answer.cancelled_run_id).toMatch(/^run_/);
    held.release();
    const response = await answering;
    await response.text();
    const row = await settledCompatRow(app);
    await app.bus.flush();

    // Prepared and at its gate before the answer (on the base: prepared after it, no cancel in it).
    expect(held.order).toEqual(['prepared', 'gate', 'cancel answered', 'answered']);
    // Its model request, if it went out in the window, aborted (p-pgmodel): none completed.
    expect(provider.requests.length - requests).toBeLessThanOrEqual(1);
    expect(['', 'aborted']).toContain((await outcomesOf(provider, 'stop me')).join());
    expect((await app.runs.get(row.run_id))?.status).toBe('cancelled');
    const events = (await app.runs.events(row.run_id)).map((e) => e.type);
    expect(events).not.toContain('step.started');
    expect(events.filter((type) => type === 'run.finished')).toHaveLength(1);
    expect((await app.agent.state(row.session_id)).state).toBe('idle');

    const later = await post('/v1/chat/completions', body('later'));
    expect(later.status).toBe(200);
    expect((await later.json()).choices[0].message.content).toBe('later');
    expect(await outcomesOf(provider, 'later')).toEqual(['completed']);
  });

  it('STORE-PG-895: a start failing after its statement committed while its run waits at its gate (STORE-PG-310’s fault): the model request, if sent, aborted; the client’s answer, the run cancelled, its events, the request’s row failed with that error; a later request works', async () => {
    const { app, post, provider, sql, requests } = await warmedServer();

    const fault = faultAfterWritten(app);
    const held = heldStart(app);
    closers.push(async () => held.release());
    const answering = post('/v1/chat/completions', body('fail me'));
    await held.atGate();
    held.release();
    const failed = await answering;
    const failedBody = await failed.json();
    fault.off();
    await app.bus.flush();

    expect(held.order).toEqual(['prepared', 'gate', 'answered']);
    // Its model request, if it went out in the window, aborted (p-pgmodel): none completed.
    expect(provider.requests.length - requests).toBeLessThanOrEqual(1);
    expect(['', 'aborted']).toContain((await outcomesOf(provider, 'fail me')).join());
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(failedBody).toEqual({ error: expect.stringMatching(/injected fault$/), code: failed.status });
    const [{ session_id: sessionId }] = await sql.query<{ session_id: string }>(
      "SELECT r.session_id FROM agent_runs r JOIN openai_compat_requests q ON q.run_id = r.id WHERE q.status = 'failed'",
    );
    const runs = await sql.query<{ id: string; status: string; reason: string }>(
      'SELECT id, status, reason FROM agent_runs WHERE session_id = $1',
      [sessionId],
    );
    expect(runs).toEqual([
      {
        id: expect.stringMatching(/^run_/),
        status: 'cancelled',
        reason: 'the chat-completions request failed at its start',
      },
    ]);
    expect((await app.runs.events(runs[0]!.id)).map((e) => e.type)).toEqual([
      'run.queued',
      'run.started',
      'phase',
      'openai_compat.request',
      'run.finished',
      'openai_compat.response',
    ]);
    const compat = await sql.query<Record<string, unknown>>(
      'SELECT status, http_status, error, finished_at FROM openai_compat_requests WHERE run_id = $1',
      [runs[0]!.id],
    );
    expect(compat).toEqual([
      {
        status: 'failed',
        http_status: failed.status,
        error: failedBody.error,
        finished_at: expect.anything(),
      },
    ]);
    expect((await app.agent.state(sessionId)).state).toBe('idle');
    expect(app.agent.active()).toEqual([]);

    const later = await post('/v1/chat/completions', body('later'));
    expect(later.status).toBe(200);
    expect((await later.json()).choices[0].message.content).toBe('later');
  });
});
