/**
 * Health follow-ons (spec, Events → health_followon.activation; Limits → health follow-on caps).
 * Pins:
 * - EVT-18, CFG-23: with every gate on (and `enabled` omitted) token pressure from a real run
 *   activates token_pressure.compact, the session is compacted before the next step (reason
 *   health_followon), and the activation event arrives over a real SSE stream;
 * - EVT-25, EVT-01: the payload has exactly type, session_id, signal, activation_rule_id, outcome
 *   (dispatched|skipped), actions_planned and activation_actions_run (integers), optional reason;
 * - EVT-19..23, CFG-24, CFG-25: no event with enabled false, emit_declarative_events false, no
 *   token pressure, emit_activation_telemetry_sse false, or no HTTP session publisher — while
 *   the activation itself still runs where only a publishing gate is off;
 * - EVT-26, LIM-04: the process-hour cap skips the next activation with reason process_hour_cap
 *   (no compaction), and frees up after an hour;
 * - EVT-24: no MCP tool or notification carries it; EVT-27: not in the adaptive/genome payloads;
 * - the token_pressure recommendation is recorded once; token_pressure.summarize summarizes a
 *   session whose run ended under pressure.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { App } from '../../src/app';
import { createActivationCaps } from '../../src/health/caps';
import { createHttpApp } from '../../src/surfaces/http/index';
import { startHttpServer } from '../../src/surfaces/http/server';
import { createMcpServer } from '../../src/surfaces/mcp/server';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { reply, type ScriptEntry } from '../helpers/fake-provider';
import { testClock } from '../helpers/make-test-app';
import { type SseReader, sseReader, type WireEvent } from '../http/sse-reader';

const WINDOW = { context_window: 1000 };
const ACTIVATION = 'health_followon.activation';

/** Every gate on; `enabled` is left out on purpose (CFG-23: default on). */
function gates(overrides: Record<string, unknown> = {}, caps: Record<string, unknown> = {}) {
  return {
    options: {
      health_followons: {
        emit_declarative_events: true,
        token_pressure_threshold: 0.5,
        ...overrides,
        activation_caps: { emit_activation_telemetry_sse: true, ...caps },
      },
    },
  };
}

/** One step under pressure (620/1000), the health compaction's summary, then a calm answer. */
const pressureScript = (): ScriptEntry[] => [
  reply().toolCall('echo', { text: 'big' }).usage(600, 20),
  reply().text('## Task\nEcho.\n## Next steps\nAnswer.'),
  reply().text('done').usage(100, 5),
];

const calmScript = (): ScriptEntry[] => [
  reply().toolCall('echo', { text: 'small' }).usage(100, 20),
  reply().text('done').usage(120, 5),
];

/** An agent app served by the real HTTP server (SSE over a socket). */
async function served(script: ScriptEntry[], config: Record<string, unknown>) {
  const { app, provider, events } = await agentApp(script, {
    extraTools: [echoTool],
    modelInfo: WINDOW,
    extraConfig: config,
  });
  const server = await startHttpServer({
    config: app.config,
    flags: { port: 0, auth: 'none' },
    createApp: async () => app,
  });
  onTestFinished(() => server.close());
  const session = await app.agent.createSession({ title: 'health' });
  const response = await fetch(`${server.url}/v1/sessions/${session.id}/events`);
  expect(response.status).toBe(200);
  const stream = sseReader(response);
  onTestFinished(() => stream.cancel());
  expect((await stream.next()).event).toBe('connected');
  return { app, provider, events, server, session, stream };
}

/** Read the stream until run.finished (everything a run publishes comes before it). */
async function untilRunFinished(stream: SseReader): Promise<WireEvent[]> {
  const seen: WireEvent[] = [];
  for (;;) {
    const event = await stream.next(10_000);
    seen.push(event);
    if (event.event === 'run.finished') return seen;
  }
}

