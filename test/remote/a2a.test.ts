/**
 * A2A end to end: two svc HTTP servers on 127.0.0.1:0, each serving A2A ([a2a] enabled) and
 * delegating to the other. Pins:
 * - TOOLS-54: a2a_delegate reaches a remote agent by card URL, by name and by capability; the
 *   remote runs a session through its agent and the answer comes back;
 * - the card is served at /.well-known/agent-card.json and agent.json, behind bearer auth, and
 *   only with [a2a] enabled;
 * - JSON-RPC errors: unknown method, unknown task, bad params;
 * - delegated tasks are tracked, re-checked by task_id and deleted by delete_a2a_task (TOOLS-55).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { startHttpServer } from '../../src/surfaces/http/server';
import { invokeTool } from '../../src/tools/core/call-tool';
import { type FakeProvider, fakeProvider, reply, type ScriptEntry } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';

interface Peer {
  app: App;
  url: string;
  token: string;
  provider: FakeProvider;
  config: Record<string, unknown>;
}

async function peer(name: string, script: ScriptEntry[], a2a: Record<string, unknown> = {}): Promise<Peer> {
  const provider = await fakeProvider(script);
  const token = `token-${name}-0123456789`;
  const config: Record<string, unknown> = {
    providers: { fake: { type: 'openai-compat', base_url: provider.url } },
    models: { large: 'fake/m1' },
    services: { http: { token } },
    a2a: { enabled: true, name: `svc-${name}`, ...a2a },
  };
  const app = await makeTestApp({ config, ready: false });
  const server = await startHttpServer({
    config: app.config,
    flags: { host: '127.0.0.1', port: 0 },
    createApp: async () => app,
  });
  return { app, url: server.url, token, provider, config };
}

/** Tell `from` about `to` as [a2a.remotes.<name>] (URL and token), then reload its config. */
function knows(from: Peer, name: string, to: Peer) {
  const config = {
    ...from.config,
    a2a: { ...(from.config.a2a as object), remotes: { [name]: { url: to.url, token: to.token } } },
  };
  writeFileSync(join(from.app.workspace, 'svc.toml'), stringify(config));
  from.app.reloadConfig();
}

const call = (app: App, name: string, input: unknown) =>
  invokeTool(app, name, input, { surface: 'cli' }) as Promise<any>;

