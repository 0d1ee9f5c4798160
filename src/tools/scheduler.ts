/**
 * Scheduler tools (native-tools.tsv, planning family): `schedule` (create, list, inspect, run,
 * pause, unpause, update, delete; TOOLS-44) and `get_scheduler_status`. Jobs run a prompt or a
 * recipe in a session, on a cron expression or once; `svc service start autopilot` fires them.
 * Thin: the work is in `app.scheduler` (src/scheduler/).
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import type { Schedule } from '../scheduler/schedule-store';
import { recipeToolAvailable } from '../scheduler/scheduler';
import { sessionIdInput } from '../sessions/session-input';
import { printable } from '../util/terminal-text';
import { agentKindWithin, agentScope, byAgent } from './agent-caller';
import { defineTool } from './core/define-tool';
import type { ToolContext, ToolHost } from './core/types';

const scheduleActions = ['create', 'list', 'inspect', 'run', 'pause', 'unpause', 'update', 'delete'] as const;
const MUTATING = new Set(['create', 'run', 'pause', 'unpause', 'update', 'delete']);

export const scheduleInput = () =>
  z.strictObject({
    action: z
      .enum(scheduleActions)
      .describe('create, list, inspect, run (fire now), pause, unpause, update or delete.'),
    schedule_id: z
      .string()
      .min(1)
      .optional()
      .describe('The job, by id or name (inspect, run, pause, unpause, update, delete).'),
    name: z.string().min(1).max(100).optional().describe('create/update: a unique name for the job.'),
    prompt: z
      .string()
      .min(1)
      .optional()
      .describe('create/update: the prompt the job sends (or give recipe).'),
    recipe: z
      .string()
      .min(1)
      .optional()
      .describe('create/update: a recipe name to run (needs run_recipe), instead of a prompt.'),
    recipe_params: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('create/update: parameter values of the recipe.'),
    cron: z
      .string()
      .min(1)
      .optional()
      .describe('create/update: a cron expression for a recurring job, e.g. "0 9 * * 1-5" (or give at).'),
    at: z
      .string()
      .min(1)
      .optional()
      .describe(
        'create/update: a one-shot time, ISO 8601 (e.g. 2026-12-01T09:00:00Z), or "+<n>s|m|h|d" from now.',
      ),
    timezone: z
      .string()
      .min(1)
      .optional()
      .describe('create/update: IANA time zone of the cron expression (default: the system zone).'),
    session: z
      .enum(['new', 'reuse'])
      .optional()
      .describe('create/update: new (default) runs each firing in a fresh session; reuse keeps one session.'),
    session_id: sessionIdInput('none', 'create/update: the session to run in (implies reuse).'),
    agent: z.string().min(1).optional().describe('create/update: agent kind of the runs.'),
    model: z
      .string()
      .min(1)
      .optional()
      .describe('create/update: model selector <provider>/<model> of the runs.'),
    paused: z.boolean().optional().describe('create: start paused.'),
    wait: z
      .boolean()
      .default(false)
      .describe('run: wait for the run to finish and return its outcome (always on from the CLI).'),
  });

export const schedule = defineTool({
  name: 'schedule',
  family: 'planning',
  tag: 'primitive',
  description:
    'Scheduled jobs: a prompt or a recipe that runs in a session on a cron expression or once at a time, unattended (svc service start autopilot fires them; permissions follow the config, never approved silently). Actions: create, list, inspect, run (fire now), pause, unpause, update, delete.',
  input: scheduleInput,
  mutates: true,
  asksPermission: true,
  parity: false,
  surfaces: {
    mcp: 'svc_schedule',
    http: [
      { method: 'GET', path: '/v1/schedules', fixed: { action: 'list' } },
      { method: 'POST', path: '/v1/schedules', fixed: { action: 'create' }, status: 201 },
      {
        method: 'GET',
        path: '/v1/schedules/:id',
        params: { id: 'schedule_id' },
        fixed: { action: 'inspect' },
      },
      {
        method: 'PATCH',
        path: '/v1/schedules/:id',
        params: { id: 'schedule_id' },
        fixed: { action: 'update' },
      },
      {
        method: 'DELETE',
        path: '/v1/schedules/:id',
        params: { id: 'schedule_id' },
        fixed: { action: 'delete' },
      },
      {
        method: 'POST',
        path: '/v1/schedules/:id/run',
        params: { id: 'schedule_id' },
        fixed: { action: 'run' },
      },
      {
        method: 'POST',
        path: '/v1/schedules/:id/pause',
        params: { id: 'schedule_id' },
        fixed: { action: 'pause' },
      },
      {
        method: 'POST',
        path: '/v1/schedules/:id/unpause',
        params: { id: 'schedule_id' },
        fixed: { action: 'unpause' },
      },
    ],
    cli: [
      {
        command: 'schedule list',
        description: 'List scheduled jobs with their next run time and status.',
        fixed: { action: 'list' },
        text: listText,
      },
      {
        command: 'schedule create',
        description: 'Create a job: --prompt or --recipe, and --cron <expr> or --at <time> (one-shot).',
        args: ['name'],
        fixed: { action: 'create' },
        prepare: jsonParams,
      },
      {
        command: 'schedule inspect',
        description: 'Show one job: its definition, next run times and recent firings.',
        args: ['schedule_id'],
        fixed: { action: 'inspect' },
      },
      {
        command: 'schedule update',
        description: "Change a job's prompt, recipe, cron, time, session or timezone.",
        args: ['schedule_id'],
        fixed: { action: 'update' },
        prepare: jsonParams,
      },
      {
        command: 'schedule run',
        description: 'Run a job now and wait for its run to finish (exit 1 failed, 3 a change was refused).',
        args: ['schedule_id'],
        fixed: { action: 'run' },
        exitCode: (result: { outcome?: string }) =>
          result.outcome === undefined || result.outcome === 'completed'
            ? 0
            : result.outcome === 'refused'
              ? 3
              : 1,
      },
      {
        command: 'schedule pause',
        description: 'Pause a job: it keeps its definition but does not fire.',
        args: ['schedule_id'],
        fixed: { action: 'pause' },
      },
      {
        command: 'schedule unpause',
        description: 'Resume a paused job.',
        args: ['schedule_id'],
        fixed: { action: 'unpause' },
      },
      {
        command: 'schedule delete',
        description: 'Delete a job.',
        args: ['schedule_id'],
        fixed: { action: 'delete' },
      },
    ],
  },
  run: async (ctx, input) => {
    const { app } = ctx;
    if (input.action === 'create' || input.action === 'update') await agentJobScope(ctx, input);
    if (MUTATING.has(input.action)) {
      await ctx.ask({
        tool: 'schedule',
        title: `schedule ${input.action}${input.schedule_id ? ` ${input.schedule_id}` : input.name ? ` ${input.name}` : ''}`,
        scope: `schedule:${input.action}`,
        details: {
          action: input.action,
          ...(input.prompt ? { prompt: input.prompt } : {}),
          ...(input.cron ? { cron: input.cron } : {}),
        },
      });
    }
    const need = (what: string) => {
      if (!input.schedule_id) throw new SvcError('invalid_input', `schedule_id: required for action ${what}`);
      return input.schedule_id;
    };
    switch (input.action) {
      case 'create': {
        if (!input.name) throw new SvcError('invalid_input', 'name: required for action create');
        const created = await app.scheduler.create({
          name: input.name,
          prompt: input.prompt,
          recipe: input.recipe,
          recipe_params: input.recipe_params,
          cron: input.cron,
          at: input.at === undefined ? undefined : parseAt(input.at, app.clock.now()),
          timezone: input.timezone,
          session: input.session,
          session_id: input.session_id,
          agent: input.agent,
          model: input.model,
          paused: input.paused,
          created_by: ctx.surface,
        });
        return { action: 'create', schedule: view(created.schedule), warnings: created.warnings };
      }
      case 'list': {
        const schedules = await app.scheduler.store.list();
        return { action: 'list', schedules: schedules.map(view), count: schedules.length };
      }
      case 'inspect':
        return { action: 'inspect', ...(await inspectSchedule(app, need('inspect'))) };
      case 'run': {
        const fired = await app.scheduler.run(need('run'));
        const wait = input.wait || ctx.surface === 'cli';
        if (!wait || !fired.run_id) return { action: 'run', ...fired };
        const result = await app.agent.wait(fired.run_id, { signal: ctx.signal });
        // The firing's outcome as the schedule records it: `refused` when a change was refused.
        const outcome = result.refused ? 'refused' : result.status;
        return { action: 'run', ...fired, outcome, result };
      }
      case 'pause':
        return { action: 'pause', schedule: view(await app.scheduler.pause(need('pause'))) };
      case 'unpause':
        return { action: 'unpause', schedule: view(await app.scheduler.unpause(need('unpause'))) };
      case 'update': {
        const id = need('update');
        const { action: _a, schedule_id: _s, wait: _w, paused: _p, at, ...patch } = input;
        if (Object.keys(patch).length === 0 && at === undefined) {
          throw new SvcError(
            'invalid_input',
            'nothing to update: pass name, prompt, recipe, cron, at, timezone, session, agent or model',
          );
        }
        const updated = await app.scheduler.update(id, {
          ...patch,
          ...(at !== undefined ? { at: parseAt(at, app.clock.now()) } : {}),
        });
        return { action: 'update', schedule: view(updated.schedule), warnings: updated.warnings };
      }
      case 'delete':
        return { action: 'delete', deleted: view(await app.scheduler.delete(need('delete'))) };
      default: {
        const exhaustive: never = input.action;
        throw new SvcError('invalid_input', `action: unknown ${String(exhaustive)}`);
      }
    }
  },
});

export const getSchedulerStatus = defineTool({
  name: 'get_scheduler_status',
  family: 'planning',
  tag: 'primitive',
  description:
    'The scheduler: job counts, what is due next, recent firings, and whether an autopilot worker (this process or a live daemon) is there to fire them.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: {
    mcp: 'svc_get_scheduler_status',
    http: { method: 'GET', path: '/v1/scheduler/status' },
    cli: { command: 'schedule status' },
  },
  run: async (ctx) => schedulerStatus(ctx.app),
});

export async function schedulerStatus(app: ToolHost) {
  const now = app.clock.now();
  const schedules = await app.scheduler.store.list({ status: 'active' });
  const upcoming = schedules
    .filter((s) => s.next_run_at !== null)
    .sort((a, b) => (a.next_run_at as number) - (b.next_run_at as number));
  const runner = await autopilotRunner(app);
  const warnings: string[] = [];
  if (schedules.length && !runner.available) {
    warnings.push('no autopilot worker is running: due jobs wait until svc service start autopilot runs');
  }
  if ((await app.scheduler.store.list()).some((s) => s.recipe) && !recipeToolAvailable(app)) {
    warnings.push('recipe jobs are scheduled but run_recipe is not available in this build');
  }
  return {
    enabled: true,
    counts: await app.scheduler.store.counts(),
    due_now: upcoming.filter((s) => (s.next_run_at as number) <= now).length,
    next: upcoming.slice(0, 5).map((s) => ({ id: s.id, name: s.name, next_run_at: s.next_run_at })),
    recent_runs: await app.scheduler.store.runs({ limit: 10 }),
    in_flight_here: app.scheduler.inFlight(),
    runner,
    recipes_available: recipeToolAvailable(app),
    warnings,
  };
}

/** Who fires due jobs: this process's worker, or a live autopilot daemon of the data dir. */
export async function autopilotRunner(app: ToolHost) {
  const daemons = (await app.daemons.live('autopilot')).map((d) => ({
    id: d.id,
    pid: d.pid,
    url: d.url,
    self: d.self,
  }));
  const here = app.autopilot.state.running;
  return { available: here || daemons.length > 0, worker_here: here, daemons };
}

