/**
 * Operator cognition: the recommendation outcome ledger, the recorder that fills it from runtime
 * signals, and the readout (spec, Operator cognition readout / surfaces / route). Pins:
 * - values trace to ledger rows; zone filter is exact; empty zone is global;
 * - reading changes nothing and emits no events;
 * - 503 without a ledger; not gated on options.workspace_observer.enabled;
 * - HTTP, CLI --json and the tool return the same payload.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { createHttpApp } from '../../src/surfaces/http/index';
import { invokeTool } from '../../src/tools/core/call-tool';
import { operatorCognitionReadout } from '../../src/tools/readouts';
import { makeTestApp, type TestClock } from '../helpers/make-test-app';
import { maskVolatile, viaCli, viaHttp } from '../helpers/surfaces';
import { tmpWorkspace } from '../helpers/tmp-workspace';

async function seed(app: App) {
  const clock = app.clock as TestClock;
  const s = (await app.sessions.create()).id;
  const r = (zone: 'token_pressure' | 'loop_detection', kind: string) =>
    app.recommendations.record({ zone, kind, session_id: s, payload: { zone }, window_seconds: 3600 });
  const a = await r('token_pressure', 'compact_session');
  clock.advance(30_000);
  await app.recommendations.close(a.id, 'followed');
  const b = await r('token_pressure', 'compact_session');
  clock.advance(90_000);
  await app.recommendations.close(b.id, 'followed');
  const c = await r('token_pressure', 'compact_session');
  await app.recommendations.close(c.id, 'dismissed');
  await r('loop_detection', 'revise_instructions');
  return s;
}

describe('operator cognition readout', () => {
  it('COG-02/COG-05/COG-08/COG-09: summarizes follow-through per zone from the ledger', async () => {
    const app = await makeTestApp();
    await seed(app);
    const global = (await invokeTool(app, 'operator_cognition_readout', {}, { surface: 'agent' })) as any;
    expect(global.schema_version).toBe('svc.operator_cognition.v1');
    expect(global.scope).toBe('global');
    expect(global.patterns).toEqual([
      expect.objectContaining({
        zone: 'token_pressure',
        recommendations: 3,
        followed: 2,
        dismissed: 1,
        expired: 0,
        pending: 0,
        follow_through_rate: 0.667,
        median_seconds_to_follow: 30,
      }),
      expect.objectContaining({
        zone: 'loop_detection',
        recommendations: 1,
        followed: 0,
        pending: 1,
        follow_through_rate: null,
      }),
    ]);
    expect(global.warnings).toContain(
      'insufficient_evidence: zone token_pressure has 3 closed recommendation(s); at least 5 are needed for a rate to mean much',
    );
    const zone = (await invokeTool(
      app,
      'operator_cognition_readout',
      { zone: 'loop_detection' },
      { surface: 'agent' },
    )) as any;
    expect(zone.patterns.map((p: { zone: string }) => p.zone)).toEqual(['loop_detection']);
    const empty = (await invokeTool(
      app,
      'operator_cognition_readout',
      { zone: '' },
      { surface: 'agent' },
    )) as any;
    expect(empty.scope).toBe('global');
  });

  it('COG-06: the complete field list is the one docs/readouts.md documents', async () => {
    const app = await makeTestApp();
    await seed(app);
    const out = (await invokeTool(app, 'operator_cognition_readout', {}, { surface: 'agent' })) as any;
    expect(Object.keys(out).sort()).toEqual(
      [
        'calibration_window',
        'evidence_boundary',
        'generated_at_unix',
        'patterns',
        'schema_version',
        'scope',
        'warnings',
        'zone',
      ].sort(),
    );
    expect(Object.keys(out.calibration_window).sort()).toEqual(
      ['days', 'max_recommendations', 'recommendations_in_window', 'since_unix'].sort(),
    );
    for (const pattern of out.patterns)
      expect(Object.keys(pattern).sort()).toEqual(
        [
          'dismissed',
          'expired',
          'follow_through_rate',
          'followed',
          'kinds',
          'median_seconds_to_follow',
          'pending',
          'recommendations',
          'zone',
        ].sort(),
      );
    expect(out.patterns[0].kinds).toEqual({ compact_session: 3 });
    expect(out.calibration_window).toMatchObject({
      days: 14,
      max_recommendations: 200,
      recommendations_in_window: 4,
    });
  });

  it('counts a pending recommendation past its window as expired without writing', async () => {
    const app = await makeTestApp();
    const rec = await app.recommendations.record({
      zone: 'loop_detection',
      kind: 'revise_instructions',
      payload: {},
      window_seconds: 60,
    });
    (app.clock as TestClock).advance(61_000);
    const out = (await invokeTool(app, 'operator_cognition_readout', {}, { surface: 'agent' })) as any;
    expect(out.patterns[0]).toMatchObject({ expired: 1, pending: 0 });
    expect((await app.recommendations.get(rec.id))?.outcome).toBe('pending');
  });

  it('COG-01/COG-03/COG-04/EVT-33: read-only, no grades or traits, no events', async () => {
    const app = await makeTestApp();
    const s = await seed(app);
    const before = await app.bus.lastId(s);
    const rows = JSON.stringify(app.db.prepare('SELECT * FROM recommendations ORDER BY id').all());
    const out = await invokeTool(app, 'operator_cognition_readout', {}, { surface: 'agent' });
    expect(JSON.stringify(app.db.prepare('SELECT * FROM recommendations ORDER BY id').all())).toBe(rows);
    expect(await app.bus.lastId(s)).toBe(before);
    expect(JSON.stringify(out)).not.toMatch(/"(grade|score|operator_score|personality|trait|skill_level)"/);
  });

  it('COG-16: 503 when the ledger is unavailable', async () => {
    const ws = tmpWorkspace({ files: { blocker: 'x' } });
    const app = await makeTestApp({ workspace: ws, dataDir: join(ws, 'blocker') });
    const res = await createHttpApp(app, { allowNoAuth: true }).request('/v1/operator-cognition');
    expect(res.status).toBe(503);
  });

  it('COG-07/COG-17: the route answers with options.workspace_observer.enabled false', async () => {
    const app = await makeTestApp({ config: { options: { workspace_observer: { enabled: false } } } });
    const res = await createHttpApp(app, { allowNoAuth: true }).request('/v1/operator-cognition');
    expect(res.status).toBe(200);
  });

  it('AUTH-49: the route uses the same bearer style', async () => {
    const app = await makeTestApp();
    const hono = createHttpApp(app, { token: 'tok-abcdefgh1234' });
    expect((await hono.request('/v1/operator-cognition')).status).toBe(401);
    expect(
      (
        await hono.request('/v1/operator-cognition', {
          headers: { authorization: 'Bearer tok-abcdefgh1234' },
        })
      ).status,
    ).toBe(200);
  });

  it('COG-10/COG-11/COG-12: HTTP, CLI --json and the tool give the same payload, per zone too', async () => {
    const app = await makeTestApp();
    await seed(app);
    for (const input of [{}, { zone: 'token_pressure' }]) {
      const tool = await invokeTool(app, 'operator_cognition_readout', input, { surface: 'agent' });
      const http = await viaHttp(app, operatorCognitionReadout.surfaces!.http as never, input);
      const cli = await viaCli(app, operatorCognitionReadout.surfaces!.cli as never, input);
      expect(maskVolatile(http.body)).toEqual(maskVolatile(tool));
      expect(maskVolatile(cli.json)).toEqual(maskVolatile(tool));
    }
  });
});

describe('recommendation recorder', () => {
  it('records from runtime signals and closes from later evidence', async () => {
    // The recorder alone: the health follow-on would add its own token_pressure recommendation once
    // the recorder's is closed (test/health/followons.test.ts covers that).
    const app = await makeTestApp({ config: { options: { health_followons: { enabled: false } } } });
    const s = (await app.sessions.create()).id;
    app.bus.publish(s, 'context.usage', {
      session_id: s,
      run_id: 'run_1',
      input_tokens: 900,
      context_window: 1000,
      ratio: 0.9,
    });
    app.bus.publish(s, 'context.usage', {
      session_id: s,
      run_id: 'run_1',
      input_tokens: 950,
      context_window: 1000,
      ratio: 0.95,
    });
    expect(await app.recommendations.pending({ zone: 'token_pressure' })).toHaveLength(1);
    app.bus.publish(s, 'compaction.finished', {
      session_id: s,
      summary_message_id: 'msg_1',
      tokens_before: 950,
      tokens_after: 200,
    });
    expect(await app.recommendations.pending({ zone: 'token_pressure' })).toHaveLength(0);

    app.bus.publish(s, 'loop.detected', { session_id: s, run_id: 'run_2', tool: 'bash', repeats: 4 });
    app.bus.publish(s, 'run.started', { session_id: s, run_id: 'run_3' });
    for (let i = 0; i < 3; i++)
      app.bus.publish(s, 'permission.resolved', {
        session_id: s,
        request_id: `p${i}`,
        tool: 'bash',
        decision: 'allow_once',
        by: 'tui',
      });
    app.bus.publish(s, 'permission.resolved', {
      session_id: s,
      request_id: 'p9',
      tool: 'bash',
      decision: 'deny',
      by: 'tui',
    });

    const out = (await invokeTool(app, 'operator_cognition_readout', {}, { surface: 'agent' })) as any;
    const byZone = Object.fromEntries(out.patterns.map((p: { zone: string }) => [p.zone, p]));
    expect(byZone.token_pressure).toMatchObject({ recommendations: 1, followed: 1 });
    expect(byZone.loop_detection).toMatchObject({ recommendations: 1, followed: 1 });
    expect(byZone.permission_policy).toMatchObject({ recommendations: 1, dismissed: 1 });
  });

  it('expires what is pending once its window ends, at the next signal (the sweep runs only when one can have ended)', async () => {
    const app = await makeTestApp({ config: { options: { health_followons: { enabled: false } } } });
    const clock = app.clock as TestClock;
    const s = (await app.sessions.create()).id;
    // Recorded elsewhere (not by the recorder), with a window shorter than the recorder's own.
    const short = await app.recommendations.record({
      zone: 'compaction',
      kind: 'start_new_session',
      payload: {},
      window_seconds: 60,
    });
    // A signal the recorder handles that follows nothing here.
    const signal = () => app.bus.publish(s, 'session.updated', { session_id: s, changed: ['title'] });
    signal();
    expect((await app.recommendations.get(short.id))?.outcome).toBe('pending');
    app.bus.publish(s, 'loop.detected', { session_id: s, run_id: 'run_2', tool: 'bash', repeats: 4 });
    const [loop] = await app.recommendations.pending({ zone: 'loop_detection' });
    clock.advance(61_000);
    signal();
    expect((await app.recommendations.get(short.id))?.outcome).toBe('expired');
    expect((await app.recommendations.get(loop!.id))?.outcome).toBe('pending');
    clock.advance(3_600_000);
    signal();
    expect((await app.recommendations.get(loop!.id))?.outcome).toBe('expired');
  });

  it('dismisses through the recommendations tool', async () => {
    const app = await makeTestApp();
    const rec = await app.recommendations.record({
      zone: 'compaction',
      kind: 'start_new_session',
      payload: {},
      window_seconds: 60,
    });
    const out = (await invokeTool(
      app,
      'recommendations',
      { action: 'dismiss', recommendation_id: rec.id },
      { surface: 'cli' },
    )) as any;
    expect(out).toMatchObject({ dismissed: true, outcome: 'dismissed' });
  });
});