const logged = async (app: App, sessionId: string, type: string) =>
  (await app.bus.replay(sessionId, 0)).events.filter((e) => e.type === type);

describe('health_followon.activation over SSE', () => {
  it('EVT-18, CFG-23: all gates on (enabled omitted) → token pressure compacts and the event streams', async () => {
    const { app, session, stream } = await served(pressureScript(), gates());
    expect(app.loaded.config.options.health_followons.enabled).toBe(true);
    const result = await app.agent.run({ sessionId: session.id, prompt: 'echo big' });
    expect(result).toMatchObject({ status: 'completed', text: 'done', steps: 2 });
    const seen = await untilRunFinished(stream);
    const types = seen.map((e) => e.event);
    // Signal → activation → the compaction it asked for, before the next step.
    expect(types.indexOf('context.usage')).toBeLessThan(types.indexOf('health.token_pressure'));
    expect(types.indexOf('health.token_pressure')).toBeLessThan(types.indexOf(ACTIVATION));
    expect(types.indexOf(ACTIVATION)).toBeLessThan(types.indexOf('compaction.started'));
    const activation = seen.find((e) => e.event === ACTIVATION)!;
    expect(activation.json).toEqual({
      type: ACTIVATION,
      session_id: session.id,
      signal: 'token_pressure',
      activation_rule_id: 'token_pressure.compact',
      outcome: 'dispatched',
      actions_planned: 1,
      activation_actions_run: 1,
    });
    expect(seen.find((e) => e.event === 'compaction.started')!.json).toMatchObject({
      reason: 'health_followon',
      run_id: result.run_id,
    });
    expect(await app.health.activations({ sessionId: session.id })).toMatchObject([
      { rule_id: 'token_pressure.compact', outcome: 'dispatched', event_published: true, ratio: 0.62 },
    ]);
  });

  it('EVT-25, EVT-01: the payload has exactly the spec keys with their types', async () => {
    const { app, session, stream } = await served(pressureScript(), gates());
    await app.agent.run({ sessionId: session.id, prompt: 'echo big' });
    const activation = (await untilRunFinished(stream)).find((e) => e.event === ACTIVATION)!;
    const payload = activation.json as Record<string, unknown>;
    const required = [
      'type',
      'session_id',
      'signal',
      'activation_rule_id',
      'outcome',
      'actions_planned',
      'activation_actions_run',
    ];
    expect(
      Object.keys(payload)
        .filter((k) => k !== 'reason')
        .sort(),
    ).toEqual([...required].sort());
    expect(typeof payload.type).toBe('string');
    expect(typeof payload.session_id).toBe('string');
    expect(payload.signal).toBe('token_pressure');
    expect(typeof payload.activation_rule_id).toBe('string');
    expect(['dispatched', 'skipped']).toContain(payload.outcome);
    expect(Number.isInteger(payload.actions_planned)).toBe(true);
    expect(Number.isInteger(payload.activation_actions_run)).toBe(true);
    if ('reason' in payload) expect(typeof payload.reason).toBe('string');
  });

  const gateOff: [string, Record<string, unknown>, boolean][] = [
    // [title, config, does the activation itself still run?]
    ['EVT-19: options.health_followons.enabled false', gates({ enabled: false }), false],
    ['EVT-20, CFG-24: emit_declarative_events false', gates({ emit_declarative_events: false }), true],
    [
      'EVT-22, CFG-25: activation_caps.emit_activation_telemetry_sse false',
      gates({}, { emit_activation_telemetry_sse: false }),
      true,
    ],
  ];
  for (const [title, config, runs] of gateOff) {
    it(`${title} → no event on the stream`, async () => {
      const { app, session, stream } = await served(pressureScript(), config);
      const result = await app.agent.run({ sessionId: session.id, prompt: 'echo big' });
      expect(result.status).toBe('completed');
      const seen = await untilRunFinished(stream);
      await app.health.idle();
      expect(seen.map((e) => e.event)).not.toContain(ACTIVATION);
      expect(await logged(app, session.id, ACTIVATION)).toEqual([]);
      // The activation (and its compaction) is independent of the publishing gates.
      const compactions = seen.filter((e) => e.event === 'compaction.started');
      const stored = await app.health.activations({ sessionId: session.id });
      if (runs) {
        expect(compactions.map((e) => e.json.reason)).toEqual(['health_followon']);
        expect(stored).toMatchObject([{ outcome: 'dispatched', event_published: false }]);
      } else {
        expect(compactions).toEqual([]);
        expect(stored).toEqual([]);
      }
      if (title.includes('CFG-24') || title.includes('EVT-19')) {
        // No health follow-on events at all: the declarative signal is gated too.
        expect(seen.map((e) => e.event)).not.toContain('health.token_pressure');
      }
    });
  }

  it('EVT-21: no token pressure → no activation runs and no event', async () => {
    const { app, session, stream } = await served(calmScript(), gates());
    const result = await app.agent.run({ sessionId: session.id, prompt: 'echo small' });
    expect(result.status).toBe('completed');
    const seen = await untilRunFinished(stream);
    await app.health.idle();
    expect(seen.map((e) => e.event)).toContain('context.usage');
    expect(seen.map((e) => e.event)).not.toContain(ACTIVATION);
    expect(seen.map((e) => e.event)).not.toContain('health.token_pressure');
    expect(await app.health.activations()).toEqual([]);
  });

  it('EVT-23: without the HTTP session publisher the activation runs but is not published', async () => {
    const { app, events } = await agentApp(pressureScript(), {
      extraTools: [echoTool],
      modelInfo: WINDOW,
      extraConfig: gates(),
    });
    expect(app.runtime.sessionPublisher).toBe(false);
    const result = await app.agent.run({ prompt: 'echo big' });
    await app.health.idle();
    expect(events.map((e) => e.type)).not.toContain(ACTIVATION);
    expect(await logged(app, result.session_id, ACTIVATION)).toEqual([]);
    expect(events.find((e) => e.type === 'compaction.started')?.payload).toMatchObject({
      reason: 'health_followon',
    });
    expect(await app.health.activations()).toMatchObject([{ outcome: 'dispatched', event_published: false }]);
    expect(app.health.gates()).toMatchObject({
      session_publisher_wired: false,
      activation_event_enabled: false,
    });
    // Mounting the SSE session route wires the publisher.
    createHttpApp(app, { allowNoAuth: true });
    expect(app.health.gates()).toMatchObject({
      session_publisher_wired: true,
      activation_event_enabled: true,
    });
  });
});