/**
 * A model's call (./agent-caller.ts) schedules runs only in its own session family and of an agent
 * kind within its own tools: a job fires later, unattended, with the tools of its kind, so a
 * restricted run could otherwise prepare a run with more than it has. A recipe's steps may be of
 * any kind, so a recipe job is held to `build`'s tools.
 */
async function agentJobScope(
  ctx: ToolContext,
  input: { schedule_id?: string; session_id?: string; agent?: string; recipe?: string },
): Promise<void> {
  if (!byAgent(ctx)) return;
  const existing = input.schedule_id ? await ctx.app.scheduler.store.require(input.schedule_id) : undefined;
  const sessionId = input.session_id ?? existing?.session_id ?? undefined;
  if (sessionId) await agentScope(ctx, sessionId, 'schedule runs in');
  const session = sessionId ? await ctx.app.sessions.get(sessionId) : undefined;
  const recipe = input.recipe ?? existing?.recipe ?? undefined;
  await agentKindWithin(
    ctx,
    recipe ? 'build' : (input.agent ?? existing?.agent ?? session?.agent ?? 'build'),
  );
}

export async function inspectSchedule(app: ToolHost, idOrName: string) {
  const found = await app.scheduler.store.require(idOrName);
  const warnings: string[] = [];
  if (found.recipe && !recipeToolAvailable(app))
    warnings.push('run_recipe is not available: this job fails when it fires');
  const runner = await autopilotRunner(app);
  if (found.status === 'active' && !runner.available)
    warnings.push('no autopilot worker is running to fire this job');
  return {
    schedule: view(found),
    next_runs: await app.scheduler.preview(found, 5),
    runs: await app.scheduler.store.runs({ schedule_id: found.id, limit: 20 }),
    runner,
    warnings,
  };
}

