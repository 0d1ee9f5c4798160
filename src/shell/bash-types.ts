/**
 * The shapes of bash analysis (./bash-analysis.ts): its options, its verdict, and what the walk
 * over a command collects. A file of their own so the walker and the checks import them without
 * importing the analysis back.
 * @module
 */
import type { Word } from './bash-rules';

export type BashVerdict = 'safe' | 'ask' | 'block';

export interface BashAnalysisOptions {
  /** Workspace root (real path). */
  workspace: string;
  /** Directory the command starts in. */
  cwd: string;
  home?: string;
  /** Directories outside the workspace that may be written after asking (the OS temp dir). */
  scratchDirs?: string[];
  allowOutsideWorkspace?: boolean;
  autoAllowReadOnly?: boolean;
  bashAllow?: string[];
  bashDeny?: string[];
  /** svc's data dir, credential store and deny list: any path into them is refused. */
  protectedPaths?: readonly ProtectedEntry[];
  /** Can a command read this variable without asking (allowlisted)? Omitted: every one can. */
  visibleVariable?: (name: string) => boolean;
  /** The OS sandbox contains the command (protected paths are not mounted there). */
  sandboxed?: boolean;
}

export interface ProtectedEntry {
  /** Absolute, symlinks resolved. */
  path: string;
  label: string;
  why: string;
  kind?: 'data_dir' | 'credential_store' | 'deny_read';
  /** Parts that stay readable (the data dir's tool output). */
  readable?: (real: string) => boolean;
}

export interface AnalyzedCommand {
  /** The words, with run-time values shown as written (`$HOME`). */
  argv: string[];
  read_only: boolean;
}

export interface BashAnalysis {
  verdict: BashVerdict;
  /** One sentence for the prompt, the log and the model. */
  reason: string;
  /** Every command only reads and nothing is written. */
  read_only: boolean;
  /** `permissions.bash_allow` entries that allowed the commands that are not read-only. */
  allowed_by: string[];
  commands: AnalyzedCommand[];
  /** Files written by redirects and file-changing commands (as resolved, when known). */
  writes: string[];
  /** Why the command is not read-only (empty when it is). */
  concerns: string[];
  /** Why some write's target cannot be verified before the command runs (empty when none). */
  unverified_writes: string[];
  /** Blocks that are a denial of a place: a protected path, a write outside the workspace. */
  denied: { kind: 'path_denied' | 'write_outside_workspace'; path: string; label?: string }[];
  /** Stable key for a session-wide grant: `bash:git commit`, `bash:npm run build && rm`. */
  scope: string;
}

export interface Concern {
  /**
   * `command` concerns can be lifted by bash_allow; the others cannot. `dynamic`, `unverified`
   * and `parse` make a write unverifiable; `env` reads the environment; `protected` reads a
   * protected location recursively.
   */
  kind:
    | 'command'
    | 'write'
    | 'substitution'
    | 'assignment'
    | 'parse'
    | 'outside'
    | 'dynamic'
    | 'unverified'
    | 'construct'
    | 'env'
    | 'protected';
  text: string;
}

export interface Found {
  commands: { argv: Word[]; display: string[]; readOnly: boolean; head: string }[];
  concerns: Concern[];
  blocks: string[];
  writes: string[];
  nested: { command: string; cwd: string | null }[];
  denied: BashAnalysis['denied'];
  /** A command creates a link (ln, cp -s). */
  links?: boolean;
  /** A command writes files (redirects, known writers). */
  writers?: boolean;
}
