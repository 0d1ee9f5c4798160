/**
 * `svc acp` end to end: an ACP client (the official SDK's client side) drives the built binary
 * as a child process over stdio, against the scripted fake provider. A prompt streams message
 * chunks, a plan, tool calls with kinds, locations, status and diffs, and a permission request
 * the client answers; `session/load` replays the conversation in a new process; `session/cancel`
 * stops a turn; `providers/list` lists unavailable providers too (AUTH-54). Every stdout line is
 * a JSON-RPC frame.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk/unstable';
import { stringify } from 'smol-toml';
import { describe, expect, it, onTestFinished } from 'vitest';
import { fakeProvider, reply, type ScriptEntry } from '../helpers/fake-provider';
import { BIN } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const TIMEOUT_MS = 120_000;

interface Agent {
  child: ChildProcessWithoutNullStreams;
  /** Every byte the agent wrote to stdout. */
  stdout(): string;
  stderr(): string;
}

async function workspace(script: ScriptEntry[]) {
  const provider = await fakeProvider(script);
  const ws = tmpWorkspace({ files: { 'hello.txt': 'hello world\n' } });
  writeFileSync(
    join(ws, 'svc.toml'),
    stringify({
      providers: { fake: { type: 'openai-compat', base_url: provider.url } },
      models: { large: 'fake/m1' },
    }),
  );
  const home = realpathSync(mkdtempSync(join(tmpdir(), 'svc-home-')));
  onTestFinished(() => rmSync(home, { recursive: true, force: true }));
  return { provider, ws, home };
}