function view(s: Schedule) {
  return {
    ...s,
    kind: s.cron ? 'cron' : 'once',
    job: s.recipe ? 'recipe' : 'prompt',
    next_run_at_iso: s.next_run_at === null ? null : new Date(s.next_run_at).toISOString(),
  };
}

/** ISO 8601, or `+<n><s|m|h|d>` from now → ms. */
export function parseAt(value: string, now: number): number {
  const relative = /^\+(\d+)\s*([smhd])$/.exec(value.trim());
  if (relative) {
    const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[relative[2] as 's' | 'm' | 'h' | 'd'];
    return now + Number(relative[1]) * unit;
  }
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) {
    throw new SvcError(
      'invalid_input',
      `at: "${value}" is not a time; use ISO 8601 (2026-12-01T09:00:00Z) or +30m`,
    );
  }
  return ms;
}

/** `--recipe-params '{"k":"v"}'` on the command line. */
function jsonParams(input: Record<string, unknown>): Record<string, unknown> {
  if (typeof input.recipe_params !== 'string') return input;
  try {
    return { ...input, recipe_params: JSON.parse(input.recipe_params) };
  } catch {
    throw new SvcError(
      'invalid_input',
      '--recipe-params: expected a JSON object, e.g. \'{"version":"1.2"}\'',
    );
  }
}

function listText(r: { schedules: ReturnType<typeof view>[] }): string {
  if (r.schedules.length === 0)
    return 'no scheduled jobs; create one with svc schedule create <name> --prompt … --cron …';
  return r.schedules
    .map(
      (s) =>
        `${s.id}  ${s.status.padEnd(9)} ${printable(s.cron ?? `once ${s.next_run_at_iso ?? ''}`).padEnd(20)} next ${s.next_run_at_iso ?? '-'}  ${printable(s.name)}`,
    )
    .join('\n');
}

export const schedulerTools = [schedule, getSchedulerStatus];
