/**
 * A lone compat start's first model request sent during the start's round trip on PostgreSQL
 * (issue 18 item 6, p-pgmodel: src/agent/early-request.ts, src/agent/step-ends.ts `startGate`).
 * The model request leaves once the run's first step is prepared, before the start statement's
 * answer; the model's stream is read only after that answer, so nothing of the step (its events,
 * the compat answer's head and content) exists before it. A start failing after the request went
 * out, or a stop asked in the window, aborts it: the provider sees its connection closed before
 * its answer was written whole, and nothing of that answer is stored. The start's answer is held
 * by the test (its `createClaimed` answers only when released) until the provider has the request,
 * so the order is the test's, not the load's (bounded: on a build that asks the model only after
 * the answer, the request never comes while it is held). svc's own step driver's behaviour: with
 * `SVC_STEP_DRIVER=sdk` the model is still asked after the answer (STORE-PG-909), so these three
 * fail under that variable, as STORE-PG-908 does.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type RecordedRequest, reply } from '../helpers/fake-provider';
import { faultAfterWritten, holdStartAnswer } from '../helpers/held-answer';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';
import { until } from '../helpers/until';
import { compatServer, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();

const streamed = (content: string) => ({
  model: 'fake/m1',
  stream: true,
  messages: [{ role: 'user', content }],
});

const lastUser = (request: RecordedRequest): string => {
  const messages = (request.body?.messages ?? []) as { role: string; content: unknown }[];
  const content = messages.filter((m) => m.role === 'user').at(-1)?.content;
  return typeof content === 'string' ? content : JSON.stringify(content);
};

/** How long a held start waits for the model request at most (only a build that asks after the answer waits it out). */
const HOLD_MS = 3_000;

