/**
 * The runtime health status tools, each against the real agent loop (fake provider) so the
 * readout changes when the underlying state does. Pins:
 * - get_length_recovery_status + the loop's length recovery: a step cut by the output limit
 *   continues the turn with the continuation note (not stored), length_recovery ledger events,
 *   recovered / exhausted / not_attempted;
 * - get_loop_detection_status: config, loop.detected history, the run it stopped;
 * - get_compaction_reactions: auto, manual and health follow-on compactions with tokens, the
 *   run's continuation and the errors after it;
 * - get_runtime_incident_status: tool crashes, provider errors, failed and interrupted runs;
 * - get_alerts_status: token pressure (cleared by a compaction), repeated failures, provider
 *   errors, tool crashes, hook failures, the window;
 * - get_enforcement_status: yolo, read-only allows, unattended denials, operator answers and
 *   grants, bash blocks, hard-claim refusals, pack policy removals;
 * - list_recent_flow_awareness_events: queue changes, plan/phase changes, handoffs, claim
 *   negotiations, kind and after_id filters;
 * - runtime_features reflects what is wired (health follow-on SSE, length recovery, sandbox).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { LENGTH_CONTINUATION_NOTE } from '../../src/agent/system-prompt.prompt';
import type { App } from '../../src/app';
import { probeBwrap } from '../../src/sandbox/bwrap';
import { createHttpApp } from '../../src/surfaces/http/index';
import { invokeTool } from '../../src/tools/core/call-tool';
import { runtimeFeatures } from '../../src/tools/inspect-tools';
import { agentApp, echoTool, gateTool, throwingTool, touchTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import type { TestClock } from '../helpers/make-test-app';

const status = (app: App, name: string, input: Record<string, unknown> = {}, sessionId?: string) =>
  invokeTool(app, name, input, { surface: 'agent', sessionId }) as Promise<any>;

const WINDOW = { context_window: 1000 };

describe('get_length_recovery_status and length recovery', () => {
  it('continues a turn cut by the output limit and reports it recovered', async () => {
    const { app, provider } = await agentApp(
      [
        reply().text('first half').finish('length').usage(50, 100),
        reply().text(' second half').usage(160, 20),
      ],
      {},
    );
    expect((await status(app, 'get_length_recovery_status')).counts).toEqual({
      length_finishes: 0,
      attempts: 0,
      runs: 0,
      recovered: 0,
      exhausted: 0,
      not_attempted: 0,
      in_progress: 0,
    });
    const result = await app.agent.run({ prompt: 'write a lot' });
    expect(result).toMatchObject({ status: 'completed', reason: null, steps: 2, text: ' second half' });
    // The continuation request: the stored partial answer, then the note (which is not stored).
    const messages = provider.requests[1].body.messages;
    expect(messages.at(-2)).toMatchObject({ role: 'assistant', content: 'first half' });
    expect(messages.at(-1)).toEqual({ role: 'user', content: LENGTH_CONTINUATION_NOTE });
    expect((await app.sessions.messages(result.session_id)).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'assistant',
    ]);
    const ledger = await app.runs.events(result.run_id, { types: ['length_recovery'] });
    expect(ledger.map((e) => e.payload)).toEqual([
      { attempt: 1, max_attempts: 2, step: 1, output_tokens: 100 },
    ]);
    const readout = await status(app, 'get_length_recovery_status');
    expect(readout).toMatchObject({
      config: { enabled: true, max_attempts: 2 },
      counts: { length_finishes: 1, attempts: 1, runs: 1, recovered: 1, exhausted: 0 },
      recent: [
        {
          run_id: result.run_id,
          session_id: result.session_id,
          length_finishes: 1,
          attempts: 1,
          outcome: 'recovered',
          run_status: 'completed',
        },
      ],
    });
  });

  it('stops after max_attempts (exhausted) and does nothing when off (not_attempted)', async () => {
    const { app } = await agentApp(
      [
        reply().text('a').finish('length'),
        reply().text('b').finish('length'),
        reply().text('c').finish('length'),
        reply().text('d').finish('length'),
      ],
      { extraConfig: { options: { length_recovery: { max_attempts: 1 } } } },
    );
    const exhausted = await app.agent.run({ prompt: 'long' });
    expect(exhausted).toMatchObject({
      status: 'completed',
      reason: 'length: the model reached its output token limit',
    });
    await invokeTool(
      app,
      'config',
      { action: 'set', key: 'options.length_recovery.enabled', value: false },
      { surface: 'cli' },
    );
    const off = await app.agent.run({ prompt: 'long again' });
    expect(off).toMatchObject({ steps: 1, reason: 'length: the model reached its output token limit' });
    const readout = await status(app, 'get_length_recovery_status');
    expect(readout.config).toEqual({ enabled: false, max_attempts: 1 });
    expect(readout.counts).toMatchObject({
      length_finishes: 3,
      attempts: 1,
      runs: 2,
      exhausted: 1,
      not_attempted: 1,
    });
    expect(readout.recent.map((r: { run_id: string; outcome: string }) => [r.run_id, r.outcome])).toEqual([
      [off.run_id, 'not_attempted'],
      [exhausted.run_id, 'exhausted'],
    ]);
  });
});

describe('get_loop_detection_status', () => {
  it('reports the config, the loop.detected history and the stopped run', async () => {
    const { app } = await agentApp(
      [reply().toolCall('echo', { text: 'again' }), reply().toolCall('echo', { text: 'again' })],
      { extraTools: [echoTool], extraConfig: { options: { loop_detection: { max_repeats: 2 } } } },
    );
    const before = await status(app, 'get_loop_detection_status');
    expect(before).toMatchObject({
      config: { enabled: true, max_repeats: 2 },
      detections: { total: 0, by_tool: [], last_detected_at: null },
      history: [],
      recent_stops: [],
    });
    const result = await app.agent.run({ prompt: 'loop' });
    expect(result.status).toBe('failed');
    const after = await status(app, 'get_loop_detection_status');
    expect(after.detections).toEqual({
      total: 1,
      by_tool: [{ tool: 'echo', count: 1 }],
      last_detected_at: app.clock.now(),
    });
    expect(after.history).toEqual([
      { at: app.clock.now(), session_id: result.session_id, run_id: result.run_id, tool: 'echo', repeats: 2 },
    ]);
    expect(after.recent_stops).toMatchObject([
      {
        run_id: result.run_id,
        status: 'failed',
        reason: expect.stringMatching(/^loop detected: echo was called 2 times/),
      },
    ]);
    // A session filter narrows it; another session sees none.
    const other = await app.sessions.create({ title: 'other' });
    expect((await status(app, 'get_loop_detection_status', { session_id: other.id })).detections.total).toBe(
      0,
    );
  });
});

describe('get_compaction_reactions', () => {
  it('follows each compaction: tokens, whether the run went on, the errors after it', async () => {
    const { app } = await agentApp(
      [
        // Run 1: auto compaction between steps, then a clean finish.
        reply().toolCall('echo', { text: 'big' }).usage(900, 20),
        reply().text('SUMMARY 1'),
        reply().text('done one').usage(100, 5),
        // Run 2: auto compaction, then a crashing tool, then a finish.
        reply().toolCall('echo', { text: 'big' }).usage(900, 20),
        reply().text('SUMMARY 2'),
        reply().toolCall('explode', {}).usage(100, 5),
        reply().text('done two').usage(120, 5),
        // Another turn in run 1's session, summarize_session between runs, then run 3 there.
        reply().text('more').usage(90, 5),
        reply().text('SUMMARY 3'),
        reply().text('done three').usage(90, 5),
      ],
      { extraTools: [echoTool, throwingTool], modelInfo: WINDOW },
    );
    expect((await status(app, 'get_compaction_reactions')).counts.compactions).toBe(0);
    const one = await app.agent.run({ prompt: 'one' });
    const two = await app.agent.run({ prompt: 'two' });
    await app.agent.run({ sessionId: one.session_id, prompt: 'more' });
    const manual = await app.agent.summarize(one.session_id);
    const three = await app.agent.run({ sessionId: one.session_id, prompt: 'three' });
    expect([one.status, two.status, three.status]).toEqual(['completed', 'completed', 'completed']);
    const readout = await status(app, 'get_compaction_reactions');
    expect(readout.counts).toEqual({
      compactions: 3,
      auto: 2,
      manual: 1,
      health_followon: 0,
      continued_successfully: 3,
      followed_by_errors: 1,
      failed: 0,
    });
    const [third, second, first] = readout.reactions;
    expect(first).toMatchObject({
      session_id: one.session_id,
      reason: 'auto',
      run_id: one.run_id,
      tokens_before: 920,
      observed_run_id: one.run_id,
      observed_run_status: 'completed',
      steps_after: 1,
      continued_successfully: true,
      subsequent_errors: 0,
      errors: [],
    });
    expect(first.tokens_saved).toBe(first.tokens_before - first.tokens_after);
    expect(second).toMatchObject({
      run_id: two.run_id,
      steps_after: 2,
      subsequent_errors: 1,
      errors: [{ kind: 'tool_error', summary: expect.stringContaining('kaboom') }],
    });
    expect(third).toMatchObject({
      reason: 'manual',
      run_id: null,
      summary_message_id: manual.summary_message_id,
      observed_run_id: three.run_id,
      continued_successfully: true,
    });
  });

  it('counts health follow-on compactions and failed compactions', async () => {
    const { app } = await agentApp(
      [
        reply().toolCall('echo', { text: 'big' }).usage(600, 20),
        reply().httpError(400),
        reply().text('went on').usage(700, 5),
      ],
      {
        extraTools: [echoTool],
        modelInfo: WINDOW,
        extraConfig: { options: { health_followons: { token_pressure_threshold: 0.5 } } },
      },
    );
    const result = await app.agent.run({ prompt: 'pressure' });
    expect(result.status).toBe('completed');
    const readout = await status(app, 'get_compaction_reactions');
    expect(readout.counts).toMatchObject({ compactions: 0, failed: 1 });
    expect(readout.failures).toMatchObject([
      {
        run_id: result.run_id,
        session_id: result.session_id,
        code: 'unavailable',
        message: expect.stringContaining('summarizing failed'),
      },
    ]);
  });
});

describe('get_runtime_incident_status', () => {
  it('counts tool crashes, provider errors, failed and interrupted runs', async () => {
    const gate = gateTool();
    const { app } = await agentApp(
      [
        reply().toolCall('explode', {}),
        reply().text('recovered from the crash'),
        reply().httpError(400, {
          error: { message: 'bad request for this model', type: 'invalid_request_error' },
        }),
        reply().toolCall('gate', {}),
      ],
      { extraTools: [throwingTool, gate.tool] },
    );
    expect(await status(app, 'get_runtime_incident_status')).toMatchObject({
      status: 'ok',
      total: 0,
      last_incident_at: null,
      recent: [],
    });
    const crashed = await app.agent.run({ prompt: 'crash a tool' });
    expect(crashed.status).toBe('completed');
    const failed = await app.agent.run({ prompt: 'fail' });
    expect(failed).toMatchObject({ status: 'failed', reason: 'provider_error' });
    const sent = await app.agent.send({ prompt: 'wait at the gate' });
    await gate.reached;
    await app.agent.close();
    expect((await app.runs.require(sent.run_id)).status).toBe('interrupted');

    const readout = await status(app, 'get_runtime_incident_status', { limit: 10 });
    expect(readout.status).toBe('incidents');
    expect(readout.counts).toEqual({
      provider_error: 1,
      model_unavailable: 0,
      tool_crash: 1,
      failed_run: 1,
      interrupted_run: 1,
      provider_recoveries: 0,
    });
    expect(readout.total).toBe(4);
    expect(readout.recent).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          kind: 'tool_crash',
          tool: 'explode',
          run_id: crashed.run_id,
          summary: expect.stringContaining('kaboom'),
        }),
        expect.objectContaining({
          kind: 'provider_error',
          run_id: failed.run_id,
          summary: expect.stringContaining('HTTP 400'),
        }),
        expect.objectContaining({ kind: 'failed_run', run_id: failed.run_id }),
        expect.objectContaining({ kind: 'interrupted_run', run_id: sent.run_id }),
      ]),
    );
    // Scoped to the crash's session: only its incident.
    const scoped = await status(app, 'get_runtime_incident_status', { session_id: crashed.session_id });
    expect(scoped.counts).toMatchObject({
      tool_crash: 1,
      provider_error: 0,
      failed_run: 0,
      interrupted_run: 0,
    });
    // A limit of 1 lists one, the counts stay whole.
    const one = await status(app, 'get_runtime_incident_status', { limit: 1 });
    expect(one.recent).toHaveLength(1);
    expect(one.total).toBe(4);
  });
});

describe('get_alerts_status', () => {
  it('raises and clears alerts from token pressure, failures, crashes and the window', async () => {
    const { app } = await agentApp(
      [
        // Token pressure on the last step: no boundary left to compact at.
        reply().text('long answer').usage(900, 20),
        reply().text('SUMMARY'),
        reply().httpError(400),
        reply().httpError(400),
        reply().toolCall('explode', {}),
        reply().text('ok now'),
      ],
      {
        extraTools: [throwingTool],
        modelInfo: WINDOW,
        extraConfig: { options: { alerts: { repeated_failures: 2, provider_errors: 2 } } },
      },
    );
    expect(await status(app, 'get_alerts_status')).toMatchObject({
      status: 'ok',
      window_minutes: 60,
      thresholds: {
        token_pressure_ratio: 0.8,
        repeated_failures: 2,
        provider_errors: 2,
        tool_crashes: 1,
        hook_failures: 1,
      },
      counts: { total: 0 },
      active: [],
    });
    const pressured = await app.agent.run({ prompt: 'explain at length' });
    const afterPressure = await status(app, 'get_alerts_status');
    expect(afterPressure.active).toEqual([
      {
        id: `token_pressure:${pressured.session_id}`,
        kind: 'token_pressure',
        severity: 'warning',
        session_id: pressured.session_id,
        summary: 'context at 92% of the model window (threshold 80%), not compacted since',
        value: 0.92,
        threshold: 0.8,
        since: app.clock.now(),
        last_at: app.clock.now(),
      },
    ]);
    await app.agent.summarize(pressured.session_id);
    expect((await status(app, 'get_alerts_status')).active).toEqual([]);

    const session = await app.agent.createSession({ title: 'failing' });
    await app.agent.run({ sessionId: session.id, prompt: 'one' });
    await app.agent.run({ sessionId: session.id, prompt: 'two' });
    const failing = await status(app, 'get_alerts_status');
    expect(failing.status).toBe('alerting');
    expect(failing.active.map((a: { kind: string; severity: string }) => [a.kind, a.severity])).toEqual([
      ['provider_errors', 'critical'],
      ['repeated_failures', 'critical'],
    ]);
    expect(failing.active[1]).toMatchObject({
      session_id: session.id,
      value: 2,
      summary: 'the last 2 runs of the session failed',
    });

    // A good run ends the streak (the provider errors stay in the window); the crash adds one.
    await app.agent.run({ sessionId: session.id, prompt: 'three' });
    const recovered = await status(app, 'get_alerts_status');
    expect(recovered.active.map((a: { kind: string }) => a.kind)).toEqual([
      'provider_errors',
      'tool_crashes',
    ]);
    expect(recovered.counts).toEqual({ total: 2, critical: 1, warning: 1, info: 0 });

    // Past the window everything is quiet again; a wider window brings them back.
    (app.clock as TestClock).advance(61 * 60_000);
    expect((await status(app, 'get_alerts_status')).active).toEqual([]);
    expect((await status(app, 'get_alerts_status', { window_minutes: 120 })).active).toHaveLength(2);
  });

  it('raises hook_failures when a pack hook fails', async () => {
    const { app } = await agentApp([reply().text('done')], {
      files: {
        '.svc/packs/hooky/pack.toml': stringify({
          name: 'hooky',
          hooks: [{ event: 'run.finished', command: 'exit 3' }],
        }),
      },
      extraConfig: { options: { operating_packs: true } },
    });
    const session = await app.agent.createSession({ title: 'packed' });
    await invokeTool(
      app,
      'session_set_pack',
      { pack_path_or_name: 'hooky' },
      { surface: 'agent', sessionId: session.id },
    );
    await app.agent.run({ sessionId: session.id, prompt: 'go' });
    await app.packs!.hooksIdle();
    const alerts = await status(app, 'get_alerts_status', { session_id: session.id });
    expect(alerts.active).toMatchObject([
      {
        kind: 'hook_failures',
        severity: 'warning',
        session_id: session.id,
        value: 1,
        summary: '1 pack hook run(s) failed or timed out (hooky); last: hook 0 on run.finished (failed)',
      },
    ]);
  });
});

describe('get_enforcement_status', () => {
  it('counts allows, denials, yolo, grants, bash blocks and hard-claim refusals', async () => {
    const touched: string[] = [];
    const { app } = await agentApp(
      [
        // Run 1 (--yolo): a blocked bash command, then a read-only one.
        reply().toolCall('bash', { command: 'sudo ls /' }).toolCall('bash', { command: 'ls' }),
        reply().text('done'),
        // Run 2 (attached operator): read-only auto-allow; allow for the session, then covered by
        // the grant; deny.
        reply().toolCall('bash', { command: 'ls' }),
        reply().toolCall('touch', { name: 'a' }),
        reply().toolCall('touch', { name: 'b' }),
        reply().toolCall('bash', { command: 'mkdir made' }),
        reply().text('done'),
        // Run 3 (nobody attached): refused.
        reply().toolCall('bash', { command: 'mkdir alone' }),
        reply().text('done'),
        // Run 4 (another session, --yolo): a write under session 1's hard claim.
        reply().toolCall('write', { path: 'locked.txt', content: 'x' }),
        reply().text('done'),
      ],
      { extraTools: [touchTool(touched)], extraConfig: { permissions: { unattended: 'wait' } } },
    );
    const empty = await status(app, 'get_enforcement_status');
    expect(empty).toMatchObject({
      yolo: { runs: 0, last_run_id: null },
      grants: [],
      permissions: { asks: 0, pending: 0, allowed: { total: 0 }, denied: { total: 0 } },
      bash_blocks: { count: 0 },
      hard_claim_refusals: { count: 0, active_hard_claims: 0 },
      pack_policy_removals: [],
    });
    expect(empty.config).toMatchObject({
      allowed_tools: [],
      unattended: 'wait',
      // issue 15: the sandbox is on by default wherever bubblewrap can run.
      sandbox: { mode: 'auto', enforced: probeBwrap(undefined, app.env, 'none').usable },
    });

    const first = await app.agent.run({ prompt: 'look around', yolo: true });
    const session = first.session_id;
    const detach = app.agent.attach(session, 'test');
    const answers = ['allow_session', 'deny'] as const;
    let answered = 0;
    const off = app.bus.subscribe(session, (event) => {
      if (event.type !== 'permission.requested') return;
      const id = (event.payload as { request_id: string }).request_id;
      queueMicrotask(async () => await app.agent.answerPermission(id, answers[answered++]));
    });
    await app.agent.run({ sessionId: session, prompt: 'touch things' });
    off();
    detach();
    await invokeTool(
      app,
      'config',
      { action: 'set', key: 'permissions.unattended', value: 'fail' },
      { surface: 'cli' },
    );
    await app.agent.run({ sessionId: session, prompt: 'touch alone' });
    await invokeTool(
      app,
      'workspace_claim',
      { action: 'acquire', session_id: session, paths: ['locked.txt'], mode: 'hard', reason: 'mine' },
      { surface: 'agent' },
    );
    const intruder = await app.agent.run({ prompt: 'write it', yolo: true });
    expect(existsSync(join(app.workspace, 'locked.txt'))).toBe(false);
    expect(existsSync(join(app.workspace, 'made'))).toBe(false);
    expect(existsSync(join(app.workspace, 'alone'))).toBe(false);
    expect(touched).toEqual(['a', 'b']);

    const readout = await status(app, 'get_enforcement_status', { session_id: session });
    expect(readout.yolo).toEqual({ runs: 1, last_run_id: first.run_id });
    expect(readout.grants).toMatchObject([{ session_id: session, tool: 'touch', scope: '*' }]);
    expect(readout.permissions).toEqual({
      asks: 2,
      pending: 0,
      allowed: { total: 4, allowed_tools: 0, yolo: 1, session_grant: 1, read_only: 1, operator: 1 },
      denied: { total: 2, operator: 1, cancelled: 0, unattended: 1 },
    });
    expect(readout.bash_blocks).toMatchObject({
      count: 1,
      recent: [{ run_id: first.run_id, reason: expect.stringContaining('sudo') }],
    });
    // The intruder is another session: the scoped readout does not count its refusal …
    expect(readout.hard_claim_refusals).toMatchObject({ count: 0, active_hard_claims: 1 });
    // … the workspace-wide one does.
    const all = await status(app, 'get_enforcement_status');
    expect(all.hard_claim_refusals).toMatchObject({
      count: 1,
      recent: [
        { run_id: intruder.run_id, tool: 'write', summary: expect.stringContaining('hard workspace claim') },
      ],
    });
    expect(all.yolo.runs).toBe(2);
  });

  it('lists the tools an active pack policy removes for the session', async () => {
    const { app } = await agentApp([], {
      files: {
        '.svc/packs/nobash/pack.toml': stringify({
          name: 'nobash',
          policy: [{ tool: 'bash', effect: 'deny', reason: 'no shell here' }],
        }),
      },
      extraConfig: { options: { operating_packs: true } },
    });
    const session = await app.agent.createSession({ title: 'packed' });
    expect((await status(app, 'get_enforcement_status', {}, session.id)).pack_policy_removals).toEqual([]);
    await invokeTool(
      app,
      'session_set_pack',
      { pack_path_or_name: 'nobash' },
      { surface: 'agent', sessionId: session.id },
    );
    const readout = await status(app, 'get_enforcement_status', {}, session.id);
    expect(readout.pack_policy_removals).toEqual([
      { tool: 'bash', source: 'pack nobash', reason: 'denied by the operating pack policy' },
    ]);
  });
});

describe('list_recent_flow_awareness_events', () => {
  it('lists queue changes, plan and phase changes, handoffs and claim negotiations', async () => {
    const { app } = await agentApp([
      reply().toolCall('agent', { prompt: 'look at the code', description: 'explore' }),
      reply().text('child answer'),
      reply().text('parent answer'),
    ]);
    const before = await status(app, 'list_recent_flow_awareness_events');
    expect(before).toMatchObject({ count: 0, events: [] });
    const result = await app.agent.run({ prompt: 'delegate', yolo: true });
    expect(result).toMatchObject({ status: 'completed', text: 'parent answer' });
    const session = result.session_id;
    await invokeTool(
      app,
      'set_plan_artifact',
      { markdown: '1. do it' },
      { surface: 'agent', sessionId: session },
    );
    await invokeTool(app, 'approve_plan', {}, { surface: 'agent', sessionId: session });
    const other = await app.agent.createSession({ title: 'other' });
    const claim = (await invokeTool(
      app,
      'workspace_claim',
      { action: 'acquire', session_id: session, paths: ['src/'], mode: 'soft' },
      { surface: 'agent' },
    )) as { claim: { id: string } };
    await invokeTool(
      app,
      'workspace_claim',
      { action: 'negotiate', session_id: other.id, claim_id: claim.claim.id, message: 'may I?' },
      { surface: 'agent' },
    );

    const readout = await status(app, 'list_recent_flow_awareness_events', { limit: 50 });
    expect(readout.counts).toMatchObject({ handoff: 1, plan_update: 1, claim_negotiation: 1 });
    expect(readout.counts.queue_change).toBeGreaterThanOrEqual(2);
    expect(readout.counts.phase_change).toBeGreaterThanOrEqual(1);
    const handoff = readout.events.find((e: { kind: string }) => e.kind === 'handoff');
    expect(handoff).toMatchObject({ type: 'session.created', details: { parent_session_id: session } });
    expect(readout.events.map((e: { id: number }) => e.id)).toEqual(
      [...readout.events.map((e: { id: number }) => e.id)].sort((a, b) => b - a),
    );
    // Filters: kinds, and after_id for polling.
    const handoffs = await status(app, 'list_recent_flow_awareness_events', { kinds: ['handoff'] });
    expect(handoffs.events.map((e: { kind: string }) => e.kind)).toEqual(['handoff']);
    const newest = readout.events[0].id;
    expect((await status(app, 'list_recent_flow_awareness_events', { after_id: newest })).events).toEqual([]);
    // The session filter covers its sub-agent sessions and leaves the other session out.
    const scoped = await status(app, 'list_recent_flow_awareness_events', {
      session_id: other.id,
      limit: 50,
    });
    expect(scoped.events.map((e: { kind: string }) => e.kind)).not.toContain('handoff');
    expect(
      (await status(app, 'list_recent_flow_awareness_events', { session_id: session, limit: 50 })).counts
        .handoff,
    ).toBe(1);
  });
});

describe('runtime_features', () => {
  it('reflects what is wired: health follow-on SSE, length recovery, sandbox', async () => {
    const { app } = await agentApp([], {
      extraConfig: {
        options: {
          health_followons: {
            emit_declarative_events: true,
            activation_caps: { emit_activation_telemetry_sse: true },
          },
          length_recovery: { enabled: false },
        },
      },
    });
    const before = runtimeFeatures(app);
    expect(before).toMatchObject({
      health_followons: true,
      health_followon_activation_sse: false,
      length_recovery: false,
      // issue 15: on by default (mode auto) wherever bubblewrap can run.
      sandbox_bwrap: probeBwrap(undefined, app.env, 'none').usable,
      sandbox_status_tool: true,
      runtime_health_tools: true,
    });
    createHttpApp(app, { allowNoAuth: true });
    expect(runtimeFeatures(app).health_followon_activation_sse).toBe(true);
    await invokeTool(
      app,
      'config',
      { action: 'set', key: 'options.health_followons.enabled', value: false },
      { surface: 'cli' },
    );
    expect(runtimeFeatures(app)).toMatchObject({
      health_followons: false,
      health_followon_activation_sse: false,
    });
    await invokeTool(
      app,
      'config',
      { action: 'set', key: 'options.sandbox.mode', value: 'bwrap' },
      { surface: 'cli' },
    );
    expect(runtimeFeatures(app).sandbox_bwrap).toBe(probeBwrap(undefined, app.env, 'none').usable);
    await invokeTool(
      app,
      'config',
      { action: 'set', key: 'options.sandbox.bwrap_path', value: '/nonexistent/bwrap' },
      { surface: 'cli' },
    );
    expect(runtimeFeatures(app).sandbox_bwrap).toBe(false);
  });
});