describe('health follow-on caps', () => {
  it('EVT-26, LIM-04: the process-hour cap skips the next activation with reason process_hour_cap', async () => {
    const { app, session, stream } = await served(
      [
        reply().toolCall('echo', { text: 'one' }).usage(600, 20),
        reply().text('SUMMARY ONE'),
        // Pressure again after the compaction re-armed the signal: the cap (1) is used up.
        reply().toolCall('echo', { text: 'two' }).usage(600, 20),
        reply().text('done').usage(100, 5),
      ],
      gates({}, { process_hour_cap: 1 }),
    );
    const result = await app.agent.run({ sessionId: session.id, prompt: 'echo twice' });
    expect(result).toMatchObject({ status: 'completed', steps: 3 });
    const seen = await untilRunFinished(stream);
    const activations = seen.filter((e) => e.event === ACTIVATION).map((e) => e.json);
    expect(activations).toEqual([
      {
        type: ACTIVATION,
        session_id: session.id,
        signal: 'token_pressure',
        activation_rule_id: 'token_pressure.compact',
        outcome: 'dispatched',
        actions_planned: 1,
        activation_actions_run: 1,
      },
      {
        type: ACTIVATION,
        session_id: session.id,
        signal: 'token_pressure',
        activation_rule_id: 'token_pressure.compact',
        outcome: 'skipped',
        actions_planned: 1,
        activation_actions_run: 0,
        reason: 'process_hour_cap',
      },
    ]);
    // Only the first activation compacted.
    expect(seen.filter((e) => e.event === 'compaction.started')).toHaveLength(1);
    expect(app.health.caps().process_hour_cap).toMatchObject({ limit: 1, used: 1 });
  });

  it('skips (auto_compaction_due) when auto-compaction compacts at the next step anyway', async () => {
    const { app, session, stream } = await served(
      [
        reply().toolCall('echo', { text: 'huge' }).usage(900, 20),
        reply().text('SUMMARY'),
        reply().text('done').usage(100, 5),
      ],
      gates(),
    );
    await app.agent.run({ sessionId: session.id, prompt: 'echo huge' });
    const seen = await untilRunFinished(stream);
    expect(seen.find((e) => e.event === ACTIVATION)?.json).toMatchObject({
      outcome: 'skipped',
      actions_planned: 1,
      activation_actions_run: 0,
      reason: 'auto_compaction_due',
    });
    expect(seen.filter((e) => e.event === 'compaction.started').map((e) => e.json.reason)).toEqual(['auto']);
    // A skip that is not a cap's leaves the cap untouched.
    expect(app.health.caps().process_hour_cap.used).toBe(0);
  });

  it('LIM-04: caps count dispatched activations in a rolling hour, per process and per session', () => {
    const clock = testClock();
    const caps = createActivationCaps(clock);
    const limits = { process_hour_cap: 2, session_hour_cap: 1 };
    expect(caps.blocking('s1', limits)).toBeUndefined();
    caps.record('s1');
    expect(caps.blocking('s1', limits)).toBe('session_hour_cap');
    expect(caps.blocking('s2', limits)).toBeUndefined();
    caps.record('s2');
    expect(caps.blocking('s3', limits)).toBe('process_hour_cap');
    clock.advance(3_600_001);
    expect(caps.blocking('s1', limits)).toBeUndefined();
    expect(caps.usage(limits).process_hour_cap.used).toBe(0);
    expect(caps.blocking('s1', { process_hour_cap: 0, session_hour_cap: 5 })).toBe('process_hour_cap');
  });
});