function startAgent(ws: string, home: string): Agent {
  const child = spawn(process.execPath, [BIN, 'acp'], {
    cwd: ws,
    env: { PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: join(home, '.config') },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return { child, stdout: () => out, stderr: () => err };
}

/** Connect an ACP client to the agent; updates and permission requests are recorded. */
function clientFor(
  agent: Agent,
  decide: (request: acp.RequestPermissionRequest) => acp.RequestPermissionResponse,
) {
  const updates: acp.SessionNotification[] = [];
  const permissions: acp.RequestPermissionRequest[] = [];
  const client = acp
    .client({ name: 'test-client' })
    .onNotification('session/update', ({ params }) => {
      updates.push(params);
    })
    .onRequest('session/request_permission', ({ params }) => {
      permissions.push(params);
      return decide(params);
    });
  const fromAgent = new PassThrough();
  agent.child.stdout.pipe(fromAgent);
  const stream = acp.ndJsonStream(
    Writable.toWeb(agent.child.stdin) as WritableStream<Uint8Array>,
    Readable.toWeb(fromAgent) as ReadableStream<Uint8Array>,
  );
  return { client, stream, updates, permissions };
}

async function initialize(ctx: acp.ClientContext) {
  return ctx.request('initialize', {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
}

function exited(agent: Agent): Promise<number | null> {
  return new Promise((resolve) => {
    if (agent.child.exitCode !== null) return resolve(agent.child.exitCode);
    agent.child.on('exit', (code) => resolve(code));
  });
}

function expectOnlyFrames(agent: Agent) {
  const lines = agent.stdout().split('\n').filter(Boolean);
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) expect(JSON.parse(line)).toMatchObject({ jsonrpc: '2.0' });
}

describe('svc acp', () => {
  it('serves a prompt with a plan, tool calls and a permission request, then replays it on session/load', {
    timeout: TIMEOUT_MS,
  }, async () => {
    const { provider, ws, home } = await workspace([
      reply()
        .reasoning('Plan the change.')
        .toolCall('todos', { todos: [{ content: 'Change the greeting', status: 'in_progress' }] }),
      reply().toolCall('view', { path: 'hello.txt' }),
      reply().toolCall('edit', { path: 'hello.txt', old_string: 'hello world', new_string: 'goodbye world' }),
      reply().text('Changed the greeting.'),
    ]);
    const agent = startAgent(ws, home);
    const { client, stream, updates, permissions } = clientFor(agent, (request) => ({
      outcome: {
        outcome: 'selected',
        optionId: request.options.find((o) => o.kind === 'allow_once')!.optionId,
      },
    }));
    const sessionId = await client.connectWith(stream, async (ctx) => {
      const init = await initialize(ctx);
      expect(init).toMatchObject({
        protocolVersion: acp.PROTOCOL_VERSION,
        agentInfo: { name: 'svc' },
        agentCapabilities: { loadSession: true, promptCapabilities: { embeddedContext: true } },
      });
      const session = await ctx.request('session/new', { cwd: ws, mcpServers: [] });
      expect(session.sessionId).toMatch(/^ses_/);
      const response = await ctx.request('session/prompt', {
        sessionId: session.sessionId,
        prompt: [
          { type: 'text', text: 'change the greeting' },
          { type: 'resource', resource: { uri: `file://${ws}/hello.txt`, text: 'hello world\n' } },
        ],
      });
      expect(response.stopReason).toBe('end_turn');
      expect(response.usage?.outputTokens).toBeGreaterThan(0);
      return session.sessionId;
    });

    // The edit landed after the client allowed it.
    expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('goodbye world\n');
    const kinds = updates.map((u) => u.update.sessionUpdate);
    expect(kinds).toEqual(
      expect.arrayContaining([
        'agent_thought_chunk',
        'plan',
        'tool_call',
        'tool_call_update',
        'agent_message_chunk',
      ]),
    );
    expect(updates.every((u) => u.sessionId === sessionId)).toBe(true);
    const text = updates
      .flatMap((u) =>
        u.update.sessionUpdate === 'agent_message_chunk' && u.update.content.type === 'text'
          ? [u.update.content.text]
          : [],
      )
      .join('');
    expect(text).toBe('Changed the greeting.');
    const plan = updates.find((u) => u.update.sessionUpdate === 'plan')?.update as acp.Plan;
    expect(plan.entries).toEqual([
      { content: 'Change the greeting', priority: 'medium', status: 'in_progress' },
    ]);

    const calls = updates.flatMap((u) => (u.update.sessionUpdate === 'tool_call' ? [u.update] : []));
    expect(calls.map((c) => [c.kind, c.status])).toEqual([
      ['think', 'in_progress'],
      ['read', 'in_progress'],
      ['edit', 'in_progress'],
    ]);
    const edit = calls[2];
    expect(edit.locations).toEqual([{ path: join(ws, 'hello.txt') }]);
    const editDone = updates.find(
      (u) => u.update.sessionUpdate === 'tool_call_update' && u.update.toolCallId === edit.toolCallId,
    )?.update as acp.ToolCallUpdate;
    expect(editDone.status).toBe('completed');
    expect(editDone.content).toContainEqual({
      type: 'diff',
      path: join(ws, 'hello.txt'),
      oldText: 'hello world\n',
      newText: 'goodbye world\n',
    });

    // One permission request, for the edit call, showing the diff, with the three choices.
    expect(permissions).toHaveLength(1);
    expect(permissions[0].toolCall.toolCallId).toBe(edit.toolCallId);
    expect(JSON.stringify(permissions[0].toolCall.content)).toContain('+goodbye world');
    expect(permissions[0].options.map((o) => o.kind)).toEqual(['allow_once', 'allow_always', 'reject_once']);

    // The prompt text reached the model with the embedded file.
    const sent = JSON.stringify(provider.requests[0].body);
    expect(sent).toContain('change the greeting');
    expect(sent).toContain('hello.txt');

    agent.child.stdin.end();
    expect(await exited(agent)).toBe(0);
    expectOnlyFrames(agent);

    // A new process loads the session and replays the conversation.
    const second = startAgent(ws, home);
    const replay = clientFor(second, () => ({ outcome: { outcome: 'cancelled' } }));
    await replay.client.connectWith(replay.stream, async (ctx) => {
      await initialize(ctx);
      await ctx.request('session/load', { sessionId, cwd: ws, mcpServers: [] });
      await expect(
        ctx.request('session/load', { sessionId: 'ses_missing', cwd: ws, mcpServers: [] }),
      ).rejects.toMatchObject({ code: -32002 });
    });
    const replayed = replay.updates.map((u) => u.update);
    expect(replayed[0]).toMatchObject({ sessionUpdate: 'user_message_chunk' });
    expect(replayed).toContainEqual(
      expect.objectContaining({ sessionUpdate: 'tool_call', toolCallId: edit.toolCallId, kind: 'edit' }),
    );
    expect(replayed).toContainEqual({
      sessionUpdate: 'agent_message_chunk',
      content: { type: 'text', text: 'Changed the greeting.' },
    });
    second.child.stdin.end();
    expect(await exited(second)).toBe(0);
    expectOnlyFrames(second);
  });

  it('a denied permission leaves the file alone', { timeout: TIMEOUT_MS }, async () => {
    const { ws, home } = await workspace([
      reply().toolCall('view', { path: 'hello.txt' }),
      reply().toolCall('edit', { path: 'hello.txt', old_string: 'hello world', new_string: 'goodbye world' }),
      reply().text('Left it as it was.'),
    ]);
    const agent = startAgent(ws, home);
    const { client, stream, permissions, updates } = clientFor(agent, () => ({
      outcome: { outcome: 'selected', optionId: 'deny' },
    }));
    await client.connectWith(stream, async (ctx) => {
      await initialize(ctx);
      const { sessionId } = await ctx.request('session/new', { cwd: ws, mcpServers: [] });
      const response = await ctx.request('session/prompt', {
        sessionId,
        prompt: [{ type: 'text', text: 'change the greeting' }],
      });
      expect(response.stopReason).toBe('end_turn');
    });
    expect(permissions).toHaveLength(1);
    expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('hello world\n');
    expect(updates.map((u) => u.update)).toContainEqual(
      expect.objectContaining({ sessionUpdate: 'tool_call_update', status: 'failed' }),
    );
    agent.child.stdin.end();
    expect(await exited(agent)).toBe(0);
  });

  it('a malformed permission answer denies, and the agent keeps serving', {
    timeout: TIMEOUT_MS,
  }, async () => {
    // Each edit differs, so loop detection stays out of it.
    const edit = (n: number) =>
      reply().toolCall('edit', { path: 'hello.txt', old_string: 'hello world', new_string: `bye ${n}` });
    const { ws, home } = await workspace([
      reply().toolCall('view', { path: 'hello.txt' }),
      edit(1),
      edit(2),
      edit(3),
      edit(4),
      edit(5),
      reply().text('Left it as it was.'),
    ]);
    const agent = startAgent(ws, home);
    // What a broken client may answer: no result, no outcome, a string, an unknown option.
    const answers: unknown[] = [
      null,
      {},
      { outcome: null },
      'x',
      { outcome: { outcome: 'selected', optionId: 'allow_everything' } },
    ];
    const { client, stream, permissions, updates } = clientFor(
      agent,
      () => answers[permissions.length - 1] as acp.RequestPermissionResponse,
    );
    await client.connectWith(stream, async (ctx) => {
      await initialize(ctx);
      const { sessionId } = await ctx.request('session/new', { cwd: ws, mcpServers: [] });
      const response = await ctx.request('session/prompt', {
        sessionId,
        prompt: [{ type: 'text', text: 'change the greeting' }],
      });
      expect(response.stopReason).toBe('end_turn');
      // Still serving after the malformed answers.
      expect((await ctx.request('providers/list', {})).providers.length).toBeGreaterThan(0);
    });
    expect(permissions).toHaveLength(answers.length);
    expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('hello world\n');
    const failed = updates.filter(
      (u) => u.update.sessionUpdate === 'tool_call_update' && u.update.status === 'failed',
    );
    expect(failed).toHaveLength(answers.length);
    agent.child.stdin.end();
    expect(await exited(agent)).toBe(0);
    expect(agent.stderr()).not.toContain('TypeError');
    expectOnlyFrames(agent);
    // The malformed answers are in the log file, not on stdout.
    expect(readFileSync(join(ws, '.svc', 'logs', 'svc.log'), 'utf8')).toContain(
      'acp permission answer malformed',
    );
  });

  it('session/new and session/load refuse a relative cwd, the filesystem root and the home directory', {
    timeout: TIMEOUT_MS,
  }, async () => {
    const { ws, home } = await workspace([]);
    const agent = startAgent(ws, home);
    const { client, stream } = clientFor(agent, () => ({ outcome: { outcome: 'cancelled' } }));
    await client.connectWith(stream, async (ctx) => {
      await initialize(ctx);
      for (const [cwd, reason] of [
        ['relative/dir', 'cwd must be an absolute path (ACP), got "relative/dir"'],
        ['/', 'cwd "/" is the filesystem root; open a project directory'],
        [home, `cwd "${home}" is the home directory; open a project directory`],
      ]) {
        await expect(ctx.request('session/new', { cwd, mcpServers: [] })).rejects.toMatchObject({
          code: -32602,
          message: expect.stringContaining(reason),
        });
        await expect(
          ctx.request('session/load', { sessionId: 'ses_x', cwd, mcpServers: [] }),
        ).rejects.toMatchObject({ code: -32602 });
      }
      // A project directory still opens.
      expect((await ctx.request('session/new', { cwd: ws, mcpServers: [] })).sessionId).toMatch(/^ses_/);
    });
    expect(existsSync(join(home, '.svc'))).toBe(false);
    agent.child.stdin.end();
    expect(await exited(agent)).toBe(0);
    expectOnlyFrames(agent);
  });

  it('keeps at most 8 workspace Apps open; a session whose App was closed reopens it', {
    timeout: TIMEOUT_MS,
  }, async () => {
    const { ws, home } = await workspace([reply().text('Still here.')]);
    // The session's workspace is another project with the same provider.
    const first = tmpWorkspace();
    writeFileSync(join(first, 'svc.toml'), readFileSync(join(ws, 'svc.toml')));
    const others = Array.from({ length: 8 }, () => tmpWorkspace());
    const agent = startAgent(ws, home);
    const { client, stream } = clientFor(agent, () => ({ outcome: { outcome: 'cancelled' } }));
    await client.connectWith(stream, async (ctx) => {
      await initialize(ctx);
      const { sessionId } = await ctx.request('session/new', { cwd: first, mcpServers: [] });
      // The launch workspace and 8 more: the least recently used (first) is closed.
      for (const cwd of others) await ctx.request('session/new', { cwd, mcpServers: [] });
      const response = await ctx.request('session/prompt', {
        sessionId,
        prompt: [{ type: 'text', text: 'are you there?' }],
      });
      expect(response.stopReason).toBe('end_turn');
    });
    agent.child.stdin.end();
    expect(await exited(agent)).toBe(0);
    const log = readFileSync(join(ws, '.svc', 'logs', 'svc.log'), 'utf8');
    expect(log).toContain('acp workspace closed (least recently used)');
    expect(log).toContain(realpathSync(first));
  });

  it('session/cancel stops the turn with stopReason cancelled', { timeout: TIMEOUT_MS }, async () => {
    const { ws, home, provider } = await workspace([reply().hang()]);
    const agent = startAgent(ws, home);
    const { client, stream } = clientFor(agent, () => ({ outcome: { outcome: 'cancelled' } }));
    await client.connectWith(stream, async (ctx) => {
      await initialize(ctx);
      const { sessionId } = await ctx.request('session/new', { cwd: ws, mcpServers: [] });
      const turn = ctx.request('session/prompt', {
        sessionId,
        prompt: [{ type: 'text', text: 'take your time' }],
      });
      // The turn is under way once the fake provider has the model call; cancel then.
      for (let waited = 0; provider.requests.length === 0; waited += 20) {
        if (waited > 60_000) throw new Error('the model call never arrived');
        await new Promise((r) => setTimeout(r, 20));
      }
      await ctx.notify('session/cancel', { sessionId });
      expect((await turn).stopReason).toBe('cancelled');
    });
    agent.child.stdin.end();
    expect(await exited(agent)).toBe(0);
  });

  it('AUTH-54: providers/list returns model picker rows, unavailable providers included', {
    timeout: TIMEOUT_MS,
  }, async () => {
    const { ws, home, provider } = await workspace([]);
    const agent = startAgent(ws, home);
    const { client, stream } = clientFor(agent, () => ({ outcome: { outcome: 'cancelled' } }));
    const list = await client.connectWith(stream, async (ctx) => {
      const init = await initialize(ctx);
      expect(init.agentCapabilities?.providers).toEqual({});
      return ctx.request('providers/list', {});
    });
    const byId = new Map(list.providers.map((p) => [p.providerId, p]));
    const fake = byId.get('fake')!;
    expect(fake).toMatchObject({
      supported: ['openai'],
      required: false,
      current: { apiType: 'openai', baseUrl: provider.url },
      _meta: { svc: { ready: true, configured: true } },
    });
    // Not ready (no key): still listed, with its models and the reason, and no routing in force.
    const anthropic = byId.get('anthropic')!;
    expect(anthropic.current).toBeNull();
    const meta = (
      anthropic._meta as {
        svc: { ready: boolean; reason: string; models: { selector: string; ready: boolean }[] };
      }
    ).svc;
    expect(meta.ready).toBe(false);
    expect(meta.reason).toContain('ANTHROPIC_API_KEY');
    expect(meta.models.length).toBeGreaterThan(0);
    expect(meta.models[0]).toMatchObject({ selector: expect.stringMatching(/^anthropic\//), ready: false });
    expect(JSON.stringify(list)).not.toMatch(/api_key"\s*:\s*"[^"]/);
    agent.child.stdin.end();
    expect(await exited(agent)).toBe(0);
    expectOnlyFrames(agent);
  });
});
