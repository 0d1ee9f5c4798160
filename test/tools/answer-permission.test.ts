/**
 * answer_permission and list_permission_requests: the one way every client answers a permission
 * request (HTTP's session route, both TUI clients, ACP, svc run). Pins:
 * - in process: the request is listed, allow_once lets the waiting call run, the answer says who
 *   answered (the surface, or `by`);
 * - deny with a message: the model reads the operator's reason with the refusal;
 * - over HTTP, on the session route: the same answer shape, `by` from the body, and a bad
 *   decision named in the one invalid-input format (the same message in process);
 * - a request of another session, or one already answered, is not_found;
 * - an agent cannot answer a request of its own session family.
 */
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { createHttpApp } from '../../src/surfaces/http/index';
import { callTool, invokeTool } from '../../src/tools/core/call-tool';
import { agentApp, touchTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';

async function waitFor<T>(probe: () => T | undefined | false): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A run of `touch` waiting for its permission answer in a session an operator is attached to. */
async function waiting(script = [reply().toolCall('touch', { name: 'marker' }), reply().text('done')]) {
  const log: string[] = [];
  const { app, provider } = await agentApp(script, { extraTools: [touchTool(log)] });
  const session = await app.sessions.create({ title: 'permissions' });
  app.agent.attach(session.id, 'test');
  const sent = await app.agent.send({ sessionId: session.id, prompt: 'touch the marker' });
  const listed = await waitFor(() => {
    const pending = app.agent.pendingPermissions(session.id);
    return pending.length ? pending : undefined;
  });
  return { app, provider, log, session, sent, request: listed[0] };
}

const list = (app: App, sessionId: string) =>
  invokeTool(app, 'list_permission_requests', { session_id: sessionId }, { surface: 'tui' }) as Promise<{
    session_id: string;
    permissions: { request_id: string; tool: string }[];
    count: number;
  }>;

describe('answer_permission', () => {
  it('lists a waiting request and answers it in process; the call runs', async () => {
    const { app, log, session, sent, request } = await waiting();
    const listed = await list(app, session.id);
    expect(listed).toMatchObject({ session_id: session.id, count: 1 });
    expect(listed.permissions[0]).toMatchObject({ request_id: request.request_id, tool: 'touch' });

    const answer = await invokeTool(
      app,
      'answer_permission',
      { session_id: session.id, request_id: request.request_id, decision: 'allow_once' },
      { surface: 'tui' },
    );
    expect(answer).toEqual({
      session_id: session.id,
      request_id: request.request_id,
      tool: 'touch',
      decision: 'allow_once',
      by: 'tui',
    });
    expect((await app.agent.wait(sent.run_id)).status).toBe('completed');
    expect(log).toEqual(['marker']);
    expect((await list(app, session.id)).count).toBe(0);
    // Answered already: the first answer won.
    const late = await callTool(
      app,
      'answer_permission',
      { session_id: session.id, request_id: request.request_id, decision: 'deny' },
      { surface: 'tui' },
    );
    expect(late).toMatchObject({ ok: false, stage: 'run', error: { code: 'not_found' } });
  });

  it("denies with a message: the model reads the operator's reason", async () => {
    const { app, provider, log, session, sent, request } = await waiting([
      reply().toolCall('touch', { name: 'marker' }),
      reply().text('understood'),
    ]);
    const answer = await invokeTool(
      app,
      'answer_permission',
      {
        session_id: session.id,
        request_id: request.request_id,
        decision: 'deny',
        message: 'not on a Friday',
        by: 'reviewer',
      },
      { surface: 'acp' },
    );
    expect(answer).toMatchObject({ decision: 'deny', by: 'reviewer', message: 'not on a Friday' });
    expect((await app.agent.wait(sent.run_id)).status).toBe('completed');
    expect(log).toEqual([]);
    const toolMessage = (provider.requests[1].body.messages as { role: string; content: string }[]).find(
      (m) => m.role === 'tool',
    );
    expect(toolMessage?.content).toBe(
      'forbidden: permission denied by the operator: touch (the operator says: not on a Friday). Do not retry the same call; ask the user or try another approach',
    );
    expect(
      (await app.runs.events(sent.run_id)).find((e) => e.type === 'permission.resolved')?.payload,
    ).toMatchObject({
      decision: 'deny',
      by: 'reviewer',
      message: 'not on a Friday',
    });
  });

  it('answers over HTTP on the session route, with the same validation as in process', async () => {
    const { app, session, sent, request } = await waiting();
    const hono = createHttpApp(app, { token: 't' });
    const post = (body: unknown, requestId = request.request_id, sessionId = session.id) =>
      hono.request(`/v1/sessions/${sessionId}/permissions/${requestId}`, {
        method: 'POST',
        headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const expected =
      'answer_permission: decision: expected one of allow_once, allow_session, deny, received "maybe"';
    const bad = await post({ decision: 'maybe' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: { message: expected, type: 'invalid_input' } });
    const inProcess = await callTool(
      app,
      'answer_permission',
      { session_id: session.id, request_id: request.request_id, decision: 'maybe' },
      { surface: 'tui' },
    );
    expect(inProcess).toMatchObject({ ok: false, stage: 'input', error: { message: expected } });

    const other = await app.sessions.create({ title: 'other' });
    const elsewhere = await post({ decision: 'allow_once' }, request.request_id, other.id);
    expect(elsewhere.status).toBe(404);
    expect(((await elsewhere.json()) as { error: { message: string } }).error.message).toContain(
      `no pending permission request "${request.request_id}" in session ${other.id}`,
    );

    const ok = await post({ decision: 'allow_session', by: '  web dashboard  ' });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({
      session_id: session.id,
      request_id: request.request_id,
      tool: 'touch',
      decision: 'allow_session',
      by: 'web dashboard',
    });
    expect((await app.agent.wait(sent.run_id)).status).toBe('completed');
    expect(await app.permissions.grants(session.id)).toMatchObject([{ tool: 'touch' }]);
  });

  it('refuses an agent answering a request of its own session family', async () => {
    const { app, session, sent, request } = await waiting();
    const outcome = await callTool(
      app,
      'answer_permission',
      { session_id: session.id, request_id: request.request_id, decision: 'allow_once' },
      { surface: 'agent', sessionId: session.id },
    );
    expect(outcome).toMatchObject({ ok: false, stage: 'run', error: { code: 'forbidden' } });
    expect(app.agent.pendingPermissions(session.id)).toHaveLength(1);
    await app.agent.cancel(session.id);
    await app.agent.wait(sent.run_id);
  });
});
