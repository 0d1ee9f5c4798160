/**
 * The bash tool's engine. Each command is analysed (shell/bash-analysis), blocked or put to the
 * operator, then started through the command spawner (src/sandbox/spawn.ts: the OS sandbox when
 * active, a scrubbed environment always, its own process group). The working directory persists
 * per session between calls (a `cd` sticks); variables and functions do not. Timeouts and
 * cancellation kill the whole group. Long output keeps its head and tail and spills in full to
 * `<dataDir>/tool-output/` (./shell-run.ts).
 *
 * Without the OS sandbox, a write whose target cannot be verified before it runs asks even under
 * an allow rule and is refused under --yolo (issue 15, item 3); a command the sandbox or the rules
 * stopped comes back saying what was blocked, why and how to allow it, and is a `sandbox_denied`
 * ledger event (item 4).
 * @module
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { SvcError } from '../errors';
import type { CommandSandboxPlan } from '../sandbox/sandbox';
import { analyzeBash, type BashAnalysis } from '../shell/bash-analysis';
import { approve, type OpContext } from './context';
import { clip, refusal, runForeground } from './shell-run';
import type { BackgroundStart, BashInput, Shell, ShellDeps } from './shell-types';

export type {
  BackgroundStart,
  BashInput,
  BashResult,
  SandboxDenial,
  Shell,
  ShellDeps,
  ShellSandbox,
  ShellSettings,
} from './shell-types';

export const MAX_TIMEOUT_SECONDS = 600;

export function createShell(deps: ShellDeps): Shell {
  const cwds = new Map<string, string>();
  const cwdOf = (sessionId?: string) => {
    const cwd = cwds.get(sessionId ?? '');
    // A directory removed since: fall back to the root rather than failing every command.
    return cwd && existsSync(cwd) ? cwd : deps.paths.realRoot;
  };

  const analyze = (command: string, sessionId?: string) => {
    const s = deps.settings();
    return analyzeBash(command, {
      workspace: deps.paths.realRoot,
      cwd: cwdOf(sessionId),
      home: deps.home,
      scratchDirs: [tmpdir(), '/tmp'],
      allowOutsideWorkspace: s.allowOutside,
      autoAllowReadOnly: s.autoAllowReadOnly,
      bashAllow: s.bashAllow,
      bashDeny: s.bashDeny,
      protectedPaths: deps.sandbox.protectedEntries(),
      visibleVariable: (name) => deps.sandbox.visibleVariable(name),
      sandboxed: deps.sandbox.active(),
    });
  };

  return {
    analyze,
    cwd: cwdOf,
    async run(input, ctx) {
      const command = input.command;
      if (command.trim() === '') throw new SvcError('invalid_input', 'command: give a command to run');
      // A command with values in variables is judged (and shown) with the values written in.
      const analysis = await analyze(input.equivalent ?? command, ctx.sessionId);
      const summary = { verdict: analysis.verdict, reason: analysis.reason };
      if (analysis.verdict === 'block') throw blocked(deps, ctx, command, analysis);
      const cwd = cwdOf(ctx.sessionId);
      // Before asking: a command the configured sandbox cannot run is refused, never run bare.
      const plan = deps.spawner.plan(cwd);
      for (const guard of deps.guards()) {
        await guard({
          tool: ctx.tool,
          sessionId: ctx.sessionId,
          paths: analysis.writes.filter((w) => deps.paths.contains(w)).map((w) => deps.paths.display(w)),
        });
      }
      await askFor(deps, ctx, input, analysis, cwd, plan);
      if (plan) {
        ctx.event?.('sandbox_exec_started', {
          ...plan.event,
          command: deps.redactor.string(clip(command, 500)),
          cwd: deps.paths.display(cwd),
          background: input.run_in_background ?? false,
          ...(ctx.sessionId ? { session_id: ctx.sessionId } : {}),
        });
      }
      if (input.run_in_background) return startBackground(deps, ctx, input, cwd, plan, summary);
      const timeoutSeconds = Math.min(
        input.timeout_seconds ?? deps.settings().timeoutSeconds,
        MAX_TIMEOUT_SECONDS,
      );
      const result = await runForeground(deps, ctx, {
        command,
        cwd,
        plan,
        timeoutSeconds,
        analysis,
        vars: input.vars,
        allowOutside: deps.settings().allowOutside,
      });
      if (result.newCwd) cwds.set(ctx.sessionId ?? '', result.newCwd);
      return { ...result.result, cwd: deps.paths.display(cwdOf(ctx.sessionId)), analysis: summary };
    },
  };
}

/** The refusal of a blocked command: the model reads why, and the ledger has it. */
function blocked(deps: ShellDeps, ctx: OpContext, command: string, analysis: BashAnalysis): SvcError {
  ctx.event?.('bash_blocked', {
    command: deps.redactor.string(clip(command, 500)),
    reason: analysis.reason,
  });
  const denial = refusal(analysis, deps.sandbox.protectedEntries());
  if (denial) {
    ctx.event?.('sandbox_denied', { ...denial, command: deps.redactor.string(clip(command, 500)) });
  }
  return new SvcError('forbidden', `bash: ${analysis.reason}`, {
    details: {
      command,
      analysis: { verdict: analysis.verdict, reason: analysis.reason },
      concerns: analysis.concerns,
    },
  });
}

