/**
 * The scheduler and the autopilot worker, with a fixed clock and the fake provider. Pins:
 * - `schedule` accepts every action (TOOLS-44); bad input names the field;
 * - a cron job fires when its time comes (not before), in a fresh session, and moves to its next
 *   time; a one-shot job fires once and completes; a paused job does not fire;
 * - a firing is claimed once even when two ticks race;
 * - a recipe job without run_recipe warns at create and fails clearly when it fires;
 * - the autopilot worker fires due jobs and drains queued prompts, and a run that needs an
 *   approval with nobody attached fails (never approved silently);
 * - get_scheduler_status and schedule_inspect report what is due and who fires it.
 */
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { invokeTool } from '../../src/tools/core/call-tool';
import { allTools } from '../../src/tools/index';
import { touchTool } from '../helpers/agent-harness';
import { fakeProvider, reply, type ScriptEntry } from '../helpers/fake-provider';
import { makeTestApp, testClock } from '../helpers/make-test-app';

const NOON = Date.UTC(2026, 10, 22, 12, 0, 0);

async function schedulerApp(
  script: ScriptEntry[],
  options: {
    extraTools?: any[];
    config?: Record<string, unknown>;
    files?: Record<string, string>;
    withoutRecipes?: boolean;
  } = {},
) {
  const provider = await fakeProvider(script);
  const clock = testClock(NOON);
  const app = await makeTestApp({
    clock,
    files: options.files,
    tools: [
      ...allTools.filter((t) => !options.withoutRecipes || t.name !== 'run_recipe'),
      ...(options.extraTools ?? []),
    ],
    config: {
      providers: { fake: { type: 'openai-compat', base_url: provider.url } },
      models: { large: 'fake/m1' },
      ...options.config,
    },
  });
  const call = (input: Record<string, unknown>) =>
    invokeTool(app, 'schedule', input, { surface: 'agent' }) as Promise<any>;
  return { app, clock, provider, call };
}

async function settle(app: App) {
  await app.scheduler.settled();
}

describe('schedule tool', () => {
  it('TOOLS-44: supports create, list, inspect, run, pause, unpause, update and delete', async () => {
    const { app, call } = await schedulerApp([reply().text('ran by hand')]);
    const created = await call({
      action: 'create',
      name: 'nightly',
      prompt: 'check the build',
      cron: '0 2 * * *',
      timezone: 'UTC',
    });
    expect(created.schedule).toMatchObject({
      name: 'nightly',
      kind: 'cron',
      job: 'prompt',
      status: 'active',
      next_run_at: Date.UTC(2026, 10, 23, 2, 0, 0),
      next_run_at_iso: '2026-11-23T02:00:00.000Z',
    });
    const id = created.schedule.id;
    expect((await call({ action: 'list' })).schedules.map((s: { id: string }) => s.id)).toEqual([id]);
    const inspected = await call({ action: 'inspect', schedule_id: 'nightly' });
    expect(inspected.next_runs).toEqual([23, 24, 25, 26, 27].map((d) => Date.UTC(2026, 10, d, 2, 0, 0)));
    const fired = await call({ action: 'run', schedule_id: id, wait: true });
    expect(fired).toMatchObject({
      action: 'run',
      trigger: 'manual',
      status: 'started',
      result: { status: 'completed', text: 'ran by hand' },
    });
    expect((await call({ action: 'pause', schedule_id: id })).schedule.status).toBe('paused');
    expect((await call({ action: 'unpause', schedule_id: id })).schedule.status).toBe('active');
    const updated = await call({ action: 'update', schedule_id: id, cron: '30 9 * * 1-5' });
    expect(updated.schedule).toMatchObject({
      cron: '30 9 * * 1-5',
      next_run_at: Date.UTC(2026, 10, 23, 9, 30, 0),
    });
    expect((await call({ action: 'delete', schedule_id: id })).deleted.id).toBe(id);
    expect((await call({ action: 'list' })).count).toBe(0);
    await settle(app);
  });

  it('names the field for bad input', async () => {
    const { call } = await schedulerApp([]);
    await expect(call({ action: 'create', name: 'x', prompt: 'p', cron: 'every day' })).rejects.toThrow(
      /^cron: invalid expression "every day"/,
    );
    await expect(call({ action: 'create', name: 'x', prompt: 'p' })).rejects.toThrow(
      /^cron or at: give exactly one/,
    );
    await expect(call({ action: 'create', name: 'x', cron: '* * * * *' })).rejects.toThrow(
      /^prompt or recipe: give exactly one/,
    );
    await expect(
      call({ action: 'create', name: 'x', prompt: 'p', at: '2020-01-01T00:00:00Z' }),
    ).rejects.toThrow(/^at: .* is not in the future/);
    await expect(
      call({ action: 'create', name: 'x', prompt: 'p', cron: '* * * * *', timezone: 'Mars/Olympus' }),
    ).rejects.toThrow(/^timezone: unknown time zone/);
    await expect(call({ action: 'pause' })).rejects.toThrow('schedule_id: required for action pause');
    await expect(call({ action: 'inspect', schedule_id: 'nope' })).rejects.toThrow(
      /^schedule_id: no schedule "nope"/,
    );
    await call({ action: 'create', name: 'dup', prompt: 'p', cron: '* * * * *' });
    await expect(call({ action: 'create', name: 'dup', prompt: 'p', cron: '* * * * *' })).rejects.toThrow(
      /^name: a schedule named "dup" exists/,
    );
  });
});

