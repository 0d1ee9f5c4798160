/**
 * The bash tool's engine. Each command is analysed (shell/bash-analysis), blocked or put
 * to the operator, then run with bash in its own process group. The working directory persists
 * per session between calls (a `cd` sticks); variables and functions do not. Timeouts and
 * cancellation kill the whole group. Long output keeps its head and tail and spills in full to
 * `<dataDir>/tool-output/`.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { SvcError } from '../errors';
import type { Redactor } from '../redact';
import { analyzeBash, type BashAnalysis } from '../shell/bash-analysis';
import type { Clock, Ids } from '../util/ids';
import { approve, type MutationGuard, type OpContext, throwIfCancelled } from './context';
import type { Jobs } from './jobs';
import type { PathResolver } from './paths';
import { OutputCollector, pruneOldFiles, spawnShell } from './process';

export interface ShellSettings {
  timeoutSeconds: number;
  maxOutputBytes: number;
  allowOutside: boolean;
  autoAllowReadOnly: boolean;
  bashAllow: string[];
  bashDeny: string[];
}

export interface BashInput {
  command: string;
  timeout_seconds?: number;
  run_in_background?: boolean;
  description?: string;
}

export interface BashResult {
  command: string;
  /** null when the command was killed (timeout, signal). */
  exit_code: number | null;
  /** The signal that ended the command, when one did. */
  signal?: string;
  /** stdout and stderr, merged in the order they were written (redacted). */
  output: string;
  truncated: boolean;
  /** Full output when truncated (absolute path in the data dir). */
  output_file?: string;
  /** Working directory after the command (workspace-relative when inside). */
  cwd: string;
  timed_out: boolean;
  duration_ms: number;
  /** Set when the directory the command left was outside the workspace and was reset. */
  cwd_reset?: string;
  analysis: { verdict: BashAnalysis['verdict']; reason: string };
}

export interface BackgroundStart {
  command: string;
  job_id: string;
  pid: number | undefined;
  status: 'running';
  cwd: string;
  output_file: string;
  analysis: { verdict: BashAnalysis['verdict']; reason: string };
}

/**
 * Where commands run (src/sandbox implements it): a wrapper for each command, or undefined to run
 * it as is. Throws (an SvcError saying why) when the configured sandbox cannot run: the command
 * must then not run at all.
 */
export interface CommandSandbox {
  plan(request: { cwd: string }): { prefix: string[]; event: Record<string, unknown> } | undefined;
}

export interface Shell {
  /** Analyse only (what the permission prompt would say). */
  analyze(command: string, sessionId?: string): Promise<BashAnalysis>;
  run(input: BashInput, ctx: OpContext): Promise<BashResult | BackgroundStart>;
  /** Current working directory of a session's shell (absolute). */
  cwd(sessionId?: string): string;
}

export const MAX_TIMEOUT_SECONDS = 600;
/** Output kept in the `local_shell_finished` ledger event (the evidence of a failing check). */
const OUTPUT_TAIL_CHARS = 2000;