async function askFor(
  deps: ShellDeps,
  ctx: OpContext,
  input: BashInput,
  analysis: BashAnalysis,
  cwd: string,
  plan: CommandSandboxPlan | undefined,
): Promise<void> {
  // Inside the OS sandbox a write cannot land outside the workspace, whatever its target.
  const unverified =
    !plan && analysis.unverified_writes.length
      ? `${analysis.unverified_writes[0]}, and ${deps.sandbox.missing()}`
      : undefined;
  try {
    await approve(ctx, {
      title: `bash: ${clip(input.equivalent ?? input.command, 120)}`,
      scope: analysis.scope,
      safe: analysis.verdict === 'safe',
      ...(unverified ? { unverified } : {}),
      details: {
        command: input.equivalent ?? input.command,
        ...(input.equivalent ? { runs_as: input.command, variables: input.vars } : {}),
        description: input.description,
        cwd: deps.paths.display(cwd),
        background: input.run_in_background ?? false,
        sandboxed: plan !== undefined,
        analysis: {
          verdict: analysis.verdict,
          reason: analysis.reason,
          read_only: analysis.read_only,
          allowed_by: analysis.allowed_by,
          commands: analysis.commands,
          writes: analysis.writes,
          concerns: analysis.concerns,
          unverified_writes: analysis.unverified_writes,
        },
      },
    });
  } catch (error) {
    if (
      SvcError.is(error) &&
      (error.details as { reason?: string } | undefined)?.reason === 'unverified_yolo'
    ) {
      ctx.event?.('sandbox_denied', {
        kind: 'unverified_write',
        source: 'rules',
        target: null,
        message: error.message,
        command: deps.redactor.string(clip(input.command, 500)),
      });
    }
    throw error;
  }
}

function startBackground(
  deps: ShellDeps,
  ctx: OpContext,
  input: BashInput,
  cwd: string,
  plan: CommandSandboxPlan | undefined,
  summary: BackgroundStart['analysis'],
): BackgroundStart {
  const command = input.command;
  const job = deps.jobs.start({
    command,
    cwd,
    vars: { ...input.vars, ...(ctx.sessionId ? { SVC_SESSION_ID: ctx.sessionId } : {}) },
    sessionId: ctx.sessionId,
    runId: ctx.runId,
    plan: plan ?? null,
  });
  ctx.event?.('background_job_started', {
    job_id: job.id,
    command: deps.redactor.string(clip(command, 500)),
    cwd: deps.paths.display(cwd),
    pid: job.pid ?? null,
    ...(ctx.sessionId ? { session_id: ctx.sessionId } : {}),
  });
  return {
    command,
    job_id: job.id,
    pid: job.pid,
    status: 'running',
    cwd: deps.paths.display(cwd),
    output_file: job.logPath,
    analysis: summary,
  };
}
