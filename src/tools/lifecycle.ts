/**
 * Process lifecycle tools (native-tools.tsv, lifecycle family). Status tools are on by default
 * (TOOLS-26): `daemon_status` (with `spawn_isolation_audit`, TOOLS-30), `autopilot_status`,
 * `schedule_inspect`. `daemon_restart`, `autopilot_up` and `autopilot_down` are registered only
 * when `SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS` is set in the process (TOOLS-27/28); with a `target`
 * they run on a remote deploy target, which needs `[deploy] enabled = true` and the target in
 * `[deploy.targets]` (TOOLS-29, the same gate as deploy_agent).
 * @module
 */
import { z } from 'zod';
import type { DaemonView } from '../scheduler/daemons';
import { remoteLifecycle, restartDaemon, startAutopilot, stopDaemons } from '../scheduler/lifecycle';
import { defineTool, type GateEnv } from './core/define-tool';
import type { ToolHost } from './core/types';
import { autopilotRunner, inspectSchedule, schedulerStatus } from './scheduler';

export const LIFECYCLE_ENV = 'SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS';

/** Set = present and not empty. */
export function lifecycleGate(env: GateEnv): true | string {
  const value = env.app.env[LIFECYCLE_ENV];
  return value !== undefined && value !== '' ? true : `${LIFECYCLE_ENV} is not set in the process`;
}

const targetField = () =>
  z
    .string()
    .min(1)
    .optional()
    .describe(
      'A remote svc server from [deploy.targets] (needs [deploy] enabled = true). Omit for this machine.',
    );

export const scheduleInspect = defineTool({
  name: 'schedule_inspect',
  family: 'lifecycle',
  tag: 'primitive',
  description:
    'Which scheduled jobs will fire, when, and which process fires them: one job (its next times, firings and runner) or every job with its next time.',
  input: () =>
    z.strictObject({
      schedule_id: z.string().min(1).optional().describe('One job by id or name. Omit for every job.'),
    }),
  mutates: false,
  surfaces: {
    mcp: 'svc_schedule_inspect',
    http: { method: 'GET', path: '/v1/scheduler/inspect' },
    cli: { command: 'schedule inspect-all' },
  },
  run: async (ctx, input) => {
    const { app } = ctx;
    if (input.schedule_id) return inspectSchedule(app, input.schedule_id);
    const status = await schedulerStatus(app);
    return {
      schedules: (await app.scheduler.store.list()).map((s) => ({
        id: s.id,
        name: s.name,
        status: s.status,
        kind: s.cron ? 'cron' : 'once',
        job: s.recipe ? 'recipe' : 'prompt',
        next_run_at: s.next_run_at,
        last_run_at: s.last_run_at,
        last_status: s.last_status,
      })),
      runner: status.runner,
      warnings: status.warnings,
    };
  },
});

export const daemonStatus = defineTool({
  name: 'daemon_status',
  family: 'lifecycle',
  tag: 'primitive',
  description:
    'This svc process and the service daemons of the data dir (pid, URL, liveness, heartbeat), with spawn_isolation_audit: the tracked child processes classified session_only, runtime_backed or mixed, with PIDs and cleanup counters.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: {
    mcp: 'svc_daemon_status',
    http: { method: 'GET', path: '/v1/daemon/status' },
    cli: { command: 'daemon status' },
  },
  run: async (ctx) => await daemonReport(ctx.app),
});

export const autopilotStatus = defineTool({
  name: 'autopilot_status',
  family: 'lifecycle',
  tag: 'primitive',
  description:
    'The autopilot: whether a worker runs here or in a live daemon, its counters (ticks, schedules fired, prompts drained, errors), the unattended permission policy, and the next due jobs.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: {
    mcp: 'svc_autopilot_status',
    http: { method: 'GET', path: '/v1/autopilot/status' },
    cli: { command: 'autopilot status' },
  },
  run: async (ctx) => {
    const { app } = ctx;
    const status = await schedulerStatus(app);
    const settings = app.config.services.autopilot;
    return {
      this_process: {
        pid: process.pid,
        worker_running: app.autopilot.state.running,
        worker: app.autopilot.state,
      },
      daemons: (await app.daemons.live('autopilot')).map((d) => ({
        id: d.id,
        pid: d.pid,
        url: d.url,
        self: d.self,
        started_at: d.started_at,
        heartbeat_at: d.heartbeat_at,
        worker: (d.status.autopilot as Record<string, unknown> | undefined) ?? null,
      })),
      running: (await autopilotRunner(app)).available,
      settings: {
        tick_seconds: settings.tick_seconds,
        drain_queues: settings.drain_queues,
        max_concurrent_runs: settings.max_concurrent_runs,
        unattended: settings.unattended ?? app.config.permissions.unattended,
        unattended_source: settings.unattended ? 'services.autopilot.unattended' : 'permissions.unattended',
      },
      schedules: { counts: status.counts, due_now: status.due_now, next: status.next },
      queued_prompts: await app.runs.count({ status: ['queued'] }),
      warnings: status.warnings,
    };
  },
});