describe('firing with a fixed clock', () => {
  it('fires a cron job when due, in a fresh session, and moves to the next time', async () => {
    const { app, clock, call, provider } = await schedulerApp([reply().text('report ready')]);
    const { schedule } = await call({
      action: 'create',
      name: 'five',
      prompt: 'write the report',
      cron: '*/5 * * * *',
      timezone: 'UTC',
    });
    expect(schedule.next_run_at).toBe(NOON + 5 * 60_000);
    clock.set(NOON + 4 * 60_000);
    expect(await app.scheduler.tick()).toEqual([]);
    clock.set(NOON + 5 * 60_000);
    const fired = await app.scheduler.tick();
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({ schedule_id: schedule.id, trigger: 'cron', status: 'started' });
    await settle(app);
    const run = await app.runs.require(fired[0].run_id!);
    expect(run).toMatchObject({ status: 'completed', origin: 'scheduler', session_id: fired[0].session_id });
    expect(await app.sessions.require(fired[0].session_id!)).toMatchObject({
      title: 'schedule: five',
      metadata: { schedule_id: schedule.id },
    });
    expect(JSON.stringify(provider.requests[0].body.messages.at(-1))).toContain('write the report');
    const after = await app.scheduler.store.require(schedule.id);
    expect(after).toMatchObject({
      next_run_at: NOON + 10 * 60_000,
      run_count: 1,
      last_status: 'completed',
      status: 'active',
    });
    expect((await app.scheduler.store.runs({ schedule_id: schedule.id }))[0]).toMatchObject({
      status: 'completed',
      trigger: 'cron',
      due_at: NOON + 5 * 60_000,
    });
  });

  it('fires a one-shot job once and completes it; a paused job does not fire', async () => {
    const { app, clock, call } = await schedulerApp([reply().text('once')]);
    const once = (await call({ action: 'create', name: 'once', prompt: 'do it once', at: '+10m' })).schedule;
    const paused = (
      await call({ action: 'create', name: 'paused', prompt: 'never', at: '+10m', paused: true })
    ).schedule;
    expect(once).toMatchObject({ kind: 'once', next_run_at: NOON + 600_000 });
    clock.set(NOON + 600_000);
    const fired = await app.scheduler.tick();
    expect(fired.map((f) => f.schedule_id)).toEqual([once.id]);
    await settle(app);
    clock.set(NOON + 3_600_000);
    expect(await app.scheduler.tick()).toEqual([]);
    expect(await app.scheduler.store.require(once.id)).toMatchObject({
      status: 'completed',
      next_run_at: null,
      run_count: 1,
    });
    expect(await app.scheduler.store.require(paused.id)).toMatchObject({ status: 'paused', run_count: 0 });
  });

  it('claims a firing once when two ticks race', async () => {
    const { app, clock, call } = await schedulerApp([reply().text('only once')]);
    await call({ action: 'create', name: 'race', prompt: 'p', cron: '* * * * *', timezone: 'UTC' });
    clock.set(NOON + 60_000);
    const [a, b] = await Promise.all([app.scheduler.tick(), app.scheduler.tick()]);
    expect(a.length + b.length).toBe(1);
    await settle(app);
  });

  it('warns about a recipe job without run_recipe and fails it clearly when it fires', async () => {
    const { app, clock, call } = await schedulerApp([], { withoutRecipes: true });
    const created = await call({
      action: 'create',
      name: 'recipe-job',
      recipe: 'release-notes',
      cron: '0 * * * *',
      timezone: 'UTC',
    });
    expect(created.warnings).toEqual([
      'run_recipe is not available in this build: the job fails when it fires until recipes are installed',
    ]);
    clock.set(NOON + 3_600_000);
    const [fired] = await app.scheduler.tick();
    expect(fired).toMatchObject({ status: 'failed' });
    expect(fired.error).toBe(
      'recipe release-notes: run_recipe is not available in this build; schedule a prompt instead',
    );
    expect(await app.scheduler.store.require(created.schedule.id)).toMatchObject({ last_status: 'failed' });
  });

  it('fires a recipe job through run_recipe', async () => {
    const { app, clock, call } = await schedulerApp([reply().text('Release notes drafted.')], {
      files: {
        '.svc/recipes/notes.toml': [
          'description = "Draft release notes"',
          '[[parameters]]',
          'name = "version"',
          'type = "string"',
          'required = true',
          '[[steps]]',
          'id = "draft"',
          'prompt = "Draft the notes for {{version}}"',
        ].join('\n'),
      },
    });
    const { schedule, warnings } = await call({
      action: 'create',
      name: 'notes',
      recipe: 'notes',
      recipe_params: { version: '1.2.0' },
      at: '+1m',
    });
    expect(warnings).toEqual([]);
    clock.set(NOON + 60_000);
    const [fired] = await app.scheduler.tick();
    expect(fired).toMatchObject({ schedule_id: schedule.id, status: 'started', trigger: 'once' });
    await settle(app);
    const [firing] = await app.scheduler.store.runs({ schedule_id: schedule.id });
    expect(firing).toMatchObject({ status: 'completed', error: null });
    expect(firing.run_id).toMatch(/^run_/);
  });
});

