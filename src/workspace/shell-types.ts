/**
 * The shapes of the bash engine (./shell.ts, ./shell-run.ts): its input, result, dependencies and
 * the view of the OS sandbox it needs. A file of their own so the two import them, not each other.
 * @module
 */
import type { Redactor } from '../redact';
import type { CommandSpawner } from '../sandbox/spawn';
import type { BashAnalysis, ProtectedEntry } from '../shell/bash-types';
import type { Clock, Ids } from '../util/ids';
import type { MutationGuard, OpContext } from './context';
import type { Jobs } from './jobs';
import type { PathResolver } from './paths';

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
  /**
   * Extra environment variables of the command (not a tool input): a recipe check's parameters
   * (`SVC_PARAM_<name>`), so values reach the command as data, never as shell text.
   */
  vars?: Record<string, string>;
  /**
   * With `vars`: the same command with their values written in as quoted words (it makes the same
   * words): what the analysis checks and the permission prompt shows.
   */
  equivalent?: string;
}

export interface SandboxDenial {
  kind: 'write_outside_workspace' | 'path_denied' | 'network_off' | 'unverified_write';
  source: 'sandbox' | 'rules';
  target: string | null;
  message: string;
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
  /** Present when the OS sandbox stopped something: what, why, how to allow it. */
  sandbox_denials?: SandboxDenial[];
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

/** What the shell needs to know about the OS sandbox (src/sandbox implements it). */
export interface ShellSandbox {
  /** Commands run inside the OS sandbox now. */
  active(): boolean;
  /** svc's data dir, credential store and deny list, for the analysis and denial messages. */
  protectedEntries(): ProtectedEntry[];
  /** The protected location a real path is in, for every tool (the data dir's tool output is not). */
  protectedPath(real: string): ProtectedEntry | undefined;
  /** `protectedPath` for many real paths (a search's results), the list taken once. */
  protectedMatcher(): (real: string) => ProtectedEntry | undefined;
  /** Can a command read this variable without asking (the scrubbed environment passes it)? */
  visibleVariable(name: string): boolean;
  network(): 'none' | 'host';
  /** Why there is no OS sandbox and how to get one (for refusals), when there is none. */
  missing(): string;
}

export interface Shell {
  /** Analyse only (what the permission prompt would say). */
  analyze(command: string, sessionId?: string): Promise<BashAnalysis>;
  run(input: BashInput, ctx: OpContext): Promise<BashResult | BackgroundStart>;
  /** Current working directory of a session's shell (absolute). */
  cwd(sessionId?: string): string;
}

export interface ShellDeps {
  paths: PathResolver;
  dataDir: string;
  home: string | undefined;
  settings: () => ShellSettings;
  guards: () => readonly MutationGuard[];
  jobs: Jobs;
  ids: Ids;
  clock: Clock;
  redactor: Redactor;
  spawner: CommandSpawner;
  sandbox: ShellSandbox;
}
