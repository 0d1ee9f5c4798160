/**
 * The one way svc starts a command (bash, background jobs, contract/recipe/quality-gate checks
 * through the shell, pack hooks): `createCommandSpawner(deps)`.
 *
 * - The environment is always scrubbed (./env.ts), sandboxed or not, plus svc's own markers.
 * - The command runs inside the sandbox's wrapper when there is one (./sandbox.ts `plan`).
 * - Every command is its own process group; cancel and timeout kill the group (the caller, via
 *   `kill()`), and so does svc's exit (an `exit` hook kills every group still running, while any
 *   is). Inside bwrap the sandbox also dies with svc, even on SIGKILL (`--die-with-parent`).
 * - With a run id, the pid and its start time go to the run ledger (`process_started`,
 *   `process_exited`), so a later svc can reap what a killed one left (src/runs/process-reaper.ts).
 * @module
 */
import { hostname } from 'node:os';
import { type SpawnedCommand, spawnShell } from '../workspace/process';
import { type ScrubOptions, scrubEnv } from './env';
import { identify, type ProcessIdentity } from './proc';
import type { CommandSandboxPlan, Sandbox } from './sandbox';

export type ProcessKind = 'bash' | 'job' | 'hook';

export interface SpawnRequest {
  script: string;
  cwd: string;
  /** svc's variables for this command (session id, hook context), set after the scrub. */
  vars?: Record<string, string>;
  onOutput?: (chunk: Buffer) => void;
  stdin?: string;
  /**
   * The sandbox wrapper planned beforehand (the shell plans before it asks, so a command the
   * sandbox cannot run is refused before anyone is asked); planned here when omitted.
   */
  plan?: CommandSandboxPlan | null;
  /** `sh` for hooks (they are written for /bin/sh); bash by default. */
  shell?: string;
  /** Ledger: the run the process belongs to, what it is, and a redacted label. */
  runId?: string;
  kind: ProcessKind;
  label: string;
}

export interface SpawnedProcess extends SpawnedCommand {
  identity: ProcessIdentity | undefined;
  sandboxed: boolean;
}

export interface CommandSpawner {
  /** The wrapper for a command in `cwd`, or undefined when it runs unsandboxed. Throws when it must not run. */
  plan(cwd: string): CommandSandboxPlan | undefined;
  /** The scrubbed environment plus svc's markers and `vars`. */
  env(vars?: Record<string, string>): Record<string, string>;
  spawn(request: SpawnRequest): SpawnedProcess;
  /** Process groups started and not yet exited. */
  running(): number;
  /** SIGKILL every process group still running (svc exits). */
  killAll(): void;
  /** The same spawner for another sandbox (a worktree's). */
  withSandbox(sandbox: SpawnerDeps['sandbox']): CommandSpawner;
}

export interface SpawnerDeps {
  sandbox: Pick<Sandbox, 'plan' | 'envPolicy' | 'credentialNames'>;
  /** svc's own environment: the source of the allowlisted variables. */
  env: Readonly<Record<string, string | undefined>>;
  /** True for a value the redactor knows as a secret. */
  isSecretValue?: (value: string) => boolean;
  /** Append to the run ledger (errors are swallowed: the ledger is evidence, not a gate). */
  record?: (runId: string, type: string, payload: Record<string, unknown>) => unknown;
}

/** Set for every command: no pagers or editors waiting on a terminal, and marked as svc's. */
const MARKERS: Record<string, string> = {
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  GIT_TERMINAL_PROMPT: '0',
  GIT_EDITOR: 'true',
  SVC: '1',
  // AUTH-29: commands the agent runs are marked, so human-only flows (OAuth sign-in) refuse.
  AGENT: 'svc',
};

export function createCommandSpawner(deps: SpawnerDeps): CommandSpawner {
  const live = new Map<number, SpawnedProcess>();
  const killAll = () => {
    for (const proc of live.values()) proc.reap();
  };
  let hooked = false;
  const track = (pid: number, proc: SpawnedProcess) => {
    live.set(pid, proc);
    if (!hooked) {
      process.on('exit', killAll);
      hooked = true;
    }
  };
  const untrack = (pid: number) => {
    live.delete(pid);
    if (live.size === 0 && hooked) {
      process.off('exit', killAll);
      hooked = false;
    }
  };
  const record = (runId: string | undefined, type: string, payload: Record<string, unknown>) => {
    if (!runId || !deps.record) return;
    try {
      // Not awaited: the SQLite ledger writes at the call; a failed append is dropped either way.
      void Promise.resolve(deps.record(runId, type, payload)).catch(() => {});
    } catch {
      // a run the ledger does not know (a direct call), or a closed database
    }
  };
  const owner = identify(process.pid);

  const env = (vars: Record<string, string> = {}) => {
    const options: ScrubOptions = {
      credentialNames: deps.sandbox.credentialNames(),
      isSecretValue: deps.isSecretValue,
    };
    const scrubbed = scrubEnv(deps.env, deps.sandbox.envPolicy(), options).env;
    return { ...scrubbed, ...MARKERS, TERM: scrubbed.TERM ?? 'dumb', ...vars };
  };

  return {
    plan: (cwd) => deps.sandbox.plan({ cwd }),
    env,
    running: () => live.size,
    killAll,
    withSandbox: (sandbox) => createCommandSpawner({ ...deps, sandbox }),
    spawn(request) {
      const plan = request.plan === undefined ? deps.sandbox.plan({ cwd: request.cwd }) : request.plan;
      const command = spawnShell(request.script, {
        cwd: request.cwd,
        env: env(request.vars),
        onOutput: request.onOutput,
        stdin: request.stdin,
        shell: request.shell,
        prefix: plan?.prefix,
      });
      const pid = command.child.pid;
      const proc: SpawnedProcess = {
        ...command,
        identity: pid === undefined ? undefined : identify(pid),
        sandboxed: plan !== undefined && plan !== null,
      };
      if (pid === undefined) return proc;
      track(pid, proc);
      record(request.runId, 'process_started', {
        ...proc.identity,
        kind: request.kind,
        command: request.label,
        sandboxed: proc.sandboxed,
        host: hostname(),
        owner: owner,
      });
      void command.exited.then((exit) => {
        untrack(pid);
        record(request.runId, 'process_exited', { pid, exit_code: exit.code, signal: exit.signal });
      });
      return proc;
    },
  };
}
