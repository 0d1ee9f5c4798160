/**
 * A compat request's ledger row in its run's claim on PostgreSQL (issue 18 item 6, p-pgstart): the
 * row and its `openai_compat.request` event ride in the claim's statement (`svc_claim_run_started`
 * with the run's prompt phase); since p-pgclaimed a new session's run goes in already claimed, so
 * a lone request's start was four statements: BEGIN, the session and its run (running) with its
 * events and the compat row, the prompt's message, COMMIT; since p-pgstart2 the prompt message
 * rides in the run's statement, which goes without BEGIN and COMMIT (`SqlClient.alone`): one.
 * The run's events keep their order and the row its values.
 */
import { describe, expect, it } from 'vitest';
import type { ClaimAlongside } from '../../src/runs/types';
import { compatRequestRow } from '../helpers/compat-request-row';
import { reply } from '../helpers/fake-provider';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { BACKGROUND_STATEMENT, compatServer, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();

describe.skipIf(!pg.available)('a compat request’s row in its run’s claim on PostgreSQL', () => {
  it('STORE-PG-280, STORE-PG-289: a lone compat request’s start is one statement (no BEGIN, no COMMIT): its session, run, claim, ledger row, events and prompt message; the rows and events as before', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const statements = driverStatements();
    const { app, client } = await compatServer([reply().text('warm'), reply().text('one').usage(7, 3)], {
      postgres: sql,
    });
    try {
      await streamedAnswer(client);
      await settledCompatRow(app);
      await app.bus.flush();
      const from = statements.sent.length;
      expect(await streamedAnswer(client)).toBe('one');
      const row = await settledCompatRow(app);
      // Without the node's background statements (an earlier request's sweep may land here).
      const sent = statements.sent.slice(from).filter((t) => !BACKGROUND_STATEMENT.test(t));
      // p-pgclaimed: the new session's run goes in already claimed (no claim statement);
      // p-pgstart2: its prompt message in the same statement, which goes without BEGIN and
      // COMMIT (nothing else in its transaction): the start is that one statement.
      expect(sent).not.toContain('BEGIN');
      expect(sent).not.toContain('COMMIT');
      const start = sent.filter((t) => /INSERT INTO sessions /.test(t));
      expect(start).toHaveLength(1);
      expect(start[0]).toMatch(
        /INSERT INTO sessions .*INSERT INTO agent_runs .*INSERT INTO openai_compat_requests .*INSERT INTO messages .*INSERT INTO message_search_docs /s,
      );
      expect(start[0]).not.toMatch(/svc_claim_run/);
      // The first statement the request sends.
      expect(sent[0]).toBe(start[0]);
      expect(sent.filter((t) => /INSERT INTO messages /.test(t))).toHaveLength(2); // the prompt, the answer
      expect(sent.filter((t) => /svc_claim_run/.test(t))).toHaveLength(0);
      // The row is written once, in the claim: no statement of its own.
      expect(sent.filter((t) => /INSERT INTO openai_compat_requests /.test(t))).toHaveLength(1);

      expect(row).toMatchObject({
        run_id: expect.stringMatching(/^run_/),
        requested_model: 'fake/m1',
        model: 'fake/m1',
        stream: true,
        session_binding: 'new',
        message_count: 1,
        status: 'completed',
        http_status: 200,
        prompt_tokens: 7,
        completion_tokens: 3,
      });
      const events = await app.runs.events(row.run_id);
      expect(events.slice(0, 4).map((e) => [e.seq, e.type])).toEqual([
        [1, 'run.queued'],
        [2, 'run.started'],
        [3, 'phase'],
        [4, 'openai_compat.request'],
      ]);
      expect(events[3].payload).toMatchObject({
        request_id: row.request_id,
        stream: true,
        session_binding: 'new',
        messages: 1,
        prompt: 'user',
      });
      expect(events.filter((e) => e.type === 'openai_compat.request')).toHaveLength(1);
      expect(events.at(-1)?.type).toBe('openai_compat.response');
    } finally {
      statements.restore();
      await app.close();
      await sql.close();
    }
  });

  it('STORE-PG-282: a send’s claim insert tells `opened` only when the claim wrote it, after `written` and the prompt message; a run queued behind another is told neither', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const { app } = await compatServer([reply().text('one'), reply().text('two')], { postgres: sql });
    try {
      const session = await app.agent.createSession({ title: 't' });
      const told: string[] = [];
      // What the messages table holds when `opened` is told (another connection: committed rows).
      const atOpened: Promise<{ role: string }[]>[] = [];
      const along =
        (requestId: string) =>
        (runId: string): ClaimAlongside => ({
          runId,
          write: app.compatRequests.insertAfterClaim!(
            compatRequestRow(
              { request_id: requestId, run_id: runId, session_id: session.id },
              {
                requested_model: 'fake/m1',
                model_source: 'request',
                stream: false,
                session_binding: 'header',
                message_count: 1,
                ignored_fields: [],
                created_at: 1,
              },
            ),
          ),
          event: { type: 'openai_compat.request', payload: { request_id: requestId } },
          written: () => told.push(`written ${requestId}`),
          opened: () => {
            told.push(`opened ${requestId}`);
            atOpened.push(sql.query('SELECT role FROM messages WHERE run_id = $1', [runId]));
          },
        });
      const first = await app.agent.send({
        sessionId: session.id,
        prompt: 'first',
        ifBusy: 'queue',
        claimAlongside: along('req-a'),
      });
      // Sent while the first runs: queued behind it, started later by the first's finish.
      const second = await app.agent.send({
        sessionId: session.id,
        prompt: 'second',
        ifBusy: 'queue',
        claimAlongside: along('req-b'),
      });
      expect(first.status).toBe('running');
      expect(second.status).toBe('queued');
      await app.agent.wait(first.run_id);
      await app.agent.wait(second.run_id);
      expect(told).toEqual(['written req-a', 'opened req-a']);
      expect(await Promise.all(atOpened)).toEqual([[{ role: 'user' }]]);
      const messages = await sql.query<{ role: string; run_id: string }>(
        'SELECT role, run_id FROM messages WHERE session_id = $1 ORDER BY created_at, id',
        [session.id],
      );
      expect(messages.filter((m) => m.role === 'user').map((m) => m.run_id)).toEqual([
        first.run_id,
        second.run_id,
      ]);
      expect((await app.compatRequests.get('req-a'))?.run_id).toBe(first.run_id);
      // Not written in the queued run's claim: the caller records it (here: nothing did).
      expect(await app.compatRequests.get('req-b')).toBeUndefined();
    } finally {
      await app.close();
      await sql.close();
    }
  });
  it('STORE-PG-292: only a new session’s run goes in claimed: a request bound to its session claims it (svc_claim_run_started) and publishes queue, queue, run.started; both runs’ events the same', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const statements = driverStatements();
    const { app, post } = await compatServer([reply().text('one'), reply().text('two')], { postgres: sql });
    try {
      const body = (content: string) => ({ model: 'fake/m1', messages: [{ role: 'user', content }] });
      const first = await post('/v1/chat/completions', body('first'));
      expect(first.status).toBe(200);
      await first.json();
      const sessionId = first.headers.get('x-svc-session-id')!;
      await settledCompatRow(app);
      await app.bus.flush();
      const seen: string[] = [];
      const off = app.bus.subscribe(sessionId, (event) => {
        if (['queue.changed', 'run.started'].includes(event.type)) {
          const length = (event.payload as { length?: number }).length;
          seen.push(length === undefined ? event.type : `${event.type} ${length}`);
        }
      });
      const from = statements.sent.length;
      const bound = await post('/v1/chat/completions', body('second'), { 'x-svc-session-id': sessionId });
      expect(bound.status).toBe(200);
      await bound.json();
      off();
      const sent = statements.sent.slice(from);
      expect(sent.filter((t) => /svc_claim_run_started\(/.test(t))).toHaveLength(1);
      expect(seen.slice(0, 3)).toEqual(['queue.changed 1', 'queue.changed 0', 'run.started']);
      const runs = await app.runs.list({ session_id: sessionId });
      expect(runs).toHaveLength(2);
      for (const run of runs) {
        const events = await app.runs.events(run.id);
        expect(events.slice(0, 4).map((e) => [e.seq, e.type])).toEqual([
          [1, 'run.queued'],
          [2, 'run.started'],
          [3, 'phase'],
          [4, 'openai_compat.request'],
        ]);
        expect(events[1]!.payload).toEqual({
          agent: run.agent,
          origin: run.origin,
          pid: run.pid,
          options: run.options,
        });
      }
    } finally {
      statements.restore();
      await app.close();
      await sql.close();
    }
  });
  it('STORE-PG-295: a new compat session’s prompt message goes in its run’s statement: the row, its search row and the session events as an append leaves them; the session row not read', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const statements = driverStatements();
    const { app, provider, post } = await compatServer([reply().text('warm'), reply().text('one')], {
      postgres: sql,
    });
    try {
      const body = (content: string) => ({ model: 'fake/m1', messages: [{ role: 'user', content }] });
      await (await post('/v1/chat/completions', body('warm up'))).json();
      await settledCompatRow(app);
      await app.bus.flush();
      const from = statements.sent.length;
      const answer = await post('/v1/chat/completions', body('zebra crossing'));
      expect(answer.status).toBe(200);
      await answer.json();
      const sessionId = answer.headers.get('x-svc-session-id')!;
      const row = await settledCompatRow(app);
      await app.bus.flush();
      const sent = statements.sent.slice(from);
      // The prompt in the run's statement, not on its own; the new session's row not read.
      const prompt = sent.filter((t) => /INSERT INTO messages /.test(t));
      expect(prompt).toHaveLength(2); // the prompt, the answer
      expect(prompt[0]).toMatch(/INSERT INTO agent_runs .*INSERT INTO messages /s);
      expect(sent.filter((t) => /SELECT \* FROM sessions WHERE id/.test(t))).toEqual([]);
      // The model got the prompt as the first step's history.
      const request = JSON.stringify(provider.requests.at(-1)?.body ?? {});
      expect(request).toContain('zebra crossing');

      const messages = await sql.query<Record<string, unknown>>(
        `SELECT id, session_id, role, parts, model, provider, usage, cost, run_id, created_at, updated_at, finished_at
           FROM messages WHERE session_id = $1 ORDER BY created_at, row_seq`,
        [sessionId],
      );
      expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
      const user = messages[0]!;
      expect(user).toMatchObject({
        session_id: sessionId,
        role: 'user',
        run_id: row.run_id,
        model: null,
        provider: null,
        usage: null,
        cost: 0,
      });
      expect(JSON.parse(user.parts as string)).toEqual([{ type: 'text', text: 'zebra crossing' }]);
      expect(user.updated_at).toBe(user.created_at);
      expect(user.finished_at).toBe(user.created_at);
      expect(await app.sessions.getMessage(user.id as string)).toMatchObject({
        id: user.id,
        role: 'user',
        parts: [{ type: 'text', text: 'zebra crossing' }],
      });
      // Its search row: the session search finds it.
      const docs = await sql.query<{ body: string }>(
        'SELECT body FROM message_search_docs WHERE message_id = $1',
        [user.id],
      );
      expect(docs).toEqual([{ body: expect.stringContaining('zebra crossing') }]);
      // The session's events in the order the claim path publishes them, the prompt's after run.started.
      const events = (await app.bus.retained(sessionId)).map((e) => e.type);
      const order = ['queue.changed', 'queue.changed', 'run.started', 'message.created', 'message.completed'];
      expect(events.filter((t) => order.includes(t)).slice(0, 5)).toEqual(order);
      const created = (await app.bus.retained(sessionId)).find((e) => e.type === 'message.created');
      expect(created?.payload).toEqual({
        session_id: sessionId,
        message_id: user.id,
        role: 'user',
        run_id: row.run_id,
      });
    } finally {
      statements.restore();
      await app.close();
      await sql.close();
    }
  });
});
