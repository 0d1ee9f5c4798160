/**
 * One foreground bash command, after it was analysed and approved (./shell.ts): start it through
 * the spawner in its own process group, stop the group on timeout or cancel, keep the output
 * (head and tail, the rest spilled to `<dataDir>/tool-output/`), track the working directory the
 * command left, and name what the OS sandbox stopped (`sandbox_denied`).
 * @module
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type Denial, detectDenials, pathDenial, writeDenial } from '../sandbox/denials';
import type { ProtectedPath } from '../sandbox/protected';
import type { CommandSandboxPlan } from '../sandbox/sandbox';
import type { BashAnalysis, ProtectedEntry } from '../shell/bash-analysis';
import { makeDirs } from '../util/make-dirs';
import { type OpContext, throwIfCancelled } from './context';
import { realpathOfDeepest } from './paths';
import { OutputCollector, pruneOldFiles } from './process';
import type { BashResult, ShellDeps } from './shell-types';

/** Output kept in the `local_shell_finished` ledger event (the evidence of a failing check). */
const OUTPUT_TAIL_CHARS = 2000;

export interface ForegroundRequest {
  command: string;
  cwd: string;
  plan: CommandSandboxPlan | undefined;
  timeoutSeconds: number;
  analysis: BashAnalysis;
  allowOutside: boolean;
  /** Extra environment variables (a recipe check's parameters). */
  vars?: Record<string, string>;
}

export interface ForegroundOutcome {
  result: Omit<BashResult, 'cwd' | 'analysis'>;
  /** The directory to keep for the session's next command, when it changed. */
  newCwd?: string;
}

export async function runForeground(
  deps: ShellDeps,
  ctx: OpContext,
  request: ForegroundRequest,
): Promise<ForegroundOutcome> {
  const { command, cwd, timeoutSeconds } = request;
  const spillPath = join(deps.dataDir, 'tool-output', `${deps.ids.next('out')}.txt`);
  const collector = new OutputCollector(deps.settings().maxOutputBytes, () => {
    pruneOldFiles(dirname(spillPath));
    return spillPath;
  });
  // The real path: inside the sandbox only real paths are mounted (a symlinked workspace's link is not).
  const shellDir = join(realpathOfDeepest(deps.dataDir), 'shell');
  makeDirs(shellDir);
  const cwdFile = join(shellDir, `cwd-${randomBytes(6).toString('hex')}`);
  const script = [
    `cd -- ${quote(cwd)} || exit 1`,
    `trap 'pwd -P >| ${quote(cwdFile)} 2>/dev/null' EXIT`,
    command,
  ].join('\n');
  throwIfCancelled(ctx.signal, 'the command');
  const started = deps.clock.now();
  const wallStart = performance.now();
  const label = deps.redactor.string(clip(command, 500));
  const proc = deps.spawner.spawn({
    script,
    cwd,
    vars: { ...request.vars, ...(ctx.sessionId ? { SVC_SESSION_ID: ctx.sessionId } : {}) },
    onOutput: (chunk) => collector.push(chunk),
    plan: request.plan ?? null,
    runId: ctx.runId,
    kind: 'bash',
    label,
  });
  ctx.event?.('local_shell_started', {
    command: label,
    cwd: deps.paths.display(cwd),
    pid: proc.child.pid ?? null,
    // The pid and its start time name the process for good: a later svc reaps it if it survives us.
    ...(proc.identity?.start_time != null ? { pid_start_time: proc.identity.start_time } : {}),
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
  const left = readCwd(cwdFile);
  throwIfCancelled(ctx.signal, 'the command');

  let newCwd: string | undefined;
  let cwdReset: string | undefined;
  if (left) {
    if (deps.paths.contains(left) || request.allowOutside) newCwd = left;
    else {
      cwdReset = `the command changed directory to ${left}, outside the workspace; the shell is back in ${deps.paths.root}`;
      newCwd = deps.paths.realRoot;
    }
  }
  let text = deps.redactor.string(output.text);
  const exitCode = timedOut ? null : exit.code;
  const signal = exit.signal && !timedOut ? { signal: exit.signal } : {};
  const durationMs = Math.round(performance.now() - wallStart);
  // The finding lifecycle reads checks (test, lint, typecheck runs) and their outcome from this.
  ctx.event?.('local_shell_finished', {
    command: label,
    cwd: deps.paths.display(cwd),
    exit_code: exitCode,
    ...signal,
    timed_out: timedOut,
    duration_ms: durationMs,
    commands: request.analysis.commands.map((c) => c.argv.map((w) => deps.redactor.string(w))),
    output_tail: text.length > OUTPUT_TAIL_CHARS ? text.slice(-OUTPUT_TAIL_CHARS) : text,
    ...(ctx.sessionId ? { session_id: ctx.sessionId } : {}),
  });
  // Whatever the exit code: a pipeline or `|| true` may have swallowed the failure.
  const denials = request.plan
    ? detectDenials(output.text, {
        workspace: deps.paths.realRoot,
        cwd,
        network: deps.sandbox.network(),
        protectedList: deps.sandbox.protectedEntries() as ProtectedPath[],
      })
    : [];
  for (const denial of denials) ctx.event?.('sandbox_denied', { ...denial, command: label });
  if (timedOut) text += `\n[timed out after ${timeoutSeconds} s; the command and its children were stopped]`;
  return {
    newCwd,
    result: {
      command,
      exit_code: exitCode,
      ...signal,
      output: text,
      truncated: output.truncated,
      ...(output.truncated ? { output_file: spillPath } : {}),
      timed_out: timedOut,
      duration_ms: durationMs,
      ...(cwdReset ? { cwd_reset: cwdReset } : {}),
      ...(denials.length ? { sandbox_denials: denials } : {}),
    },
  };
}

/**
 * The denial a block of the rules amounts to, when it is one the model should read as such (a
 * protected path, a write outside the workspace); undefined for the other blocks (sudo, rm -rf /).
 */
export function refusal(
  analysis: BashAnalysis,
  protectedList: readonly ProtectedEntry[],
): Denial | undefined {
  const first = analysis.denied[0];
  if (!first) return undefined;
  if (first.kind === 'write_outside_workspace')
    return { ...writeDenial(first.path, 'rules'), message: analysis.reason };
  const hit = protectedList.find((p) => p.label === first.label);
  if (!hit) return undefined;
  return {
    ...pathDenial(first.path, { ...hit, kind: hit.kind ?? 'deny_read' }, 'rules'),
    message: analysis.reason,
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

export function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