describe('autopilot worker', () => {
  it('fires due jobs and drains queued prompts with nobody attached', async () => {
    const answer = (request: { body: any }) =>
      reply().text(
        JSON.stringify(request.body.messages).includes('queued prompt')
          ? 'queued answer'
          : 'scheduled answer',
      );
    const { app, clock, call } = await schedulerApp([answer, answer]);
    await call({
      action: 'create',
      name: 'tick',
      prompt: 'scheduled prompt',
      cron: '*/5 * * * *',
      timezone: 'UTC',
    });
    const session = await app.sessions.create({ title: 'waiting' });
    const queued = await app.agent.enqueue({ sessionId: session.id, prompt: 'queued prompt', start: false });
    expect((await app.runs.require(queued.run_id)).status).toBe('queued');
    clock.set(NOON + 5 * 60_000);
    expect(await app.autopilot.tick()).toEqual({ fired: 1, drained: 1 });
    await settle(app);
    expect((await app.agent.wait(queued.run_id)).text).toBe('queued answer');
    expect(app.autopilot.state).toMatchObject({
      ticks: 1,
      schedules_fired: 1,
      prompts_drained: 1,
      errors: 0,
    });
  });

  it('never approves silently: a scheduled run that needs permission fails unattended', async () => {
    const log: string[] = [];
    const { app, clock, call, provider } = await schedulerApp(
      [reply().toolCall('touch', { name: 'prod' }), reply().text('could not touch')],
      { extraTools: [touchTool(log)] },
    );
    await call({
      action: 'create',
      name: 'risky',
      prompt: 'touch prod',
      cron: '*/5 * * * *',
      timezone: 'UTC',
    });
    clock.set(NOON + 5 * 60_000);
    const { fired } = await app.autopilot.tick();
    expect(fired).toBe(1);
    await settle(app);
    expect(log).toEqual([]);
    const tool = provider.requests[1].body.messages.find((m: { role: string }) => m.role === 'tool');
    expect(tool.content).toMatch(/forbidden/);
  });

  it('leaves the queue of a session whose last run failed for an operator', async () => {
    const { app } = await schedulerApp([reply().httpError(400, { error: { message: 'nope' } })]);
    const session = await app.sessions.create();
    const failed = await app.agent.run({ sessionId: session.id, prompt: 'fails' });
    expect(failed.status).toBe('failed');
    await app.agent.enqueue({ sessionId: session.id, prompt: 'later', start: false });
    expect(await app.autopilot.tick()).toEqual({ fired: 0, drained: 0 });
  });

  it('get_scheduler_status and schedule_inspect report the due jobs and the runner', async () => {
    const { app, clock, call } = await schedulerApp([]);
    await call({ action: 'create', name: 'a', prompt: 'p', cron: '*/5 * * * *', timezone: 'UTC' });
    clock.set(NOON + 6 * 60_000);
    const status = (await invokeTool(app, 'get_scheduler_status', {}, { surface: 'agent' })) as any;
    expect(status).toMatchObject({
      enabled: true,
      counts: { active: 1, paused: 0, completed: 0 },
      due_now: 1,
      runner: { available: false, worker_here: false, daemons: [] },
      warnings: ['no autopilot worker is running: due jobs wait until svc service start autopilot runs'],
    });
    const inspect = (await invokeTool(app, 'schedule_inspect', {}, { surface: 'agent' })) as any;
    expect(inspect.schedules).toEqual([
      expect.objectContaining({ name: 'a', kind: 'cron', job: 'prompt', next_run_at: NOON + 5 * 60_000 }),
    ]);
  });
});
