/**
 * The agent may not lift its own restrictions nor act on other sessions (security probe, plan-mode
 * escape): a model's `update_session {"mode":"build"}` in a plan-mode session is refused and
 * reaches the model as a tool error, the mode stays plan and nothing is written; the operator's
 * PATCH still leaves plan mode; a model's `cancel_session_run` of another session's run is refused
 * and that run goes on. A real server and the scripted fake provider.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { until } from '../helpers/until';
import { type CompatServer, compatServer } from './compat-helpers';

const WRITE_ALLOWED = { permissions: { allowed_tools: ['write', 'cancel_session_run'] } };

/** The `tool` messages of a recorded provider request, as text. */
function toolResults(server: CompatServer, request: number): string[] {
  return server.provider.requests[request].body.messages
    .filter((m: { role: string }) => m.role === 'tool')
    .map((m: { content: unknown }) =>
      typeof m.content === 'string' ? m.content : JSON.stringify(m.content),
    );
}

const offered = (server: CompatServer, request: number): string[] =>
  (server.provider.requests[request].body.tools ?? []).map((t: any) => t.function.name);

async function json(response: Response): Promise<any> {
  const body = await response.json();
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${JSON.stringify(body)}`);
  return body;
}

async function createSession(server: CompatServer, body: Record<string, unknown>): Promise<string> {
  return (await json(await server.post('/v1/sessions', body))).session.id;
}

async function sessionMode(server: CompatServer, id: string): Promise<string> {
  return (await json(await server.get(`/v1/sessions/${id}`))).session.mode;
}

const patch = (server: CompatServer, id: string, body: unknown) =>
  fetch(`${server.url}/v1/sessions/${id}`, {
    method: 'PATCH',
    headers: { authorization: 'Bearer compat-test-token-7', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('the agent and session state', () => {
  it('a plan-mode run cannot switch its session to build: refused as a tool error, nothing written', async () => {
    const server = await compatServer(
      [
        reply().toolCall('update_session', { mode: 'build' }),
        reply().toolCall('write', { path: 'ESCAPED.txt', content: 'x' }),
        reply().text('I stay in plan mode.'),
      ],
      { extraConfig: WRITE_ALLOWED },
    );
    const id = await createSession(server, { mode: 'plan' });
    await json(await server.post(`/v1/sessions/${id}/messages`, { prompt: 'leave plan mode', wait: true }));

    expect(await sessionMode(server, id)).toBe('plan');
    expect(toolResults(server, 1).join('\n')).toContain(
      `plan mode is left by the user (PATCH /v1/sessions/${id} with mode build`,
    );
    expect(offered(server, 1)).not.toContain('write');
    expect(offered(server, 1)).not.toContain('bash');
    expect(existsSync(join(server.app.workspace, 'ESCAPED.txt'))).toBe(false);
  });

  it("the operator's PATCH still leaves plan mode, and the next run may write", async () => {
    const server = await compatServer(
      [
        reply().toolCall('update_session', { mode: 'build' }),
        reply().text('Refused.'),
        reply().toolCall('write', { path: 'ALLOWED.txt', content: 'x' }),
        reply().text('Written.'),
      ],
      { extraConfig: WRITE_ALLOWED },
    );
    const id = await createSession(server, { mode: 'plan' });
    await json(await server.post(`/v1/sessions/${id}/messages`, { prompt: 'leave plan mode', wait: true }));
    expect(await sessionMode(server, id)).toBe('plan');

    expect((await json(await patch(server, id, { mode: 'build' }))).session.mode).toBe('build');
    await json(await server.post(`/v1/sessions/${id}/messages`, { prompt: 'now write', wait: true }));
    expect(offered(server, 2)).toContain('write');
    expect(existsSync(join(server.app.workspace, 'ALLOWED.txt'))).toBe(true);
  });

  it("a run cannot cancel another session's run; the operator can", async () => {
    const server = await compatServer([reply().hang(30_000)], { extraConfig: WRITE_ALLOWED });
    const other = await createSession(server, {});
    const busy = await json(await server.post(`/v1/sessions/${other}/messages`, { prompt: 'work a while' }));
    await until(() => server.provider.requests.length === 1, "the other session's run at its model call");
    server.provider.push(
      reply().toolCall('cancel_session_run', { session_id: other, clear_queue: true }),
      reply().text('Could not cancel it.'),
    );

    const own = await createSession(server, {});
    await json(await server.post(`/v1/sessions/${own}/messages`, { prompt: 'cancel the other', wait: true }));

    expect(toolResults(server, 2).join('\n')).toContain(
      `session_id: ${other} is not the session this run works in`,
    );
    expect((await json(await server.get(`/v1/agent-runs/${busy.run_id}`))).run.status).toBe('running');

    await json(await server.post(`/v1/sessions/${other}/cancel`, {}));
    await until(
      async () => (await json(await server.get(`/v1/agent-runs/${busy.run_id}`))).run.status !== 'running',
      'the cancelled run to stop',
    );
  });
});
