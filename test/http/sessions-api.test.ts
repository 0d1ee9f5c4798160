/**
 * The session API against a real server, driven by the TUI's own attach transport
 * (`createHttpClient`) — the client that needs it. Pins:
 * - every route of SESSION_ROUTES is served and listed in /v1/openapi.json (one list);
 * - create, list, get, update (model), messages, send (starts a run; returns its id), enqueue
 *   (queues behind the active run), cancel, delete;
 * - an open event stream attaches the client: a permission request waits, is listed, and the
 *   answer lets the tool run; a bad decision or an unknown request is a clear error.
 */
import { describe, expect, it } from 'vitest';
import { createHttpClient } from '../../src/surfaces/tui/http-client';
import { SESSION_ROUTES } from '../../src/tools/session-routes';
import { gateTool, touchTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { compatServer, TOKEN } from './compat-helpers';

async function waitFor<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, what: string) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('session API', () => {
  it('serves every SESSION_ROUTES route and lists it in the OpenAPI document', async () => {
    const { get } = await compatServer([]);
    const doc = (await (await get('/v1/openapi.json')).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    for (const value of Object.values(SESSION_ROUTES)) {
      const [method, path] = value.split(' ');
      const openapiPath = path.replace(/:([a-z_]+)/g, '{$1}');
      expect(doc.paths[openapiPath]?.[method.toLowerCase()], value).toBeDefined();
    }
  });

  it('creates, lists, gets, updates, sends, reads messages and deletes through the TUI client', async () => {
    const { url, app } = await compatServer([reply().text('First answer.')]);
    const client = createHttpClient({ url, token: TOKEN });
    try {
      const created = await client.createSession({ title: 'via http' });
      expect(created).toMatchObject({ title: 'via http', agent: 'build', mode: 'build' });
      expect((await client.listSessions()).map((s) => s.id)).toEqual([created.id]);
      expect(await client.getSession(created.id)).toMatchObject({ id: created.id, title: 'via http' });
      expect(await client.setSessionModel(created.id, 'fake/m2')).toMatchObject({ model: 'fake/m2' });
      await client.setSessionModel(created.id, 'fake/m1');

      const sent = await client.sendPrompt(created.id, 'Hello?');
      expect(sent.queued).toBe(false);
      expect(sent.run_id).toMatch(/^run_/);
      const result = await app.agent.wait(sent.run_id!);
      expect(result).toMatchObject({ status: 'completed', text: 'First answer.' });
      const messages = await client.messages(created.id);
      expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
      expect(messages[1].parts).toEqual([expect.objectContaining({ type: 'text', text: 'First answer.' })]);

      const run = await fetch(`${url}/v1/agent-runs/${sent.run_id}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(await run.json()).toMatchObject({
        run: { id: sent.run_id, status: 'completed' },
        result_text: 'First answer.',
      });

      const deleted = await fetch(`${url}/v1/sessions/${created.id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(deleted.status).toBe(200);
      expect(await deleted.json()).toEqual({ deleted: [created.id], count: 1 });
      await expect(client.getSession(created.id)).rejects.toMatchObject({ code: 'not_found' });
    } finally {
      await client.close();
    }
  });

  it('queues a prompt behind the active run and cancels the active run', async () => {
    const gate = gateTool();
    const { url, app } = await compatServer([reply().toolCall('gate', {}), reply().text('queued answer')], {
      extraTools: [gate.tool],
      allowExtra: true,
    });
    const client = createHttpClient({ url, token: TOKEN });
    try {
      const session = await client.createSession();
      const first = await client.sendPrompt(session.id, 'wait at the gate');
      await gate.reached;
      const second = await client.enqueue(session.id, 'then this');
      expect(second).toMatchObject({ queued: true, queue_length: 1 });
      expect((await app.agent.queue(session.id)).items.map((i) => i.run_id)).toEqual([second.run_id]);
      await client.cancel(session.id);
      expect((await app.agent.wait(first.run_id!)).status).toBe('cancelled');
    } finally {
      await client.close();
    }
  });

  it('holds a permission request while a stream is attached, lists it and runs the tool on allow', async () => {
    const log: string[] = [];
    const { url, app } = await compatServer(
      [reply().toolCall('touch', { name: 'marker' }), reply().text('touched it')],
      { extraTools: [touchTool(log)] },
    );
    const client = createHttpClient({ url, token: TOKEN });
    const session = await client.createSession();
    const events: string[] = [];
    const subscription = await client.subscribe(session.id, (event) => events.push(event.type));
    try {
      await waitFor(() => app.permissions.attachments(session.id).length > 0, 'the stream to attach');
      const sent = await client.sendPrompt(session.id, 'touch the marker');
      const pending = await waitFor(async () => {
        const list = await client.pendingPermissions(session.id);
        return list.length ? list : undefined;
      }, 'a pending permission');
      expect(pending[0]).toMatchObject({ session_id: session.id, tool: 'touch' });

      const bad = await fetch(`${url}/v1/sessions/${session.id}/permissions/${pending[0].request_id}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ decision: 'maybe' }),
      });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toEqual({
        error: {
          // The one invalid-input format of every surface (issue 14): the tool, the field, what
          // was expected and what came.
          message:
            'answer_permission: decision: expected one of allow_once, allow_session, deny, received "maybe"',
          type: 'invalid_input',
        },
      });
      await client.answerPermission(session.id, pending[0].request_id, 'allow_once');
      expect((await app.agent.wait(sent.run_id!)).status).toBe('completed');
      expect(log).toEqual(['marker']);
      await expect(client.answerPermission(session.id, pending[0].request_id, 'deny')).rejects.toMatchObject({
        code: 'not_found',
      });
      await waitFor(() => events.includes('run.finished'), 'the run events on the stream');
      expect(events).toEqual(
        expect.arrayContaining(['permission.requested', 'permission.resolved', 'tool.finished']),
      );
    } finally {
      subscription.close();
      await client.close();
    }
  });
});