export function createShell(deps: {
  paths: PathResolver;
  dataDir: string;
  env: Readonly<Record<string, string | undefined>>;
  settings: () => ShellSettings;
  guards: () => readonly MutationGuard[];
  jobs: Jobs;
  ids: Ids;
  clock: Clock;
  redactor: Redactor;
  sandbox?: CommandSandbox;
}): Shell {
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
      home: deps.env.HOME,
      scratchDirs: [tmpdir(), '/tmp'],
      allowOutsideWorkspace: s.allowOutside,
      autoAllowReadOnly: s.autoAllowReadOnly,
      bashAllow: s.bashAllow,
      bashDeny: s.bashDeny,
    });
  };

  const childEnv = (ctx: OpContext): Record<string, string | undefined> => ({
    ...deps.env,
    PAGER: 'cat',
    GIT_PAGER: 'cat',
    GIT_TERMINAL_PROMPT: '0',
    GIT_EDITOR: 'true',
    TERM: deps.env.TERM ?? 'dumb',
    SVC: '1',
    // AUTH-29: commands the agent runs are marked, so human-only flows (OAuth sign-in) refuse.
    AGENT: 'svc',
    ...(ctx.sessionId ? { SVC_SESSION_ID: ctx.sessionId } : {}),
  });

  return {
    analyze,
    cwd: cwdOf,
    async run(input, ctx) {
      const command = input.command;
      if (command.trim() === '') throw new SvcError('invalid_input', 'command: give a command to run');
      const settings = deps.settings();
      const analysis = await analyze(command, ctx.sessionId);
      const summary = { verdict: analysis.verdict, reason: analysis.reason };
      if (analysis.verdict === 'block') {
        ctx.event?.('bash_blocked', {
          command: deps.redactor.string(clip(command, 500)),
          reason: analysis.reason,
        });
        throw new SvcError('forbidden', `bash: ${analysis.reason}`, {
          details: { command, analysis: summary, concerns: analysis.concerns },
        });
      }
      const cwd = cwdOf(ctx.sessionId);
      // Before asking: a command the configured sandbox cannot run is refused, never run bare.
      const sandbox = deps.sandbox?.plan({ cwd });
      const sandboxStarted = (background: boolean) => {
        if (!sandbox) return;
        ctx.event?.('sandbox_exec_started', {
          ...sandbox.event,
          command: deps.redactor.string(clip(command, 500)),
          cwd: deps.paths.display(cwd),
          background,
          ...(ctx.sessionId ? { session_id: ctx.sessionId } : {}),
        });
      };
      for (const guard of deps.guards()) {
        guard({
          tool: ctx.tool,
          sessionId: ctx.sessionId,
          paths: analysis.writes.filter((w) => deps.paths.contains(w)).map((w) => deps.paths.display(w)),
        });
      }
      await approve(ctx, {
        title: `bash: ${clip(command, 120)}`,
        scope: analysis.scope,
        safe: analysis.verdict === 'safe',
        details: {
          command,
          description: input.description,
          cwd: deps.paths.display(cwd),
          background: input.run_in_background ?? false,
          analysis: {
            ...summary,
            read_only: analysis.read_only,
            allowed_by: analysis.allowed_by,
            commands: analysis.commands,
            writes: analysis.writes,
            concerns: analysis.concerns,
          },
        },
      });

      if (input.run_in_background) {
        sandboxStarted(true);
        const job = deps.jobs.start({
          command,
          cwd,
          env: childEnv(ctx),
          sessionId: ctx.sessionId,
          prefix: sandbox?.prefix,
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

      const timeoutSeconds = Math.min(input.timeout_seconds ?? settings.timeoutSeconds, MAX_TIMEOUT_SECONDS);
      const id = deps.ids.next('out');
      const spillPath = join(deps.dataDir, 'tool-output', `${id}.txt`);
      const collector = new OutputCollector(settings.maxOutputBytes, () => {
        pruneOldFiles(dirname(spillPath));
        return spillPath;
      });
      const cwdFile = join(deps.dataDir, 'shell', `cwd-${randomBytes(6).toString('hex')}`);
      mkdirSync(join(deps.dataDir, 'shell'), { recursive: true });
      const script = [
        `cd -- ${quote(cwd)} || exit 1`,
        `trap 'pwd -P >| ${quote(cwdFile)} 2>/dev/null' EXIT`,
        command,
      ].join('\n');
      throwIfCancelled(ctx.signal, 'the command');
      const started = deps.clock.now();
      const wallStart = performance.now();
      sandboxStarted(false);
      const proc = spawnShell(script, {
        cwd,
        env: childEnv(ctx),
        onOutput: (chunk) => collector.push(chunk),
        prefix: sandbox?.prefix,
      });
      ctx.event?.('local_shell_started', {
        command: deps.redactor.string(clip(command, 500)),
        cwd: deps.paths.display(cwd),
        pid: proc.child.pid ?? null,
        timeout_seconds: timeoutSeconds,
        started_at: started,
        ...(ctx.sessionId ? { session_id: ctx.sessionId } : {}),
      });

      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        void proc.kill();
      }, timeoutSeconds * 1000);
      const onAbort = () => void proc.kill();
      ctx.signal?.addEventListener('abort', onAbort, { once: true });
      let exit: { code: number | null; signal: NodeJS.Signals | null };
      try {
        exit = await proc.exited;
      } finally {
        clearTimeout(timer);
        ctx.signal?.removeEventListener('abort', onAbort);
        proc.reap();
      }
      const output = collector.finish();
      const newCwd = readCwd(cwdFile);
      throwIfCancelled(ctx.signal, 'the command');

      let cwdReset: string | undefined;
      if (newCwd) {
        if (deps.paths.contains(newCwd) || settings.allowOutside) cwds.set(ctx.sessionId ?? '', newCwd);
        else {
          cwdReset = `the command changed directory to ${newCwd}, outside the workspace; the shell is back in ${deps.paths.root}`;
          cwds.set(ctx.sessionId ?? '', deps.paths.realRoot);
        }
      }
      const finalCwd = cwdOf(ctx.sessionId);
      let text = deps.redactor.string(output.text);
      // The finding lifecycle reads checks (test, lint, typecheck runs) and their outcome from this.
      ctx.event?.('local_shell_finished', {
        command: deps.redactor.string(clip(command, 500)),
        cwd: deps.paths.display(cwd),
        exit_code: timedOut ? null : exit.code,
        ...(exit.signal && !timedOut ? { signal: exit.signal } : {}),
        timed_out: timedOut,
        duration_ms: Math.round(performance.now() - wallStart),
        commands: analysis.commands.map((c) => c.argv.map((w) => deps.redactor.string(w))),
        output_tail: text.length > OUTPUT_TAIL_CHARS ? text.slice(-OUTPUT_TAIL_CHARS) : text,
        ...(ctx.sessionId ? { session_id: ctx.sessionId } : {}),
      });
      if (timedOut)
        text += `\n[timed out after ${timeoutSeconds} s; the command and its children were stopped]`;
      return {
        command,
        exit_code: timedOut ? null : exit.code,
        ...(exit.signal && !timedOut ? { signal: exit.signal } : {}),
        output: text,
        truncated: output.truncated,
        ...(output.truncated ? { output_file: spillPath } : {}),
        cwd: deps.paths.display(finalCwd),
        timed_out: timedOut,
        duration_ms: Math.round(performance.now() - wallStart),
        ...(cwdReset ? { cwd_reset: cwdReset } : {}),
        analysis: summary,
      };
    },
  };
}

function readCwd(file: string): string | undefined {
  try {
    const value = readFileSync(file, 'utf8').trim();
    return value || undefined;
  } catch {
    return undefined;
  } finally {
    rmSync(file, { force: true });
  }
}

/** Single-quote a string for bash. */
export function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
