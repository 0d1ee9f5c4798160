/**
 * Adaptive orchestration on every surface. Pins:
 * - a monitor reshaping a genome after scripted sub-agent failures is seen on the SSE stream of a
 *   real server (the `eventsource` client) in the ordering contract's order, and a reconnect
 *   replays the very same payloads (EVT-30);
 * - `include_snapshot` sends one resync event, built from the current snapshot, before the replay
 *   (a genome event, or a monitor_evaluation event for a monitor-only session);
 * - the native tool, the MCP tool and `svc config show-adaptive-orchestration --json` return the
 *   same payload, equal to the last `adaptive_orchestration.genome` event;
 * - the MCP tool is pull-only, answers only in a runtime with the adaptive layer, and is exposed
 *   only when listed in services.mcp.exposed_tools;
 * - the CLI is read-only and headless: it reports config posture, classifier mode, monitor
 *   summary and readout surfaces, works with the gate off, and never classifies, evaluates,
 *   calls a provider or prints a body.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { EventSource } from 'eventsource';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { createMemoryLogger } from '../../src/log';
import { runCli } from '../../src/surfaces/cli/index';
import { startHttpServer } from '../../src/surfaces/http/server';
import { createMcpServer } from '../../src/surfaces/mcp/server';
import { getAdaptiveOrchestration } from '../../src/tools/adaptive';
import { type RecordedRequest, reply } from '../helpers/fake-provider';
import { runBin } from '../helpers/run-bin';
import { viaCli, viaMcp } from '../helpers/surfaces';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { ADAPTIVE, adaptiveApp, FAILURE_STATUS, snapshotOf, systemOf } from './helpers';

const TOKEN = 'adaptive-sse-token-123';
const ADAPTIVE_TYPES = ['changed', 'genome', 'monitor_evaluation', 'reshape'].map((t) => `${ADAPTIVE}${t}`);
const cliBinding = [getAdaptiveOrchestration.surfaces!.cli!].flat()[0];

/** Coordinator fans out to two sub-agents that fail; later runs answer. */
const respond = (request: RecordedRequest) => {
  const messages = request.body.messages as { role: string }[];
  if (systemOf(request).includes('You are a sub-agent working on one task')) {
    return reply().httpError(FAILURE_STATUS, { error: { message: 'scripted failure', type: 'invalid' } });
  }
  if (messages.at(-1)?.role === 'tool') return reply().text('combined');
  if (systemOf(request).includes('Choreography: fan_out')) {
    return reply()
      .toolCall('agent', { prompt: 'part A', agent: 'general' })
      .toolCall('agent', { prompt: 'part B', agent: 'general' });
  }
  return reply().text('done');
};

interface Received {
  type: string;
  id: string;
  data: any;
}

