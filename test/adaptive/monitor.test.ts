/**
 * Adaptive orchestration through the real agent loop and the fake provider: the classifier, the
 * monitor, the reshape lifecycle and the snapshot they leave. Pins:
 * - a fresh session has no evidence (action unknown, posture enabled-idle);
 * - the first run classifies the genome from the task, config, the session's pack or an override;
 * - scripted provider failures make the monitor reshape the genome: the proposal is recorded,
 *   queued while the run is active and applied when it ends, each step published in the
 *   ordering contract's order (state → prompt trace → payload) with payloads equal to the state;
 * - a window of cancelled runs is skipped with a skip_reason; classifier off gives monitor-only
 *   evaluations; a pack policy blocks a reshape; a failed apply is degraded until it succeeds;
 *   removed or unavailable state is cleared; a genome of an unknown schema is unknown;
 * - regulatory_history is newest first, at most 32 items, omitted at 0;
 * - no prompt, tool body, model response or full digest reaches the payload.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { fingerprint } from '../../src/adaptive/genome';
import type { App } from '../../src/app';
import type { SessionEvent } from '../../src/events/bus';
import { invokeTool } from '../../src/tools/core/call-tool';
import { echoTool, gateTool, throwingTool } from '../helpers/agent-harness';
import { type RecordedRequest, reply } from '../helpers/fake-provider';
import type { TestClock } from '../helpers/make-test-app';
import {
  adaptiveApp,
  adaptiveEvents,
  adaptiveSequence,
  expectPosture,
  FAILURE_STATUS,
  requestFor,
  SNAPSHOT_KEYS_WITH_GENOME,
  snapshotOf,
  systemOf,
  toolNamesOf,
} from './helpers';

const fail = () =>
  reply().httpError(FAILURE_STATUS, { error: { message: 'scripted failure', type: 'invalid' } });

function updateConfig(app: App, mutate: (config: any) => void) {
  const path = join(app.workspace, 'svc.toml');
  const config = parse(readFileSync(path, 'utf8')) as any;
  mutate(config);
  writeFileSync(path, stringify(config));
  app.reloadConfig();
}

const payloads = (events: SessionEvent[], type: string) =>
  events.filter((e) => e.type === `adaptive_orchestration.${type}`).map((e) => e.payload as any);

describe('adaptive orchestration: classification', () => {
  it('ADAPT-01, ADAPT-05, ADAPT-16, ADAPT-17, ADAPT-27: a fresh session has no evidence: action unknown', async () => {
    const { app } = await adaptiveApp([]);
    const session = await app.sessions.create({ title: 'fresh' });
    const snapshot = await snapshotOf(app, session.id);
    expect(snapshot).toEqual({
      session_id: session.id,
      action: 'unknown',
      posture: {
        state: 'enabled-idle',
        reason: 'no adaptive evidence yet: the genome is classified at the first run of the session',
        implemented: true,
        configured: true,
        available: true,
        active: false,
        pending_apply: false,
        applied: false,
        degraded: false,
        decision_trace_available: false,
      },
    });
    expectPosture(snapshot.posture);
  });

  it('CFG-20, ADAPT-30, ADAPT-31: the tool is registered only when enabled, and defaults to the current session', async () => {
    const { app } = await adaptiveApp([reply().text('hi')]);
    expect(app.tools.get('get_adaptive_orchestration')).toBeDefined();
    const run = await app.agent.run({ prompt: 'Say hi' });
    const explicit = await snapshotOf(app, run.session_id);
    const implicit = await invokeTool(
      app,
      'get_adaptive_orchestration',
      {},
      {
        surface: 'agent',
        sessionId: run.session_id,
      },
    );
    expect(app.redactor.value(implicit)).toEqual(explicit);
    await expect(invokeTool(app, 'get_adaptive_orchestration', {}, { surface: 'agent' })).rejects.toThrow(
      /session_id: required/,
    );

    const off = await adaptiveApp([], { enabled: false });
    expect(off.app.tools.get('get_adaptive_orchestration')).toBeUndefined();
    expect(off.app.tools.gates().find((g) => g.tool.name === 'get_adaptive_orchestration')?.reason).toBe(
      'options.adaptive_orchestration.enabled is false',
    );
    const unset = await adaptiveApp([], {}, { extraConfig: {} });
    updateConfig(unset.app, (c) => {
      delete c.options.adaptive_orchestration;
    });
    expect(unset.app.tools.get('get_adaptive_orchestration')).toBeUndefined();
    const bare = await adaptiveApp([], {}, { adaptive: false });
    expect(bare.app.adaptive).toBeUndefined();
    expect(bare.app.tools.gates().find((g) => g.tool.name === 'get_adaptive_orchestration')?.reason).toBe(
      'no adaptive orchestration layer in this runtime',
    );
  });

  it('VER-02, ADAPT-06, ADAPT-07: the first run classifies the genome from the task and its guidance reaches the model', async () => {
    const { app, provider, events } = await adaptiveApp([reply().text('surveyed')]);
    const run = await app.agent.run({ prompt: 'Audit every module across the codebase in parallel' });
    const snapshot = await snapshotOf(app, run.session_id);
    expect(snapshot).toMatchObject({
      action: 'updated',
      classification_source: 'heuristic',
      effective_genome: {
        schema_version: 1,
        choreography_preset: 'fan_out',
        topology: 'hub_and_spoke',
        max_parallel_agents: 4,
        plan_gate: false,
        review_gate: false,
        compaction_threshold: 0.85,
      },
      runtime_apply_status: 'applied',
    });
    for (const key of SNAPSHOT_KEYS_WITH_GENOME) expect(snapshot).toHaveProperty(key);
    for (const key of [
      'classification_source',
      'last_reshape_reason',
      'last_reshape_signal_id',
      'runtime_apply_pending_reason',
    ]) {
      expect(typeof snapshot[key], key).toBe('string');
    }
    // The genome was in force before the run's prompt was assembled.
    expect(systemOf(provider.requests[0])).toContain('Choreography: fan_out (topology hub_and_spoke).');
    expect(systemOf(provider.requests[0])).toContain('Up to 4 sub-agents run in parallel');
    const classified = await app.runs.events(run.run_id, { types: ['adaptive.classified'] });
    expect(classified).toHaveLength(1);
    expect(classified[0].payload).toMatchObject({ preset: 'fan_out', source: 'heuristic' });
    expect(JSON.stringify(classified[0].payload)).not.toContain('Audit');
    expect(adaptiveSequence(events, run.session_id).slice(0, 2)).toEqual(['changed', 'genome']);
  });

  it('classifies from config, an override and the operating pack, and re-classifies when the pack changes (ADAPT-03)', async () => {
    const configured = await adaptiveApp([reply().text('ok')], {
      classifier: 'config',
      default_preset: 'plan_then_execute',
    });
    const a = await configured.app.agent.run({ prompt: 'Say hi' });
    expect(await snapshotOf(configured.app, a.session_id)).toMatchObject({
      classification_source: 'config',
      effective_genome: { choreography_preset: 'plan_then_execute', plan_gate: true },
    });
    // plan_gate: the session entered the planning phase before the run assembled its tools.
    expect((await configured.app.sessions.get(a.session_id))?.metadata.workflow_phase).toBe('planning');

    const overridden = await adaptiveApp([reply().text('ok'), reply().text('VERDICT: approve')]);
    const session = await overridden.app.agent.createSession({
      metadata: { adaptive_preset: 'executor_reviewer' },
    });
    await overridden.app.agent.run({ prompt: 'Say hi', sessionId: session.id });
    await overridden.app.adaptive!.idle();
    expect(await snapshotOf(overridden.app, session.id)).toMatchObject({
      classification_source: 'override',
      effective_genome: { choreography_preset: 'executor_reviewer', review_gate: true },
    });

    const packed = await adaptiveApp(
      [reply().text('ok'), reply().text('ok')],
      {},
      {
        options: { operating_packs: true },
        files: { '.svc/packs/swarm/pack.toml': 'name = "swarm"\n[choreography]\npreset = "fan_out"\n' },
      },
    );
    const p = await packed.app.agent.createSession({ title: 'packed' });
    await invokeTool(
      packed.app,
      'session_set_pack',
      { pack_path_or_name: 'swarm' },
      { surface: 'agent', sessionId: p.id },
    );
    await packed.app.agent.run({ prompt: 'Say hi', sessionId: p.id });
    expect(await snapshotOf(packed.app, p.id)).toMatchObject({
      classification_source: 'pack',
      effective_genome: { choreography_preset: 'fan_out' },
    });
    await invokeTool(packed.app, 'session_clear_pack', {}, { surface: 'agent', sessionId: p.id });
    const before = packed.events.length;
    await packed.app.agent.run({ prompt: 'Say hi again', sessionId: p.id });
    const later = packed.events.slice(before);
    // The pack-sourced genome is removed (cleared), then the classifier runs without the pack.
    const cleared = payloads(later, 'genome').find((g) => g.action === 'cleared');
    expect(cleared).toMatchObject({ action: 'cleared', posture: { state: 'enabled-idle' } });
    expect(cleared.posture.reason).toContain(
      'the operating pack that chose the genome no longer sets a choreography',
    );
    expect(await snapshotOf(packed.app, p.id)).toMatchObject({
      action: 'updated',
      classification_source: 'heuristic',
      effective_genome: { choreography_preset: 'solo' },
    });
  });
});

describe('adaptive orchestration: the monitor reshapes after failures', () => {
  it('ADAPT-02, ADAPT-16: failed runs reshape the genome: recorded, then applied at once when the session is idle', async () => {
    const { app, provider, events } = await adaptiveApp([
      reply().text('first answer'),
      fail(),
      fail(),
      reply().text('after the reshape'),
      reply().text('VERDICT: approve'),
    ]);
    const first = await app.agent.run({ prompt: 'Say hello' });
    const sessionId = first.session_id;
    const second = await app.agent.run({ prompt: 'Try the task', sessionId });
    expect(second).toMatchObject({ status: 'failed', reason: 'provider_error' });
    const third = await app.agent.run({ prompt: 'Try the task again', sessionId });
    expect(third.status).toBe('failed');
    expect(adaptiveSequence(events, sessionId)).toEqual([
      'changed', // run 1: classification
      'genome',
      'changed', // run 1 ended: evaluation, nothing crossed
      'genome',
      'changed', // run 2 ended: 1 of 2 failed
      'genome',
      'changed', // run 3 ended: 2 of 3 failed → reshape proposed
      'genome',
      'reshape:recorded',
      'changed', // no run active: applied at this boundary
      'genome',
      'reshape:applied',
    ]);
    const mine = events.filter((e) => e.session_id === sessionId);
    const finishedAt = mine.findIndex((e) => e.type === 'run.finished' && e.payload.run_id === third.run_id);
    const idleAt = mine.findIndex(
      (e, i) => i > finishedAt && e.type === 'state.changed' && (e.payload as any).state === 'idle',
    );
    const appliedAt = mine.findIndex((e) => (e.payload as any).reshape_action === 'applied');
    expect(finishedAt).toBeLessThan(idleAt);
    expect(idleAt).toBeLessThan(appliedAt);
    const applied = payloads(events, 'reshape').at(-1);
    expect(applied).toMatchObject({
      action: 'updated',
      runtime_apply_status: 'applied',
      posture: { state: 'applied', applied: true },
      effective_genome: { choreography_preset: 'executor_reviewer', review_gate: true, topology: 'pipeline' },
      last_reshape_reason:
        'run_failures: 2 of 3 run(s) failed (threshold 50%, at least 2); add a reviewer pass (executor_reviewer)',
    });
    await app.agent.run({ prompt: 'One more time', sessionId });
    expect(systemOf(requestFor(provider, 'One more time'))).toContain('Choreography: executor_reviewer');
    await app.adaptive!.idle();
  });

  it('ADAPT-11/ADAPT-12/ADAPT-13/ADAPT-14, ADAPT-18, ADAPT-29, ADAPT-23/ADAPT-24/ADAPT-25/ADAPT-26/ADAPT-27/ADAPT-28, EVT-11/EVT-12/EVT-13, EVT-16, EVT-17, EVT-28, EVT-29: sub-agent failures during a fan_out run queue a reshape that applies when the run ends', async () => {
    // One responder for every request: the coordinator fans out to two sub-agents, which fail;
    // later runs answer; a reviewer approves.
    const respond = (request: RecordedRequest) => {
      const messages = request.body.messages as { role: string; content: unknown }[];
      const user = JSON.stringify(messages.filter((m) => m.role === 'user').at(-1)?.content ?? '');
      if (user.includes('You are the reviewer')) return reply().text('Complete.\nVERDICT: approve');
      if (systemOf(request).includes('You are a sub-agent working on one task')) return fail();
      if (messages.at(-1)?.role === 'tool') return reply().text('combined what the sub-agents said');
      if (systemOf(request).includes('Choreography: fan_out')) {
        return reply()
          .toolCall('agent', { prompt: 'part A', agent: 'general' })
          .toolCall('agent', { prompt: 'part B', agent: 'general' });
      }
      return reply().text('done');
    };
    const { app, provider, events } = await adaptiveApp(Array(8).fill(respond), {
      classifier: 'config',
      default_preset: 'fan_out',
    });
    const clock = app.clock as TestClock;
    // Every adaptive event, checked against the committed state at the moment it is published.
    const atPublish: { type: string; payload: any; state: any; trace: unknown; revision: number }[] = [];
    const snapshots: Promise<void>[] = [];
    app.bus.subscribe('*', (event) => {
      if (!event.type.startsWith('adaptive_orchestration.')) return;
      clock.advance(1000);
      const seen = {
        type: event.type,
        payload: event.payload,
        state: undefined as any,
        trace: app.adaptive!.promptTrace(event.session_id),
        revision: -1,
      };
      atPublish.push(seen);
      // Read now (the SQLite store answers at once), awaited with the snapshots.
      snapshots.push(
        app.adaptive!.store.get(event.session_id).then((row) => {
          seen.revision = row!.revision;
        }),
      );
      snapshots.push(
        app.adaptive!.snapshot(event.session_id).then((state) => {
          seen.state = state;
        }),
      );
    });

    const first = await app.agent.run({ prompt: 'Do both parts', yolo: true });
    expect(first.status).toBe('completed');
    const sessionId = first.session_id;
    expect(adaptiveSequence(events, sessionId)).toEqual([
      'changed', // classification: fan_out
      'genome',
      'changed', // the first sub-agent failed: 1 of 1, below min_failures
      'genome',
      'changed', // the second failed: 2 of 2 → reshape recorded while the run is active …
      'genome',
      'reshape:recorded',
      'changed', // … so it is queued
      'genome',
      'reshape:queued',
      'changed', // the run ended: applied at this boundary
      'genome',
      'reshape:applied',
      'changed', // then the run itself is evaluated under the new genome
      'genome',
    ]);

    // EVT-11, EVT-12: changed is a refresh signal only.
    for (const changed of payloads(events, 'changed')) {
      expect(changed).toEqual({
        type: 'adaptive_orchestration.changed',
        session_id: sessionId,
        action: 'updated',
      });
    }
    // EVT-28, EVT-29: at publish time the state equals the payload and the prompt trace matches it.
    await Promise.all(snapshots);
    for (const seen of atPublish.filter((s) => s.type !== 'adaptive_orchestration.changed')) {
      const { reshape_action, ...fields } = seen.payload;
      expect(fields).toEqual(seen.state);
      expect((seen.trace as any).genome_fingerprint).toBe(fingerprint(fields.effective_genome));
      expect((seen.trace as any).revision).toBe(seen.revision);
      if (seen.type === 'adaptive_orchestration.reshape') {
        expect(['recorded', 'queued', 'applied', 'blocked', 'cleared']).toContain(reshape_action);
      }
    }
    const [recorded, queued, applied] = payloads(events, 'reshape');
    // EVT-17: snapshot fields plus reshape_action.
    expect(Object.keys(queued).sort()).toEqual(
      [...Object.keys(atPublish.find((s) => s.payload === queued)!.state), 'reshape_action'].sort(),
    );
    expect(recorded).toMatchObject({
      runtime_apply_status: 'applied',
      effective_genome: { choreography_preset: 'fan_out' },
    });
    expect(queued).toMatchObject({
      runtime_apply_status: 'pending',
      posture: { state: 'pending-apply', pending_apply: true },
      effective_genome: { choreography_preset: 'fan_out' },
    });
    expect(Number.isNaN(Date.parse(queued.runtime_apply_pending_since))).toBe(false);
    expect(queued.runtime_apply_pending_reason).toBe(
      `run_failures: waiting for the active run ${first.run_id} to end`,
    );
    expect(applied).toMatchObject({
      action: 'updated',
      runtime_apply_status: 'applied',
      posture: {
        state: 'applied',
        applied: true,
        pending_apply: false,
        efficacy_verdict: 'insufficient_evidence',
      },
      effective_genome: {
        choreography_preset: 'executor_reviewer',
        review_gate: true,
        max_parallel_agents: 1,
      },
    });
    expect(applied).not.toHaveProperty('runtime_apply_error');
    expect(applied).not.toHaveProperty('runtime_apply_pending_since');
    expect(applied.last_reshape_signal_id).toBe(queued.last_monitor_evaluation.signal_id);
    // EVT-13: the last genome event is the snapshot every surface reads.
    const snapshot = await snapshotOf(app, sessionId);
    expect(payloads(events, 'genome').at(-1)).toEqual(snapshot);

    // ADAPT-14, ADAPT-23..26: the history, newest first.
    const history = snapshot.regulatory_history;
    expect(history.map((h: any) => h.event_kind)).toEqual([
      'eval_recorded',
      'reshape_applied',
      'eval_recorded',
      'eval_recorded',
    ]);
    const times = history.map((h: any) => Date.parse(h.at));
    expect([...times].sort((x, y) => y - x)).toEqual(times);
    expect(new Set(times).size).toBe(times.length);
    for (const item of history) {
      expect(Object.keys(item.evaluation).sort()).toEqual(['cadence', 'decision', 'reason', 'signal_id']);
      expect(item.evaluation.cadence).toBe(1);
      expect(['eval_skipped', 'eval_recorded', 'reshape_applied']).toContain(item.event_kind);
    }
    expect(history[1]).toMatchObject({
      previous_genome_fingerprint: expect.stringMatching(/^[0-9a-f]{16}$/),
      next_genome_fingerprint: fingerprint(applied.effective_genome),
    });
    expect(history[0]).not.toHaveProperty('previous_genome_fingerprint');
    expect(history[1].evaluation).toEqual(queued.last_monitor_evaluation);

    // The next runs work under the new genome: its guidance is in the prompt, a reviewer checks.
    const second = await app.agent.run({ prompt: 'One more time', sessionId });
    expect(second.status).toBe('completed');
    expect(systemOf(requestFor(provider, 'One more time'))).toContain('Choreography: executor_reviewer');
    expect(toolNamesOf(requestFor(provider, 'One more time'))).toContain('agent');
    await app.adaptive!.idle();
    await app.agent.run({ prompt: 'And again', sessionId });
    await app.adaptive!.idle();
    // ADAPT-18: three completed runs after the reshape against 2 of 2 failed before it.
    expect((await snapshotOf(app, sessionId)).posture.efficacy_verdict).toBe('improved');
  });

  it('tool errors through the real loop add a reviewer pass', async () => {
    const { app, events } = await adaptiveApp(
      [
        reply().toolCall('explode', {}).toolCall('explode', {}).toolCall('explode', {}),
        reply().text('the tool keeps failing'),
      ],
      {},
      { extraTools: [throwingTool] },
    );
    const run = await app.agent.run({ prompt: 'Use the tool' });
    expect(run.status).toBe('completed');
    expect(adaptiveSequence(events, run.session_id).slice(-4)).toEqual([
      'reshape:recorded',
      'changed',
      'genome',
      'reshape:applied',
    ]);
    expect(await snapshotOf(app, run.session_id)).toMatchObject({
      effective_genome: { choreography_preset: 'executor_reviewer', review_gate: true },
      last_reshape_reason: 'tool_errors: 3 failed tool call(s) in 1 run(s); add a reviewer pass',
    });
  });

  it('ADAPT-15: a window of cancelled runs is skipped with a skip_reason', async () => {
    const gate = gateTool();
    const { app } = await adaptiveApp([reply().toolCall('gate', {})], {}, { extraTools: [gate.tool] });
    const sent = await app.agent.send({ prompt: 'Wait at the gate' });
    await gate.reached;
    await app.agent.cancel(sent.session_id);
    const result = await app.agent.wait(sent.run_id);
    expect(result.status).toBe('cancelled');
    const snapshot = await snapshotOf(app, sent.session_id);
    expect(snapshot.last_monitor_evaluation).toEqual({
      cadence: 1,
      decision: 'skipped',
      reason:
        '1 run(s) in the window, none completed or failed: cancelled and interrupted runs say nothing about the genome',
      signal_id: expect.stringMatching(/^sig_/),
      skip_reason: 'no_attributable_runs',
    });
    expect(snapshot.regulatory_history[0].event_kind).toBe('eval_skipped');
    expect(snapshot.regulatory_history[0].evaluation.skip_reason).toBe('no_attributable_runs');
  });

  it('ADAPT-04, EVT-14, EVT-15: with the classifier off the monitor records monitor-only evaluations', async () => {
    const { app, events } = await adaptiveApp([reply().text('ok')], { classifier: 'off' });
    const run = await app.agent.run({ prompt: 'Say hi' });
    expect(adaptiveSequence(events, run.session_id)).toEqual(['monitor_evaluation']);
    const [event] = payloads(events, 'monitor_evaluation');
    expect(Object.keys(event).sort()).toEqual([
      'action',
      'last_monitor_evaluation',
      'posture',
      'session_id',
      'type',
    ]);
    expect(event).toMatchObject({
      type: 'adaptive_orchestration.monitor_evaluation',
      session_id: run.session_id,
      action: 'monitor_evaluation',
      last_monitor_evaluation: { decision: 'recorded', cadence: 1 },
    });
    const snapshot = await snapshotOf(app, run.session_id);
    expect(snapshot).toMatchObject({ action: 'monitor_evaluation', posture: { state: 'active' } });
    expect(snapshot).not.toHaveProperty('effective_genome');
    expect(snapshot.last_monitor_evaluation).toEqual(event.last_monitor_evaluation);
  });

  it('ADAPT-28: a pack policy that withholds the agent tool blocks a reshape to executor_reviewer', async () => {
    const { app, events } = await adaptiveApp(
      [fail(), fail()],
      {},
      {
        options: { operating_packs: true },
        files: {
          '.svc/packs/nosub/pack.toml': 'name = "nosub"\n[[policy]]\ntool = "agent"\neffect = "deny"\n',
        },
      },
    );
    const session = await app.agent.createSession({ title: 'blocked' });
    await invokeTool(
      app,
      'session_set_pack',
      { pack_path_or_name: 'nosub' },
      { surface: 'agent', sessionId: session.id },
    );
    await app.agent.run({ prompt: 'Try it', sessionId: session.id });
    await app.agent.run({ prompt: 'Try it again', sessionId: session.id });
    expect(adaptiveSequence(events, session.id).slice(-4)).toEqual([
      'changed',
      'genome',
      'reshape:recorded',
      'reshape:blocked',
    ]);
    const snapshot = await snapshotOf(app, session.id);
    expect(snapshot.effective_genome.choreography_preset).toBe('solo');
    expect(snapshot.runtime_apply_status).toBe('applied');
    expect(snapshot.last_monitor_evaluation.reason).toContain(
      'blocked: agent is withheld by agent_policy: pack nosub: denied by the operating pack policy',
    );
  });

  it('ADAPT-13, ADAPT-29: a failed apply is degraded with runtime_apply_error until the next boundary applies it', async () => {
    const { app, provider } = await adaptiveApp(
      [fail(), fail(), reply().text('fixed'), reply().text('VERDICT: approve')],
      {
        reviewer_agent: 'build',
      },
    );
    const first = await app.agent.run({ prompt: 'Try it' });
    const sessionId = first.session_id;
    await app.agent.run({ prompt: 'Try it again', sessionId });
    const failed = await snapshotOf(app, sessionId);
    expect(failed).toMatchObject({
      runtime_apply_status: 'pending',
      runtime_apply_error:
        'options.adaptive_orchestration.reviewer_agent: "build" is a primary agent and cannot be used as a subagent one; use one of explore, general',
      posture: { state: 'degraded', degraded: true, pending_apply: true },
      effective_genome: { choreography_preset: 'solo' },
    });
    updateConfig(app, (c) => {
      c.options.adaptive_orchestration.reviewer_agent = 'explore';
    });
    // The next run start is a boundary: the reshape applies before the run's prompt is assembled.
    await app.agent.run({ prompt: 'Now', sessionId });
    expect(systemOf(requestFor(provider, 'Now'))).toContain('Choreography: executor_reviewer');
    const applied = await snapshotOf(app, sessionId);
    expect(applied).toMatchObject({ runtime_apply_status: 'applied', posture: { state: 'applied' } });
    expect(applied).not.toHaveProperty('runtime_apply_error');
    await app.adaptive!.idle();
  });

  it('ADAPT-03: removed or unavailable adaptive state answers action cleared', async () => {
    const { app, events } = await adaptiveApp([reply().text('ok')]);
    const run = await app.agent.run({ prompt: 'Say hi' });
    const removed = await app.adaptive!.reset(run.session_id, 'reset by the operator');
    expect(removed).toMatchObject({
      action: 'cleared',
      posture: {
        state: 'enabled-idle',
        reason: 'adaptive state cleared: reset by the operator; the next run classifies again',
      },
    });
    expect(payloads(events, 'genome').at(-1)).toEqual(removed);
    expect(await snapshotOf(app, run.session_id)).toEqual(removed);
    // The gate closed with evidence in the database: the state is unavailable, so cleared.
    updateConfig(app, (c) => {
      c.options.adaptive_orchestration.enabled = false;
    });
    expect(await app.adaptive!.snapshot(run.session_id, { posture: true })).toMatchObject({
      action: 'cleared',
      posture: { state: 'disabled', configured: false, available: false },
    });
  });

  it('clears a queued reshape when the gate closes before the boundary', async () => {
    const { app, events } = await adaptiveApp([fail(), fail(), reply().text('ok')], {
      reviewer_agent: 'build',
    });
    const first = await app.agent.run({ prompt: 'Try it' });
    await app.agent.run({ prompt: 'Try it again', sessionId: first.session_id });
    expect((await snapshotOf(app, first.session_id)).runtime_apply_status).toBe('pending');
    updateConfig(app, (c) => {
      c.options.adaptive_orchestration.enabled = false;
    });
    await app.agent.run({ prompt: 'Go on', sessionId: first.session_id });
    const cleared = payloads(events, 'reshape').at(-1);
    expect(cleared).toMatchObject({
      reshape_action: 'cleared',
      action: 'cleared',
      posture: { state: 'disabled' },
    });
    const row = (await app.adaptive!.store.get(first.session_id))!;
    expect(row).toMatchObject({ proposal: null, apply_status: 'applied', apply_error: '' });
  });

  it('ADAPT-27: a genome written by a newer svc is unknown and never applied', async () => {
    const { app, provider } = await adaptiveApp([reply().text('ok')]);
    const session = await app.agent.createSession({ title: 'future' });
    app.db
      .prepare(
        'INSERT INTO adaptive_sessions (session_id, genome, revision, last_action, updated_at) VALUES (?, ?, 1, ?, 0)',
      )
      .run(session.id, JSON.stringify({ schema_version: 2, choreography_preset: 'swarm' }), 'updated');
    const snapshot = await snapshotOf(app, session.id);
    expect(snapshot).toMatchObject({
      action: 'unknown',
      posture: { state: 'unknown', degraded: true },
    });
    expect(snapshot.posture.reason).toBe(
      'the stored genome has schema_version 2; this svc reads schema_version 1; it is not applied',
    );
    await app.agent.run({ prompt: 'Say hi', sessionId: session.id });
    expect(systemOf(provider.requests[0])).not.toContain('Orchestration genome');
    expect((await snapshotOf(app, session.id)).posture.state).toBe('unknown');
  });
});

describe('adaptive orchestration: regulatory history and limits', () => {
  async function runs(max: number, count: number) {
    const { app } = await adaptiveApp(
      Array.from({ length: count }, (_, i) => reply().text(`answer ${i}`)),
      { monitor: { regulatory_history_max_events: max } },
    );
    const first = await app.agent.run({ prompt: 'Say hi' });
    for (let i = 1; i < count; i++)
      await app.agent.run({ prompt: `Say hi ${i}`, sessionId: first.session_id });
    return { app, sessionId: first.session_id };
  }

  it('LIM-01: at most 32 events per response although the ring keeps 100', async () => {
    const { app, sessionId } = await runs(100, 50);
    const snapshot = await snapshotOf(app, sessionId);
    expect(snapshot.regulatory_history).toHaveLength(32);
    expect(await app.adaptive!.store.evaluations(sessionId, 1000)).toHaveLength(50);
    expect(snapshot.regulatory_history[0].evaluation).toEqual(snapshot.last_monitor_evaluation);
  });

  it('CFG-21: more than 0 enables regulatory_history (at most that many items)', async () => {
    const { app, sessionId } = await runs(5, 7);
    const snapshot = await snapshotOf(app, sessionId);
    expect(snapshot.regulatory_history).toHaveLength(5);
    expect(snapshot.posture.decision_trace_available).toBe(true);
  });

  it('CFG-22: 0 disables regulatory_history and omits the key', async () => {
    const { app, sessionId } = await runs(0, 3);
    const snapshot = await snapshotOf(app, sessionId);
    expect(snapshot).not.toHaveProperty('regulatory_history');
    expect(snapshot.posture.decision_trace_available).toBe(false);
    expect(snapshot.last_monitor_evaluation.decision).toBe('recorded');
  });
});

describe('adaptive orchestration: what the payload never holds', () => {
  it('ADAPT-19, ADAPT-20, ADAPT-21, ADAPT-22: no prompt, tool body, model response or full digest', async () => {
    const PROMPT = 'PROMPT-MARKER-a1b2';
    const TOOL = 'TOOL-BODY-MARKER-c3d4';
    const RESPONSE = 'RESPONSE-MARKER-e5f6';
    const { app, events } = await adaptiveApp(
      [reply().toolCall('echo', { text: TOOL }), reply().text(`${RESPONSE} done`), fail(), fail()],
      {},
      { extraTools: [echoTool] },
    );
    const run = await app.agent.run({ prompt: `Refactor carefully ${PROMPT}` });
    await app.agent.run({ prompt: `again ${PROMPT}`, sessionId: run.session_id });
    await app.agent.run({ prompt: `and again ${PROMPT}`, sessionId: run.session_id });
    const all = JSON.stringify([
      await snapshotOf(app, run.session_id),
      ...adaptiveEvents(events).map((e) => e.payload),
    ]);
    expect(adaptiveEvents(events).length).toBeGreaterThan(5);
    for (const marker of [PROMPT, TOOL, RESPONSE]) expect(all).not.toContain(marker);
    // Only 16-character fingerprints: no full sha256 digest anywhere.
    expect(all).not.toMatch(/[0-9a-f]{64}/);
    expect(all).toMatch(/"[0-9a-f]{16}"/);
  });
});

describe('adaptive orchestration: eval shadow hints', () => {
  it('ADAPT-09, ADAPT-10: hint_sources appears once the eval-shadow aggregate feeds the monitor', async () => {
    const { app } = await adaptiveApp([reply().text('a'), reply().text('b'), reply().text('c')], {
      eval_shadow: { min_evaluations: 2 },
    });
    const first = await app.agent.run({ prompt: 'Say hi' });
    await app.agent.run({ prompt: 'Say hi again', sessionId: first.session_id });
    expect(await snapshotOf(app, first.session_id)).not.toHaveProperty('hint_sources');
    await app.agent.run({ prompt: 'And once more', sessionId: first.session_id });
    const snapshot = await snapshotOf(app, first.session_id);
    expect(snapshot.hint_sources).toBe('eval_shadow');
    expect(snapshot.hint_sources.split(',')).toEqual(['eval_shadow']);
    const summary = (await invokeTool(
      app,
      'eval_shadow_summary',
      { session_id: first.session_id },
      { surface: 'agent' },
    )) as any;
    expect(summary).toMatchObject({
      session_id: first.session_id,
      enabled: true,
      evaluations_scored: 3,
      agreements: 3,
      disagreements: 0,
      agreement_rate: 1,
      hint_feed: { sessions_fed: 1 },
      by_preset_pair: [
        { effective_preset: 'solo', shadow_preset: 'plan_then_execute', scored: 3, agreed: 3 },
      ],
    });
    expect(summary.recent[0]).toMatchObject({
      effective_decision: 'hold',
      shadow_decision: 'hold',
      agreed: true,
    });
  });

  it('ADAPT-10: when the regulators mostly disagreed and the shadow genome holds, the reshape goes to the shadow preset', async () => {
    const loop = () => Array.from({ length: 4 }, () => reply().toolCall('echo', { text: 'again' }));
    const { app } = await adaptiveApp(
      [
        ...loop(),
        ...loop(),
        ...loop(),
        reply().toolCall('explode', {}).toolCall('explode', {}).toolCall('explode', {}),
        reply().text('the tool keeps failing'),
      ],
      { monitor: { window_runs: 1 } },
      { extraTools: [echoTool, throwingTool] },
    );
    // plan_then_execute (plan words win), shadow executor_reviewer (the review words come second).
    const first = await app.agent.run({ prompt: 'Refactor the module carefully and fix the bug' });
    expect(await snapshotOf(app, first.session_id)).toMatchObject({
      effective_genome: { choreography_preset: 'plan_then_execute' },
    });
    // Loop stops: the plan gate already answers them (hold); the shadow would add it (disagree).
    await app.agent.run({ prompt: 'Loop again', sessionId: first.session_id });
    await app.agent.run({ prompt: 'And loop again', sessionId: first.session_id });
    // Tool errors: the effective regulator adds a review gate; the shadow already has one.
    await app.agent.run({ prompt: 'Use the tool', sessionId: first.session_id });
    const snapshot = await snapshotOf(app, first.session_id);
    expect(snapshot).toMatchObject({
      hint_sources: 'eval_shadow',
      effective_genome: { choreography_preset: 'executor_reviewer', review_gate: true, plan_gate: false },
    });
    expect(snapshot.last_reshape_reason).toBe(
      'tool_errors: 3 failed tool call(s) in 1 run(s); add a reviewer pass; eval_shadow: the regulators agreed in 0 of 3 scored evaluations and executor_reviewer holds under these signals, so the reshape goes to it',
    );
    const summary = (await invokeTool(app, 'eval_shadow_summary', {}, { surface: 'agent' })) as any;
    expect(summary).toMatchObject({
      evaluations_scored: 4,
      agreements: 0,
      disagreements: 4,
      agreement_rate: 0,
    });
    expect(summary.recent[0]).toMatchObject({
      effective_decision: 'reshape:plan_then_execute',
      shadow_decision: 'hold',
      agreed: false,
    });
  });
});