export const daemonRestart = defineTool({
  name: 'daemon_restart',
  family: 'lifecycle',
  tag: 'primitive',
  description:
    'Restart a service daemon of this data dir (stop it gracefully, start it again with its own arguments), or on a remote target.',
  input: () =>
    z.strictObject({
      daemon_id: z
        .string()
        .min(1)
        .optional()
        .describe('The daemon (see daemon_status). Omit when exactly one is live.'),
      target: targetField(),
    }),
  mutates: true,
  gate: lifecycleGate,
  parity: false,
  surfaces: {
    mcp: 'svc_daemon_restart',
    http: { method: 'POST', path: '/v1/daemon/restart' },
    cli: { command: 'daemon restart', args: ['daemon_id?'] },
  },
  run: async (ctx, input) => {
    if (input.target) {
      const args = ['daemon', 'restart', ...(input.daemon_id ? [input.daemon_id] : [])];
      return remoteLifecycle(ctx.app, input.target, args, ctx.signal);
    }
    return restartDaemon(ctx.app, input.daemon_id, ctx.signal);
  },
});

export const autopilotUp = defineTool({
  name: 'autopilot_up',
  family: 'lifecycle',
  tag: 'primitive',
  description:
    'Start an autopilot daemon (svc service start autopilot) for this workspace in the background, or on a remote target; refused when one is already live.',
  input: () =>
    z.strictObject({
      port: z.number().int().min(0).max(65535).default(0).describe('Port to listen on; 0 picks a free one.'),
      host: z
        .string()
        .min(1)
        .optional()
        .describe('Address to listen on (default 127.0.0.1; a non-loopback host needs a token).'),
      target: targetField(),
    }),
  mutates: true,
  gate: lifecycleGate,
  parity: false,
  surfaces: {
    mcp: 'svc_autopilot_up',
    http: { method: 'POST', path: '/v1/autopilot/up' },
    cli: { command: 'autopilot up' },
  },
  run: async (ctx, input) => {
    if (input.target) {
      const args = [
        'autopilot',
        'up',
        '--port',
        String(input.port),
        ...(input.host ? ['--host', input.host] : []),
      ];
      return remoteLifecycle(ctx.app, input.target, args, ctx.signal);
    }
    return startAutopilot(ctx.app, { port: input.port, host: input.host ?? '127.0.0.1', signal: ctx.signal });
  },
});

export const autopilotDown = defineTool({
  name: 'autopilot_down',
  family: 'lifecycle',
  tag: 'primitive',
  description:
    'Stop the autopilot daemons of this data dir gracefully (SIGTERM, then wait), or on a remote target.',
  input: () =>
    z.strictObject({
      daemon_id: z.string().min(1).optional().describe('One autopilot daemon. Omit for every live one.'),
      target: targetField(),
    }),
  mutates: true,
  gate: lifecycleGate,
  parity: false,
  surfaces: {
    mcp: 'svc_autopilot_down',
    http: { method: 'POST', path: '/v1/autopilot/down' },
    cli: { command: 'autopilot down', args: ['daemon_id?'] },
  },
  run: async (ctx, input) => {
    if (input.target) {
      const args = ['autopilot', 'down', ...(input.daemon_id ? [input.daemon_id] : [])];
      return remoteLifecycle(ctx.app, input.target, args, ctx.signal);
    }
    return stopDaemons(ctx.app, { kind: 'autopilot', daemonId: input.daemon_id, signal: ctx.signal });
  },
});

export async function daemonReport(app: ToolHost) {
  const started = Math.floor(process.uptime());
  const daemons = (await app.daemons.list({ includeStopped: false })).map((d: DaemonView) => ({
    id: d.id,
    kind: d.kind,
    pid: d.pid,
    host: d.host,
    url: d.url,
    alive: d.alive,
    self: d.self,
    /** match, mismatch (a stale row: the pid is another process now) or unverifiable (an older row). */
    identity: d.identity_check,
    worker: d.worker,
    started_at: d.started_at,
    heartbeat_at: d.heartbeat_at,
  }));
  const coordinator = !app.runtime.mcpOnly;
  return {
    this_process: {
      pid: process.pid,
      uptime_seconds: started,
      surfaces: [...app.runtime.surfaces].sort(),
      server: app.runtime.server,
      http_url: app.runtime.httpUrl ?? null,
      stopping: app.runtime.stopping,
      autopilot_worker: app.autopilot.state.running,
      active_runs: app.agent.active().length,
    },
    daemons,
    live_daemons: daemons.filter((d) => d.alive).length,
    lifecycle_tools: app.tools.get('daemon_restart') !== undefined,
    deploy_enabled: app.config.deploy.enabled,
    // spec: reported when a coordinator (the agent runtime) is present; a minimal MCP-only runtime has none.
    spawn_isolation_audit: coordinator
      ? app.processes.audit({
          config: app.config,
          jobs: app.ws.jobs.list(),
          activeSessions: new Set(app.agent.active().map((a) => a.session_id)),
        })
      : null,
    ...(coordinator ? {} : { spawn_isolation_audit_reason: 'no coordinator in this runtime (MCP-only)' }),
  };
}

export const lifecycleTools = [
  scheduleInspect,
  daemonStatus,
  autopilotStatus,
  daemonRestart,
  autopilotUp,
  autopilotDown,
];