function listen(url: string, types: string[]) {
  const received: Received[] = [];
  const source = new EventSource(url, {
    fetch: (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${TOKEN}`);
      return fetch(input, { ...init, headers });
    },
  });
  for (const type of types) {
    source.addEventListener(type, (event) => {
      received.push({ type, id: event.lastEventId, data: JSON.parse(event.data) });
    });
  }
  const waitFor = async (predicate: () => boolean, what: string, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(received.map((r) => r.type))}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return { source, received, waitFor };
}

async function serve(app: App) {
  return startHttpServer({
    config: app.config,
    flags: { port: 0, token: TOKEN },
    createApp: async () => app,
    graceMs: 200,
    http: { sseHeartbeatMs: 0, sseRetryMs: 50 },
  });
}

/** A reshaped fan_out session: its events went through a real server's SSE stream. */
async function reshapedSession() {
  const setup = await adaptiveApp(Array(4).fill(respond), {
    classifier: 'config',
    default_preset: 'fan_out',
  });
  const { app } = setup;
  const server = await serve(app);
  const session = await app.agent.createSession({ title: 'sse' });
  const url = `${server.url}/v1/sessions/${session.id}/events`;
  const live = listen(url, ['connected', 'run.started', 'run.finished', ...ADAPTIVE_TYPES]);
  await live.waitFor(() => live.received.some((r) => r.type === 'connected'), 'connected');
  const run = await app.agent.run({ prompt: 'Do both parts', sessionId: session.id, yolo: true });
  expect(run.status).toBe('completed');
  const done = () => live.received.filter((r) => r.type === `${ADAPTIVE}genome`).length === 6;
  await live.waitFor(done, 'six genome events');
  live.source.close();
  return { ...setup, server, session, url, live, run };
}

const short = (r: Received) =>
  `${r.type.replace(ADAPTIVE, '')}${r.data.reshape_action ? `:${r.data.reshape_action}` : ''}`;

describe('adaptive orchestration over SSE (real server, eventsource client)', () => {
  it('EVT-11, EVT-13, EVT-17, EVT-28, EVT-30: the reshape is seen in contract order and replay gives the same payloads', async () => {
    const { app, server, session, url, live, run } = await reshapedSession();
    try {
      const stream = live.received.filter((r) => r.type !== 'connected');
      expect(stream.map(short)).toEqual([
        'run.started',
        'changed',
        'genome',
        'changed',
        'genome',
        'changed',
        'genome',
        'reshape:recorded',
        'changed',
        'genome',
        'reshape:queued',
        'run.finished',
        'changed',
        'genome',
        'reshape:applied',
        'changed',
        'genome',
      ]);
      // Ids increase along the stream: the order is the publish order.
      const ids = stream.map((r) => Number(r.id));
      expect([...ids].sort((a, b) => a - b)).toEqual(ids);
      // The last genome event is what the tool returns now.
      const genomes = stream.filter((r) => r.type === `${ADAPTIVE}genome`);
      expect(genomes.at(-1)!.data).toEqual(await snapshotOf(app, session.id));
      expect(genomes.at(-1)!.data.effective_genome.choreography_preset).toBe('executor_reviewer');
      expect(stream.find((r) => r.data.reshape_action === 'queued')!.data.runtime_apply_pending_reason).toBe(
        `run_failures: waiting for the active run ${run.run_id} to end`,
      );

      // EVT-30: a client that reconnects from the start gets the same payloads from the replay.
      const replay = listen(url, ['connected', ...ADAPTIVE_TYPES]);
      await replay.waitFor(
        () => replay.received.filter((r) => r.type === `${ADAPTIVE}genome`).length === 6,
        'the replayed genome events',
      );
      replay.source.close();
      const replayed = replay.received.filter((r) => r.type !== 'connected');
      const liveAdaptive = stream.filter((r) => r.type.startsWith(ADAPTIVE));
      expect(replayed.map((r) => [r.id, r.type, r.data])).toEqual(
        liveAdaptive.map((r) => [r.id, r.type, r.data]),
      );
    } finally {
      await server.close();
    }
  });

  it('EVT-06, EVT-07: include_snapshot sends one resync from the current snapshot before the replay', async () => {
    const { app, server, session, url } = await reshapedSession();
    try {
      const resync = listen(`${url}?include_snapshot=true`, ['connected', 'run.started', ...ADAPTIVE_TYPES]);
      await resync.waitFor(() => resync.received.length >= 3, 'the resync and the replay');
      resync.source.close();
      expect(resync.received[0].type).toBe('connected');
      expect(resync.received[1]).toMatchObject({ type: `${ADAPTIVE}genome` });
      expect(resync.received[1].data).toEqual(await snapshotOf(app, session.id));
      // The resync carries the stream's cursor, not a bus id; the replay starts after it.
      expect(resync.received[2].type).toBe('run.started');
      expect(Number(resync.received[2].id)).toBeGreaterThan(Number(resync.received[1].id));
    } finally {
      await server.close();
    }
  });

  it('EVT-06, EVT-14: a monitor-only session resyncs with a monitor_evaluation event', async () => {
    const { app } = await adaptiveApp([reply().text('ok')], { classifier: 'off' });
    const server = await serve(app);
    try {
      const run = await app.agent.run({ prompt: 'Say hi' });
      const es = listen(`${server.url}/v1/sessions/${run.session_id}/events?include_snapshot=1`, [
        'connected',
        ...ADAPTIVE_TYPES,
      ]);
      await es.waitFor(() => es.received.length >= 2, 'the resync');
      es.source.close();
      expect(es.received[1]).toMatchObject({ type: `${ADAPTIVE}monitor_evaluation` });
      const snapshot = await snapshotOf(app, run.session_id);
      expect(es.received[1].data).toEqual({
        type: `${ADAPTIVE}monitor_evaluation`,
        session_id: run.session_id,
        action: 'monitor_evaluation',
        posture: snapshot.posture,
        last_monitor_evaluation: snapshot.last_monitor_evaluation,
      });
    } finally {
      await server.close();
    }
  });
});

describe('adaptive orchestration: one payload on every surface', () => {
  it('ADAPT-32, ADAPT-43, ADAPT-44: tool, MCP and CLI return the payload of the last genome event', async () => {
    const { app, server, session, live } = await reshapedSession();
    await server.close();
    const lastGenome = live.received.filter((r) => r.type === `${ADAPTIVE}genome`).at(-1)!.data;
    const tool = await snapshotOf(app, session.id);
    const mcp = await viaMcp(app, getAdaptiveOrchestration, { session_id: session.id });
    const mcpBound = await viaMcp(app, getAdaptiveOrchestration, {}, { sessionId: session.id });
    const cli = await viaCli(app, cliBinding, { session_id: session.id });
    expect(mcp.isError, mcp.text).toBe(false);
    expect(cli.code, cli.stderr).toBe(0);
    expect(tool).toEqual(lastGenome);
    expect(mcp.json).toEqual(lastGenome);
    expect(mcpBound.json).toEqual(lastGenome);
    expect((cli.json as any).snapshot).toEqual(lastGenome);
    expect((cli.json as any).posture).toEqual(lastGenome.posture);
    expect(await app.adaptive!.resync(session.id)).toEqual({
      event: `${ADAPTIVE}genome`,
      payload: lastGenome,
    });
  });

  it('ADAPT-33: the MCP tool is pull-only: no notification while the genome is reshaped', async () => {
    const setup = await adaptiveApp(Array(4).fill(respond), {
      classifier: 'config',
      default_preset: 'fan_out',
    });
    const { app } = setup;
    const session = await app.agent.createSession({ title: 'mcp' });
    const server = createMcpServer(app, {
      exposedTools: ['svc_get_adaptive_orchestration'],
      sessionId: session.id,
    });
    const client = new Client({ name: 'pull-only', version: '1.0.0' });
    const notifications: unknown[] = [];
    client.fallbackNotificationHandler = async (notification) => {
      notifications.push(notification);
    };
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
    try {
      const before = (await client.callTool({
        name: 'svc_get_adaptive_orchestration',
        arguments: {},
      })) as any;
      expect(JSON.parse(before.content[0].text).action).toBe('unknown');
      await app.agent.run({ prompt: 'Do both parts', sessionId: session.id, yolo: true });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(notifications).toEqual([]);
      const after = (await client.callTool({ name: 'svc_get_adaptive_orchestration', arguments: {} })) as any;
      expect(JSON.parse(after.content[0].text)).toEqual(await snapshotOf(app, session.id));
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('ADAPT-34: the MCP tool answers in a runtime with the adaptive layer and fails closed without it', async () => {
    const { app } = await adaptiveApp([]);
    const session = await app.sessions.create({ title: 'mcp' });
    const ok = await viaMcp(app, getAdaptiveOrchestration, { session_id: session.id });
    expect(ok.isError).toBe(false);
    expect(ok.json).toMatchObject({ session_id: session.id, action: 'unknown' });

    const bare = await adaptiveApp([], {}, { adaptive: false });
    const other = await bare.app.sessions.create({ title: 'mcp' });
    const missing = await viaMcp(bare.app, getAdaptiveOrchestration, { session_id: other.id });
    expect(missing).toMatchObject({
      isError: true,
      text: 'unavailable: svc_get_adaptive_orchestration is not available: no adaptive orchestration layer in this runtime',
    });
    const off = await adaptiveApp([], { enabled: false });
    const closed = await viaMcp(off.app, getAdaptiveOrchestration, {
      session_id: (await off.app.sessions.create()).id,
    });
    expect(closed.isError).toBe(true);
    expect(closed.text).toContain('options.adaptive_orchestration.enabled is false');
  });

  it('ADAPT-35: svc service start mcp exposes the tool only when services.mcp.exposed_tools lists it', async () => {
    const listed = async (exposed: string[]) => {
      const { app } = await adaptiveApp(
        [],
        {},
        { extraConfig: { services: { mcp: { exposed_tools: exposed } } } },
      );
      const server = createMcpServer(app);
      const client = new Client({ name: 'list', version: '1.0.0' });
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
      try {
        return (await client.listTools()).tools.map((t) => t.name);
      } finally {
        await client.close();
        await server.close();
      }
    };
    expect(await listed([])).not.toContain('svc_get_adaptive_orchestration');
    expect(await listed(['svc_get_adaptive_orchestration'])).toEqual(['svc_get_adaptive_orchestration']);
  });
});

describe('svc config show-adaptive-orchestration', () => {
  const BODY_MARKERS = ['PROMPT-MARKER-9f1e', 'RESPONSE-MARKER-2b7c'];

  async function cli(app: App, args: string[]) {
    let stdout = '';
    let stderr = '';
    const log = createMemoryLogger();
    const code = await runCli(
      ['config', 'show-adaptive-orchestration', ...args, '--cwd', app.workspace, '--data-dir', app.dataDir],
      {
        stdout: { write: (s: string) => (stdout += s) },
        stderr: { write: (s: string) => (stderr += s) },
        env: app.env as Record<string, string | undefined>,
        cwd: app.workspace,
      },
      { appOptions: { clock: app.clock, log } },
    );
    return { code, stdout, stderr, log };
  }

  const dump = (app: App) =>
    JSON.stringify(
      ['adaptive_sessions', 'adaptive_evaluations', 'adaptive_reviews', 'agent_runs', 'session_events'].map(
        (t) => app.db.prepare(`SELECT * FROM ${t} ORDER BY rowid`).all(),
      ),
    );

  it('ADAPT-36, ADAPT-38/ADAPT-39/ADAPT-40/ADAPT-41/ADAPT-42: reports each part, and never classifies, evaluates, calls a provider or prints a body', async () => {
    const { app, provider } = await adaptiveApp([reply().text(`${BODY_MARKERS[1]} hello`)]);
    const run = await app.agent.run({ prompt: `Say hello ${BODY_MARKERS[0]}` });
    const fresh = await app.sessions.create({ title: 'never ran' });
    const requests = provider.requests.length;
    const before = dump(app);

    const json = await cli(app, ['--json', '--session-id', run.session_id]);
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(Object.keys(report)).toEqual([
      'config',
      'classifier_mode',
      'monitor',
      'readout_surfaces',
      'posture',
      'snapshot',
    ]);
    expect(report.config).toMatchObject({ enabled: true, classifier: 'heuristic', max_parallel_agents: 4 });
    expect(report.classifier_mode).toBe('heuristic');
    expect(report.monitor).toMatchObject({
      enabled: true,
      cadence: 1,
      sessions_with_genome: 1,
      evaluations_recorded: 1,
      reshapes_applied: 0,
      pending_reshapes: 0,
    });
    expect(report.readout_surfaces).toEqual({
      native_tool: { name: 'get_adaptive_orchestration', registered: true },
      mcp_tool: { name: 'svc_get_adaptive_orchestration', exposed: false },
      cli: 'svc config show-adaptive-orchestration',
      sse: {
        route: '/v1/sessions/{id}/events',
        events: ADAPTIVE_TYPES,
        include_snapshot: true,
      },
      related_tools: ['fleet_regulation_status', 'get_spawn_status', 'eval_shadow_summary'],
    });
    expect(report.snapshot).toEqual(await snapshotOf(app, run.session_id));

    // A session that never ran: the CLI reads it without classifying it.
    const unclassified = await cli(app, ['--json', '--session-id', fresh.id]);
    expect(JSON.parse(unclassified.stdout).snapshot).toMatchObject({
      action: 'unknown',
      posture: { state: 'enabled-idle' },
    });
    const text = await cli(app, ['--session-id', run.session_id]);
    expect(text.stdout).toContain('adaptive orchestration: enabled');
    expect(text.stdout).toContain('classifier: heuristic');
    expect(text.stdout).toContain('posture:');

    // ADAPT-36, ADAPT-39, ADAPT-40: nothing changed; no classifier ran and no monitor worked.
    expect(dump(app)).toBe(before);
    expect(await app.adaptive!.store.get(fresh.id)).toBeUndefined();
    for (const out of [json, unclassified, text]) {
      expect(out.log.records.filter((r) => r.component === 'adaptive')).toEqual([]);
    }
    // ADAPT-41: no provider request.
    expect(provider.requests).toHaveLength(requests);
    // ADAPT-42: no prompt, model or tool body in the output.
    for (const marker of BODY_MARKERS) {
      expect(json.stdout + text.stdout + unclassified.stdout).not.toContain(marker);
    }
  });

  it('ADAPT-37: runs headless from the built binary, with the gate off and no server', async () => {
    const workspace = tmpWorkspace();
    const result = await runBin(['config', 'show-adaptive-orchestration', '--json'], { cwd: workspace });
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.posture).toMatchObject({ state: 'disabled', configured: false, implemented: true });
    expect(report.readout_surfaces.native_tool).toEqual({
      name: 'get_adaptive_orchestration',
      registered: false,
      reason: 'options.adaptive_orchestration.enabled is false',
    });
    expect(report).not.toHaveProperty('snapshot');
    // Nothing was written: no data directory, no database.
    expect(existsSync(join(workspace, '.svc', 'svc.db'))).toBe(false);
  });
});