describe.skipIf(!pg.available)(
  'a lone compat start’s model request sent in its round trip on PostgreSQL',
  () => {
    const closers: (() => Promise<unknown>)[] = [];
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close();
    });

    /**
     * A PostgreSQL compat service after one warm request. The model answers `the answer` to `go`,
     * `later` to `later`, and holds any other prompt's answer after its headers (never written
     * whole); `order` gets `model <prompt>` as each request arrives, `arrived(prompt)` resolves then.
     */
    async function warmed(order: string[]) {
      const sql = await migratedDatabase(pg.cluster());
      closers.push(() => sql.close());
      const waiters = new Map<string, () => void>();
      const arrivals = new Map<string, Promise<void>>();
      const arrived = (prompt: string) => {
        let promise = arrivals.get(prompt);
        if (!promise) {
          promise = new Promise<void>((resolve) => waiters.set(prompt, resolve));
          arrivals.set(prompt, promise);
        }
        return promise;
      };
      const never = new Promise<void>(() => {});
      const answer = (request: RecordedRequest) => {
        const prompt = lastUser(request);
        order.push(`model ${prompt}`);
        arrived(prompt);
        waiters.get(prompt)?.();
        if (prompt === 'go') return reply().text('the answer');
        if (prompt === 'later') return reply().text('later');
        return reply().text('never stored').pauseAt(0, never);
      };
      const server = await compatServer([reply().text('warm'), answer, answer, answer], {
        postgres: sql,
        allowExtra: true,
      });
      closers.push(() => server.app.close());
      await streamedAnswer(server.client);
      await settledCompatRow(server.app);
      order.length = 0;
      const waitFor = (prompt: string) =>
        Promise.race([arrived(prompt), new Promise<void>((resolve) => setTimeout(resolve, HOLD_MS))]);
      return { ...server, sql, arrived: waitFor };
    }

    /** The held request's model call: closed by svc before its answer was written whole, or still open. */
    async function abortedAtProvider(server: Awaited<ReturnType<typeof warmed>>, prompt: string) {
      const sent = server.provider.requests.filter((request) => lastUser(request) === prompt);
      expect(sent).toHaveLength(1);
      await until(
        () => server.provider.closed.some((c) => c.request === sent[0]),
        'the held model request’s connection closed',
        5_000,
      );
      return server.provider.closed.filter((c) => c.request === sent[0]).map((c) => c.outcome);
    }

    /** Nothing of the model's answer in the store: no assistant message, no step, no answered model call. */
    async function nothingOfTheAnswer(
      server: Awaited<ReturnType<typeof warmed>>,
      sessionId: string,
      runId: string,
    ) {
      const messages = await server.sql.query<{ role: string }>(
        'SELECT role FROM messages WHERE session_id = $1',
        [sessionId],
      );
      expect(messages.map((m) => m.role)).toEqual(['user']);
      const types = (await server.app.runs.events(runId)).map((e) => e.type);
      expect(types).not.toContain('step.started');
      expect(types).not.toContain('step.finished');
      expect(types.filter((type) => type === 'run.finished')).toHaveLength(1);
      // An aborted call may leave its failed row (before its headers: the metered model's end), never an answered one.
      const calls = await server.sql.query<{ status: string; output_tokens: string }>(
        'SELECT status, output_tokens FROM model_calls WHERE run_id = $1',
        [runId],
      );
      for (const call of calls) expect([call.status, Number(call.output_tokens)]).toEqual(['error', 0]);
      const events = await server.sql.query<{ type: string }>(
        'SELECT type FROM session_events WHERE session_id = $1',
        [sessionId],
      );
      expect(events.map((e) => e.type)).not.toContain('message.delta');
    }

    it('STORE-PG-915: the model request reaches the provider before the start’s answer; no step event or compat content before it; the answer and row as ever', async () => {
      const order: string[] = [];
      const server = await warmed(order);
      const { app } = server;
      const held = holdStartAnswer(app, order);
      closers.push(async () => held.release());
      // Every event of the held request's session, marked as it is published.
      // The step's events (its phase, its assistant message, its deltas), marked as published; the
      // start's own (its prompt's message.created …) come with the statement's answer, before the hold.
      const unsubscribe = app.bus.subscribe('*', (event) => {
        const assistant = JSON.stringify(event.payload).includes('"role":"assistant"');
        if (event.type === 'message.delta' || (event.type === 'message.created' && assistant))
          order.push(`event ${event.type}`);
        else if (event.type === 'phase' || event.type === 'step.started') order.push(`event ${event.type}`);
      });
      closers.push(async () => unsubscribe());
      let text = '';
      const answering = server.post('/v1/chat/completions', streamed('go')).then(async (response) => {
        order.push('client head');
        const reader = response.body!.getReader();
        const decoder = new TextDecoder();
        let body = '';
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          const chunk = decoder.decode(value, { stream: true });
          if (chunk.includes('"content":"the') && !body.includes('"content":"the'))
            order.push('client content');
          body += chunk;
        }
        text = body;
        return response.status;
      });
      await server.arrived('go');
      // Held a moment more with the request out: nothing of the step may come meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 100));
      order.push('released');
      held.release();
      expect(await answering).toBe(200);
      const row = await settledCompatRow(app);
      await app.bus.flush();

      // On the base: the model asked only after the answer (the hold runs out first).
      expect(order.slice(0, 3)).toEqual(['model go', 'released', 'answered']);
      const released = order.indexOf('released');
      for (const mark of ['client head', 'client content', 'event message.delta'])
        expect(order.indexOf(mark), mark).toBeGreaterThan(released);
      // No event of the step before the answer (the first comes after it).
      expect(order.findIndex((mark) => mark.startsWith('event '))).toBeGreaterThan(released);
      expect(text).toContain('"content":"the');
      expect(text.trim().endsWith('data: [DONE]')).toBe(true);
      expect(row.status).toBe('completed');
      expect(
        server.provider.closed.filter((c) => lastUser(c.request) === 'go').map((c) => c.outcome),
      ).not.toContain('aborted');
    });

    it('STORE-PG-916: a start failing after its model request went out (STORE-PG-310’s fault): the request aborted at the provider, the 5xx answer, nothing of the model’s answer stored; a later request works', async () => {
      const order: string[] = [];
      const server = await warmed(order);
      const { app } = server;
      const fault = faultAfterWritten(app);
      const held = holdStartAnswer(app, order);
      closers.push(async () => held.release());
      const answering = server.post('/v1/chat/completions', streamed('fail me'));
      await server.arrived('fail me');
      order.push('released');
      held.release();
      const failed = await answering;
      const failedBody = await failed.json();
      fault.off();
      await app.bus.flush();

      expect(order).toEqual(['model fail me', 'released', 'answered']);
      expect(await abortedAtProvider(server, 'fail me')).toEqual(['aborted']);
      expect(failed.status).toBeGreaterThanOrEqual(500);
      expect(failedBody).toEqual({ error: expect.stringMatching(/injected fault$/), code: failed.status });
      const [run] = await server.sql.query<{ id: string; session_id: string; status: string }>(
        "SELECT r.id, r.session_id, r.status FROM agent_runs r JOIN openai_compat_requests q ON q.run_id = r.id WHERE q.status = 'failed'",
      );
      expect(run?.status).toBe('cancelled');
      await nothingOfTheAnswer(server, run!.session_id, run!.id);
      expect((await app.agent.state(run!.session_id)).state).toBe('idle');
      expect(app.agent.active()).toEqual([]);

      const later = await server.post('/v1/chat/completions', { ...streamed('later'), stream: false });
      expect(later.status).toBe(200);
      expect((await later.json()).choices[0].message.content).toBe('later');
    });

    it('STORE-PG-917: a stop asked after the model request went out, before the start’s answer: the request aborted at the provider, the run cancelled with nothing of the model’s answer stored; a later request works', async () => {
      const order: string[] = [];
      const server = await warmed(order);
      const { app } = server;
      const held = holdStartAnswer(app, order);
      closers.push(async () => held.release());
      const answering = server.post('/v1/chat/completions', { ...streamed('stop me'), stream: false });
      await server.arrived('stop me');
      // Issued once the statement has answered too (the session committed: a cancel before names a
      // session no connection sees yet), the answer still held.
      await held.statement;
      // The request's session: the one running run (launched in the window).
      const [running] = app.agent.active();
      expect(running?.state).toBe('running');
      const cancelled = await app.agent.cancel(running!.session_id);
      expect(cancelled.cancelled_run_id).toMatch(/^run_/);
      order.push('cancel answered');
      held.release();
      const response = await answering;
      await response.text();
      const row = await settledCompatRow(app);
      await app.bus.flush();

      expect(order).toEqual(['model stop me', 'cancel answered', 'answered']);
      expect(await abortedAtProvider(server, 'stop me')).toEqual(['aborted']);
      expect((await app.runs.get(row.run_id))?.status).toBe('cancelled');
      await nothingOfTheAnswer(server, row.session_id, row.run_id);
      expect((await app.agent.state(row.session_id)).state).toBe('idle');

      const later = await server.post('/v1/chat/completions', { ...streamed('later'), stream: false });
      expect(later.status).toBe(200);
      expect((await later.json()).choices[0].message.content).toBe('later');
    });
  },
);
