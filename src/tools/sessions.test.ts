/**
 * Sessions and messages tools. Pins TOOLS-47 (registered), TOOLS-48 (message send, list,
 * inspect, update, delete), create/switch/list/get/update/delete (with children), search,
 * posture, model and reasoning effort (mapped into the provider request).
 */
import { describe, expect, it } from 'vitest';
import { agentApp } from '../../test/helpers/agent-harness';
import { reply } from '../../test/helpers/fake-provider';
import { makeTestApp } from '../../test/helpers/make-test-app';
import type { App } from '../app';
import { invokeTool } from './core/call-tool';

const call = (app: App, name: string, input: Record<string, unknown> = {}, surface: 'mcp' | 'cli' = 'mcp') =>
  invokeTool(app, name, input, { surface }) as Promise<any>;

describe('sessions tools', () => {
  it('TOOLS-47: the session and message tools are registered', async () => {
    const app = await makeTestApp();
    for (const name of [
      'create_session',
      'switch_session',
      'list_sessions',
      'get_session',
      'update_session',
      'delete_session',
      'message',
      'session_search',
      'get_prompt_queue_status',
      'queue_enqueue',
      'get_session_posture_status',
      'set_session_model',
      'set_reasoning_effort',
    ]) {
      expect(app.tools.get(name), name).toBeDefined();
    }
  });

  it('create_session checks its model as update_session does: one no provider serves is refused, nothing made', async () => {
    const { app } = await agentApp([]);
    const refused = call(app, 'create_session', { title: 'x', model: 'nope/zz' });
    await expect(refused).rejects.toMatchObject({ code: 'not_found' });
    expect((await call(app, 'list_sessions')).sessions.map((s: { title: string }) => s.title)).not.toContain(
      'x',
    );
    const { session } = await call(app, 'create_session', { title: 'y', model: 'fake/m1' });
    expect(session.model).toBe('fake/m1');
    await expect(
      call(app, 'update_session', { session_id: session.id, model: 'nope/zz' }),
    ).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('TOOLS-48: message supports send, list, inspect, update and delete', async () => {
    const { app } = await agentApp([reply().text('pong')]);
    const { session } = await call(app, 'create_session', { title: 'chat', switch: true });
    const sent = await call(app, 'message', { action: 'send', text: 'ping' }, 'cli');
    expect(sent).toMatchObject({
      action: 'send',
      session_id: session.id,
      status: 'running',
      result: { status: 'completed', text: 'pong' },
    });
    const list = await call(app, 'message', { action: 'list', session_id: session.id });
    expect(list).toMatchObject({ count: 2, total: 2 });
    expect(list.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    const [user, assistant] = list.messages;
    expect(
      (await call(app, 'message', { action: 'inspect', message_id: assistant.id })).message,
    ).toMatchObject({
      id: assistant.id,
      parts: [{ type: 'text', text: 'pong' }],
      model: 'fake/m1',
    });
    const updated = await call(app, 'message', { action: 'update', message_id: user.id, text: 'ping!' });
    expect(updated).toMatchObject({
      previous_text: 'ping',
      message: { parts: [{ type: 'text', text: 'ping!' }] },
    });
    expect(await call(app, 'message', { action: 'delete', message_id: assistant.id })).toMatchObject({
      deleted: assistant.id,
    });
    expect((await call(app, 'message', { action: 'list', session_id: session.id })).count).toBe(1);
    await expect(call(app, 'message', { action: 'inspect', message_id: 'msg_nope' })).rejects.toThrow(
      'message_id: no message "msg_nope"',
    );
    await expect(call(app, 'message', { action: 'send' })).rejects.toThrow('text: required for action send');
    await expect(call(app, 'message', { action: 'archive' })).rejects.toThrow(/action/);
  });

  it('creates, switches, lists, gets, updates and deletes sessions (with their children)', async () => {
    const app = await makeTestApp();
    const a = (await call(app, 'create_session', { title: 'A' })).session;
    const child = (await call(app, 'create_session', { title: 'A child', parent_id: a.id })).session;
    const b = (await call(app, 'create_session', { title: 'B', agent: 'plan', mode: 'plan' })).session;
    expect(b).toMatchObject({ agent: 'plan', mode: 'plan', state: 'idle', workflow_phase: 'none' });
    await expect(call(app, 'create_session', { agent: 'explore' })).rejects.toThrow(
      '"explore" is a subagent agent',
    );

    expect(await call(app, 'switch_session', { session_id: a.id })).toMatchObject({
      session_id: a.id,
      previous_session_id: null,
    });
    expect((await call(app, 'list_sessions')).current_session_id).toBe(a.id);
    expect(
      (await call(app, 'list_sessions', { roots_only: true })).sessions
        .map((s: { id: string }) => s.id)
        .sort(),
    ).toEqual([a.id, b.id].sort());
    const got = await call(app, 'get_session');
    expect(got).toMatchObject({
      session: { id: a.id },
      children: [{ id: child.id, title: 'A child' }],
      last_run: null,
    });

    const updated = await call(app, 'update_session', { session_id: b.id, title: 'B2', mode: 'build' });
    expect(updated).toMatchObject({ session: { title: 'B2', mode: 'build' }, changed: ['title', 'mode'] });
    await expect(call(app, 'update_session', { session_id: b.id })).rejects.toThrow('nothing to update');

    const deleted = await call(app, 'delete_session', { session_id: a.id });
    expect(deleted.deleted.sort()).toEqual([a.id, child.id].sort());
    expect(await app.sessions.get(child.id)).toBeUndefined();
    expect(await app.agent.currentSession()).toBeNull();
    await expect(call(app, 'get_session')).rejects.toThrow(
      'session_id: required here (there is no current session)',
    );
  });

  it('session_search finds sessions by title and message text', async () => {
    const { app } = await agentApp([reply().text('the answer mentions zebras')]);
    const run = await app.agent.run({ prompt: 'tell me about animals' });
    await call(app, 'create_session', { title: 'unrelated' });
    const found = await call(app, 'session_search', { query: 'ZEBRA' });
    expect(found).toMatchObject({
      count: 1,
      results: [{ session_id: run.session_id, snippet: expect.stringContaining('zebras') }],
    });
  });

  it('session_search redacts a stored secret before it cuts and highlights the snippet (`**ghp**_…` kept the token)', async () => {
    const token = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789AB';
    const { app } = await agentApp([reply().text('noted')]);
    await app.agent.run({ prompt: `remember ${token} for later` });
    const found = await call(app, 'session_search', { query: 'ghp' });
    expect(found.count).toBe(1);
    const [hit] = found.results;
    expect(hit.snippet).toContain('[REDACTED]');
    expect(hit.highlight).toContain('[REDACTED]');
    expect(JSON.stringify(found)).not.toContain('abcdefghijklmnopqrstuvwxyz0123456789AB');
  });

  it('set_session_model validates the selector; set_reasoning_effort reaches the provider request', async () => {
    const { app, provider } = await agentApp([reply().text('ok')]);
    const { session } = await call(app, 'create_session');
    await expect(call(app, 'set_session_model', { session_id: session.id, model: 'nope/x' })).rejects.toThrow(
      'unknown provider "nope"',
    );
    expect(await call(app, 'set_session_model', { session_id: session.id, model: 'fake/m2' })).toMatchObject({
      model: 'fake/m2',
      previous: null,
    });
    expect(await call(app, 'set_reasoning_effort', { session_id: session.id, effort: 'high' })).toMatchObject(
      {
        reasoning_effort: 'high',
      },
    );
    await app.agent.run({ sessionId: session.id, prompt: 'think' });
    expect(provider.requests[0].body).toMatchObject({ model: 'm2', reasoning_effort: 'high' });
    const posture = await call(app, 'get_session_posture_status', { session_id: session.id });
    expect(posture).toMatchObject({
      model: { selector: 'fake/m2', source: 'session' },
      reasoning_effort: 'high',
      state: 'idle',
      permissions: { unattended: 'fail', auto_allow_read_only_bash: true, grants: [], pending: 0 },
      usage: { prompt_tokens: 10, completion_tokens: 5 },
    });
    expect(posture.tools.effective).toBeGreaterThan(10);
    expect(await call(app, 'set_reasoning_effort', { session_id: session.id, effort: 'none' })).toMatchObject(
      {
        reasoning_effort: null,
        previous: 'high',
      },
    );
  });
});