describe('A2A between two svc servers', () => {
  it('TOOLS-54: delegates by name from an agent run, by card URL and by capability, both ways', async () => {
    const a = await peer('a', [
      reply().toolCall('a2a_delegate', { agent_name: 'b', message: 'ping from A' }),
      reply().text('B answered the ping'),
      reply().text('hi B, A here'),
    ]);
    const b = await peer('b', [reply().text('pong from B'), reply().text('B reviews code')], {
      skills: [
        {
          id: 'review',
          name: 'code review',
          description: 'Reviews diffs for bugs',
          tags: ['review', 'quality'],
        },
      ],
    });
    knows(a, 'b', b);
    knows(b, 'a', a);

    // A's agent delegates to B by name: B runs a session through its own agent.
    const run = await a.app.agent.run({
      prompt: 'ask B for a pong',
      yolo: true,
      signal: AbortSignal.timeout(20_000),
    });
    expect(run.status).toBe('completed');
    expect(run.text).toBe('B answered the ping');
    const toolResult = a.provider.requests[1].body.messages.at(-1);
    expect(toolResult).toMatchObject({ role: 'tool' });
    expect(String(toolResult.content)).toContain('pong from B');
    expect(String(toolResult.content)).toContain(': completed');
    expect(b.provider.requests[0].body.messages.at(-1)).toMatchObject({
      role: 'user',
      content: 'ping from A',
    });
    const served = b.app.db.prepare('SELECT * FROM a2a_served_tasks').all() as { session_id: string }[];
    expect(served).toHaveLength(1);
    expect(await b.app.sessions.get(served[0].session_id)).toBeDefined();

    // B delegates to A by card URL (A's token is known for A's origin).
    const byUrl = await call(b.app, 'a2a_delegate', {
      card_url: `${a.url}/.well-known/agent-card.json`,
      message: 'hello A',
    });
    expect(byUrl).toMatchObject({
      state: 'completed',
      done: true,
      text: 'hi B, A here',
      agent: { name: 'svc-a', rpc_url: `${a.url}/a2a` },
      target: { kind: 'card_url' },
    });

    // A finds B by capability: B's card advertises a review skill, A's own card does not.
    const byCapability = await call(a.app, 'a2a_delegate', {
      capability: 'code review',
      message: 'review this diff',
    });
    expect(byCapability).toMatchObject({
      state: 'completed',
      text: 'B reviews code',
      agent: { name: 'svc-b' },
      target: { kind: 'capability', value: 'code review' },
    });

    // Tracked until deleted; task_id checks it again.
    const again = await call(a.app, 'a2a_delegate', { task_id: byCapability.task_id });
    expect(again).toMatchObject({
      task_id: byCapability.task_id,
      state: 'completed',
      text: 'B reviews code',
    });
    const deleted = await call(a.app, 'delete_a2a_task', { task_id: byCapability.task_id });
    expect(deleted).toEqual({
      task_id: byCapability.task_id,
      deleted: true,
      cancelled: false,
      state: 'completed',
    });
    await expect(call(a.app, 'a2a_delegate', { task_id: byCapability.task_id })).rejects.toThrow(
      /no tracked A2A task/,
    );

    expect(a.provider.remaining()).toBe(0);
    expect(b.provider.remaining()).toBe(0);
  }, 60_000);

  it('TOOLS-55: a task still running when the wait ends stays tracked; delete_a2a_task cancels it remotely', async () => {
    const a = await peer('a', []);
    const b = await peer('b', [reply().hang(30_000)]);
    knows(a, 'b', b);
    const started = Date.now();
    const pending = await call(a.app, 'a2a_delegate', {
      agent_name: 'b',
      message: 'think for a long time',
      timeout_seconds: 1,
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(pending).toMatchObject({ state: 'working', done: false, text: null });
    expect(pending.note).toMatch(/still working after 1s: call a2a_delegate with task_id/);
    const runId = pending.remote_task_id as string;
    expect((await b.app.runs.require(runId)).status).toBe('running');

    const deleted = await call(a.app, 'delete_a2a_task', { task_id: pending.task_id });
    expect(deleted).toMatchObject({ task_id: pending.task_id, deleted: true, cancelled: true });
    await b.app.agent.wait(runId, { signal: AbortSignal.timeout(10_000) });
    expect((await b.app.runs.require(runId)).status).toBe('cancelled');
    // tasks/cancel on an ended task is refused with TaskNotCancelable.
    const again = await fetch(`${b.url}/a2a`, {
      method: 'POST',
      headers: { authorization: `Bearer ${b.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tasks/cancel', params: { id: runId } }),
    });
    expect(await again.json()).toMatchObject({ id: 9, error: { code: -32002 } });
    await expect(call(a.app, 'delete_a2a_task', { task_id: pending.task_id })).rejects.toThrow(
      /no tracked A2A task/,
    );
  }, 60_000);

  it('serves the card only with [a2a] enabled and a bearer token, and answers JSON-RPC errors', async () => {
    const a = await peer('a', []);
    const unauthenticated = await fetch(`${a.url}/.well-known/agent-card.json`);
    expect(unauthenticated.status).toBe(401);
    const headers = { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' };
    for (const path of ['/.well-known/agent-card.json', '/.well-known/agent.json']) {
      const response = await fetch(`${a.url}${path}`, { headers });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({
        name: 'svc-a',
        protocolVersion: '0.3.0',
        url: `${a.url}/a2a`,
        preferredTransport: 'JSONRPC',
        capabilities: { streaming: false },
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
        skills: [{ id: 'build', tags: ['build', 'coding', 'workspace'] }],
      });
    }
    const rpc = async (body: unknown) =>
      (await fetch(`${a.url}/a2a`, { method: 'POST', headers, body: JSON.stringify(body) })).json();
    expect(await rpc({ jsonrpc: '2.0', id: 1, method: 'nope' })).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32601, message: 'Method not found: nope' },
    });
    expect(await rpc({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: 'run_9999' } })).toEqual({
      jsonrpc: '2.0',
      id: 2,
      error: { code: -32001, message: 'Task not found: run_9999' },
    });
    expect(
      await rpc({
        jsonrpc: '2.0',
        id: 3,
        method: 'message/send',
        params: { message: { role: 'user', parts: [] } },
      }),
    ).toMatchObject({
      id: 3,
      error: { code: -32602 },
    });
    expect(await rpc({ id: 4, method: 'message/send' })).toMatchObject({ id: 4, error: { code: -32600 } });
    const parse = await fetch(`${a.url}/a2a`, { method: 'POST', headers, body: '{not json' });
    expect(await parse.json()).toMatchObject({ error: { code: -32700 } });

    writeFileSync(join(a.app.workspace, 'svc.toml'), stringify({ ...a.config, a2a: { enabled: false } }));
    a.app.reloadConfig();
    const off = await fetch(`${a.url}/.well-known/agent-card.json`, { headers });
    expect(off.status).toBe(404);
  }, 30_000);

  it('reports an unknown agent name, a card URL with no agent and an unmatched capability clearly', async () => {
    const a = await peer('a', []);
    await expect(call(a.app, 'a2a_delegate', { agent_name: 'ghost', message: 'x' })).rejects.toThrow(
      /no deployed or configured agent "ghost"/,
    );
    await expect(
      call(a.app, 'a2a_delegate', { card_url: `${a.url}/nothing/here.json`, message: 'x' }),
    ).rejects.toThrow(/refused|404/);
    await expect(call(a.app, 'a2a_delegate', { capability: 'astrophysics', message: 'x' })).rejects.toThrow(
      /no deployed or configured agent has a skill matching/,
    );
    await expect(
      call(a.app, 'a2a_delegate', { agent_name: 'x', capability: 'y', message: 'x' }),
    ).rejects.toThrow(/exactly one of/);
    await expect(
      call(a.app, 'a2a_delegate', { card_url: 'ftp://host/card.json', message: 'x' }),
    ).rejects.toThrow(/only http and https/);
  }, 30_000);
});