describe('health follow-ons: boundaries', () => {
  it('EVT-24: no MCP tool or notification carries health_followon.activation', async () => {
    const { app } = await agentApp(pressureScript(), {
      extraTools: [echoTool],
      modelInfo: WINDOW,
      extraConfig: gates(),
    });
    createHttpApp(app, { allowNoAuth: true });
    const exposed = app.tools
      .registered()
      .filter((t) => t.surfaces?.mcp && (t.surfaces.mcpGate?.(app) ?? true) === true)
      .map((t) => t.surfaces!.mcp!);
    const server = createMcpServer(app, { exposedTools: exposed });
    const client = new Client({ name: 'test', version: '1.0.0' });
    const notifications: unknown[] = [];
    client.fallbackNotificationHandler = async (notification) => {
      notifications.push(notification);
    };
    const [a, b] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(b), client.connect(a)]);
    onTestFinished(async () => {
      await client.close();
      await server.close();
    });
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(20);
    for (const tool of tools) {
      expect(JSON.stringify(tool)).not.toMatch(/health_followon|activation_rule_id/);
    }
    const result = await app.agent.run({ prompt: 'echo big' });
    await app.health.idle();
    // The event exists (all gates on) …
    expect(await logged(app, result.session_id, ACTIVATION)).toHaveLength(1);
    // … and nothing reached the MCP client.
    await client.ping();
    expect(JSON.stringify(notifications)).not.toContain('health_followon');
  });

  it('EVT-27: the activation is not part of the adaptive snapshot or any genome payload', async () => {
    const { app, session, stream, server } = await served(pressureScript(), gates());
    await app.agent.run({ sessionId: session.id, prompt: 'echo big' });
    const seen = await untilRunFinished(stream);
    expect(seen.map((e) => e.event)).toContain(ACTIVATION);
    for (const event of seen.filter((e) => e.event.startsWith('adaptive_orchestration'))) {
      expect(event.data).not.toContain('health_followon');
    }
    const resync = await fetch(`${server.url}/v1/sessions/${session.id}/events?include_snapshot=1`);
    const reader = sseReader(resync);
    const [, snapshot] = await reader.take(2);
    await reader.cancel();
    expect(snapshot.event).toMatch(/^adaptive_orchestration\./);
    expect(snapshot.data).not.toMatch(/health_followon|activation_rule_id|actions_planned/);
  });

  it('records the token_pressure recommendation once per pressured stretch', async () => {
    const { app } = await agentApp(pressureScript(), {
      extraTools: [echoTool],
      modelInfo: WINDOW,
      extraConfig: gates(),
    });
    const result = await app.agent.run({ prompt: 'echo big' });
    await app.health.idle();
    const recorded = await app.recommendations.window({ since: 0, max: 10, zone: 'token_pressure' });
    // One recommendation (the recorder's), not a second one from the follow-on; the compaction
    // the follow-on asked for is what followed it.
    expect(recorded).toMatchObject([
      { session_id: result.session_id, kind: 'compact_session', outcome: 'followed' },
    ]);
  });

  it('records the recommendation itself when none is pending (recorder not subscribed)', async () => {
    const { app } = await agentApp(pressureScript(), {
      extraTools: [echoTool],
      modelInfo: WINDOW,
      extraConfig: gates(),
    });
    // Close the one pending before the follow-on looks: it must add its own.
    const off = app.bus.subscribe('*', (event) => {
      if (event.type !== 'context.usage') return;
      void app.recommendations.serial(async (ledger) => {
        for (const rec of await ledger.pending({ zone: 'token_pressure' })) {
          await ledger.close(rec.id, 'dismissed');
        }
      });
    });
    const result = await app.agent.run({ prompt: 'echo big' });
    off();
    await app.health.idle();
    const recorded = await app.recommendations.window({ since: 0, max: 10, zone: 'token_pressure' });
    expect(recorded).toHaveLength(2);
    expect(recorded.find((r) => r.evidence.source === 'health_followon')).toMatchObject({
      session_id: result.session_id,
      outcome: 'followed',
    });
  });

  it('token_pressure.summarize: a run that ends under pressure gets its idle session summarized', async () => {
    const { app, provider, events } = await agentApp(
      [reply().text('long answer').usage(700, 20), reply().text('## Task\nSummary after the run.')],
      { modelInfo: WINDOW, extraConfig: gates({ summarize_after_run: true }) },
    );
    createHttpApp(app, { allowNoAuth: true });
    const result = await app.agent.run({ prompt: 'explain' });
    expect(result.status).toBe('completed');
    await app.health.idle();
    expect(provider.requests).toHaveLength(2);
    const activations = events.filter((e) => e.type === ACTIVATION).map((e) => e.payload);
    expect(activations).toEqual([
      // No step boundary was left in the run: the compaction request died with it.
      expect.objectContaining({
        activation_rule_id: 'token_pressure.compact',
        outcome: 'dispatched',
        activation_actions_run: 1,
      }),
      expect.objectContaining({
        activation_rule_id: 'token_pressure.summarize',
        outcome: 'dispatched',
        actions_planned: 1,
        activation_actions_run: 1,
      }),
    ]);
    expect(events.find((e) => e.type === 'compaction.started')?.payload).toEqual({
      session_id: result.session_id,
      reason: 'health_followon',
    });
    expect((await app.sessions.require(result.session_id)).metadata.compactions).toBe(1);
  });
});
