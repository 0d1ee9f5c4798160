/**
 * The command sandbox (`options.sandbox`, issue 15). Every command svc starts (bash, background
 * jobs, contract/recipe checks, pack hooks) goes through ./spawn.ts, which asks `plan()` here:
 *
 * - mode `auto` (default): inside bubblewrap (./bwrap.ts) where it can run; elsewhere the command
 *   runs unsandboxed under the parse-based bash rules, and `notice()` says so once;
 * - mode `bwrap`: always inside bubblewrap; when it cannot run, `plan` throws an `unavailable`
 *   SvcError naming the fix and the command is not run;
 * - mode `off`: no OS sandbox (reported as such).
 *
 * Inside: the workspace read-write, the rest of the file system read-only, a private /tmp, the
 * protected locations (./protected.ts: data dir, credential store, deny list) not mounted at all
 * (an empty read-only directory or an unreadable file in their place), `allow_write` read-write,
 * no network unless `network = "host"`, own PID namespace, no capabilities.
 *
 * `status()` is the `sandbox_status` read model (and `svc config show-sandbox`).
 * @module
 */
import { existsSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { globalConfigDir, userCacheDir } from '../config/load';
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { ProtectedEntry } from '../shell/bash-analysis';
import { type BindMount, type BwrapProbe, layoutArgs, type ProbeCache, probeBwrap } from './bwrap';
import { CREDENTIAL_ENV, ENV_ALLOWLIST, type ShellEnvPolicy, scrubEnv, visibleVariable } from './env';
import { installCommand } from './install-hint';
import { buildLayout, prepareDataDir } from './layout';
import {
  createProtectedPaths,
  expandPath,
  type ProtectedPath,
  type ProtectedPaths,
  within,
} from './protected';
import { fallbackNotice, message, missingSandbox, type SandboxState, sandboxState } from './state';

/** The wrapper for one command (the spawner puts `prefix` before `bash -c …`). */
export interface CommandSandboxPlan {
  prefix: string[];
  /** Payload of the `sandbox_exec_started` run ledger event (the shell adds command and cwd). */
  event: Record<string, unknown>;
}

export type { SandboxState } from './state';

export interface SandboxStatus {
  mode: 'auto' | 'bwrap' | 'off';
  /** active: commands run sandboxed; fallback: auto mode without a usable sandbox (parse-based
   * rules only); off: mode off; unavailable: mode bwrap without a usable sandbox (commands fail). */
  state: SandboxState;
  /** Why the state is what it is, in one sentence. */
  reason: string;
  /** The exact command that installs bubblewrap here, when that is the fix; else null. */
  install: string | null;
  /** Commands run inside the sandbox now. */
  enforced: boolean;
  /** bwrap is installed and can create a sandbox here. */
  available: boolean;
  bwrap: BwrapProbe;
  network: 'none' | 'host';
  /** The mounts a sandboxed command gets (also shown when not active). */
  binds: BindMount[];
  /** `options.sandbox.allow_write` (and its old name writable_paths), resolved. */
  writable_paths: { path: string; exists: boolean }[];
  read_only_git: boolean;
  /** What no command sees and no tool reads or writes. */
  protected_paths: (ProtectedPath & { exists: boolean })[];
  /** The environment commands get: names only, never values. */
  env: { allowlist: readonly string[]; include: string[]; set: string[]; dropped: string[] };
  /** The bash safety rules in force, sandbox or not (bash analysis and config). */
  bash_rules: {
    always_blocked: readonly string[];
    bash_deny: string[];
    bash_allow: string[];
    auto_allow_read_only_bash: boolean;
    allow_outside_workspace: boolean;
    timeout_seconds: number;
    max_output_bytes: number;
  };
  /** One sentence: what happens to the next bash command. */
  message: string;
  /** The one-line notice surfaces show once when commands run without the OS sandbox (auto mode). */
  notice: string | null;
}

export interface Sandbox {
  status(): SandboxStatus;
  /** Commands run sandboxed now. */
  active(): boolean;
  /** The wrapper for a command starting in `cwd`; undefined when it runs unsandboxed. Throws when mode bwrap cannot run. */
  plan(request: { cwd: string }): CommandSandboxPlan | undefined;
  /** One line for the user when commands run without the OS sandbox in auto mode; else undefined. */
  notice(): string | undefined;
  readonly protectedPaths: ProtectedPaths;
  /** `options.shell_env` as the spawner and bash analysis read it. */
  envPolicy(): ShellEnvPolicy;
  /** Variables svc reads provider credentials from (never passed to commands). */
  credentialNames(): ReadonlySet<string>;
  /** Protected locations for bash analysis and denial messages (data dir output readable). */
  protectedEntries(): ProtectedEntry[];
  /** The protected location a real path is in, for every tool (the data dir's tool output is not). */
  protectedPath(real: string): ProtectedPath | undefined;
  /** `protectedPath` for many real paths (a search's results), the list taken once. */
  protectedMatcher(): (real: string) => ProtectedPath | undefined;
  /** Can a command read this variable without asking (the scrubbed environment passes it)? */
  visibleVariable(name: string): boolean;
  network(): 'none' | 'host';
  /** Why no OS sandbox contains commands now and how to get one (for refusals). */
  missing(): string;
  /** The same sandbox for another workspace (a worktree) with its own data dir; this one's stays protected. */
  forWorkspace(workspace: string, dataDir: string): Sandbox;
}

/** What bash analysis refuses whatever the config (src/shell/bash-analysis.ts). */
export const ALWAYS_BLOCKED = [
  'privilege escalation (sudo, doas, su, pkexec)',
  'rm -r of /, the home directory or the whole workspace; rm --no-preserve-root',
  'writes outside the workspace (unless permissions.allow_outside_workspace)',
  "reading or writing svc's data directory, credential store and the deny list (~/.ssh, ~/.aws, …)",
  'writes to raw devices',
  'formatting or repartitioning disks',
  'shutdown, reboot, halt',
  'kill -1',
  'fork bombs',
  'downloads piped into a shell',
] as const;

/** Probe results are kept this long (bwrap does not appear or vanish often). */
const PROBE_TTL_MS = 30_000;

export interface SandboxDeps {
  config: () => Config;
  workspace: string;
  dataDir: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Variables svc reads provider credentials from (the provider catalog's api_key_env). */
  credentialEnv?: () => readonly string[];
  /** Defaults to process.platform (tests). */
  platform?: NodeJS.Platform;
  /** Other data dirs to protect (the main workspace's, for a worktree inside it). */
  outerDataDirs?: readonly string[];
}

/**
 * The first probe of a process may use the result a previous process stored (issue 17: the probe
 * was ~15-20 ms of every `svc run`); later ones probe again and store theirs.
 */
function probeCache(env: SandboxDeps['env'], again: boolean): ProbeCache | undefined {
  const dir = userCacheDir(env as Record<string, string | undefined>);
  return dir ? { dir, refresh: again } : undefined;
}

export function createSandbox(deps: SandboxDeps): Sandbox {
  const platform = deps.platform ?? process.platform;
  let cached: { key: string; at: number; probe: BwrapProbe } | undefined;
  const probe = (): BwrapProbe => {
    const options = deps.config().options.sandbox;
    const key = `${options.bwrap_path ?? ''}\0${options.network}\0${deps.env.PATH ?? ''}`;
    const now = Date.now();
    if (!cached || cached.key !== key || now - cached.at > PROBE_TTL_MS) {
      const cache = probeCache(deps.env, cached !== undefined);
      cached = { key, at: now, probe: probeBwrap(options.bwrap_path, deps.env, options.network, cache) };
    }
    return cached.probe;
  };
  const realWorkspace = safeRealpath(deps.workspace);
  const dataDir = resolve(deps.workspace, deps.dataDir);
  const allowWrite = () => {
    const options = deps.config().options.sandbox;
    return [...new Set([...options.allow_write, ...options.writable_paths])];
  };
  const protectedPaths = createProtectedPaths({
    dataDirs: [dataDir, ...(deps.outerDataDirs ?? [])],
    credentialDir: globalConfigDir(deps.env as Record<string, string | undefined>),
    home: deps.env.HOME,
    workspace: realWorkspace,
    credentialFiles: () =>
      ['GOOGLE_APPLICATION_CREDENTIALS', 'AWS_SHARED_CREDENTIALS_FILE', 'CLOUDSDK_CONFIG']
        .map((name) => deps.env[name])
        .filter((v): v is string => Boolean(v)),
    config: () => {
      const options = deps.config().options.sandbox;
      return { deny_read: options.deny_read, allow_read: options.allow_read, allow_write: allowWrite() };
    },
  });
  const writablePaths = () =>
    allowWrite()
      .map((p) => expandPath(p, deps.env.HOME, realWorkspace))
      .map((path) => ({ path, exists: existsSync(path) }));
  const credentialNames = () => new Set([...(deps.credentialEnv?.() ?? []), ...CREDENTIAL_ENV]);
  const envPolicy = (): ShellEnvPolicy => deps.config().options.shell_env;

  const layout = (proc: 'fresh' | 'host'): BindMount[] =>
    buildLayout({
      proc,
      workspace: realWorkspace,
      dataDir,
      readOnlyGit: deps.config().options.sandbox.read_only_git,
      writable: writablePaths(),
      protectedList: protectedPaths.list(),
      hideProcs: [process.pid, process.ppid],
    });

  const state = () => sandboxState(deps.config().options.sandbox.mode, platform, probe);

  return {
    protectedPaths,
    envPolicy,
    credentialNames,
    active: () => state().state === 'active',
    protectedEntries: () =>
      protectedPaths.list().map((p) => ({
        ...p,
        ...(p.kind === 'data_dir'
          ? { readable: (real: string) => within(p.path, real) && protectedPaths.find(real) === undefined }
          : {}),
      })),
    protectedPath: (real) => protectedPaths.find(real),
    protectedMatcher: () => protectedPaths.matcher(),
    visibleVariable: (name) => visibleVariable(name, envPolicy()),
    network: () => deps.config().options.sandbox.network,
    forWorkspace: (workspace, ownDataDir) =>
      createSandbox({
        ...deps,
        workspace,
        dataDir: ownDataDir,
        outerDataDirs: [dataDir, ...(deps.outerDataDirs ?? [])],
      }),
    missing: () => missingSandbox(state()),
    status() {
      const config = deps.config();
      const options = config.options.sandbox;
      const now = state();
      const policy = envPolicy();
      return {
        mode: options.mode,
        state: now.state,
        reason: now.reason,
        install: now.install,
        enforced: now.state === 'active',
        available: now.bwrap.usable,
        bwrap: now.bwrap,
        network: options.network,
        binds: layout(now.bwrap.proc ?? 'fresh'),
        writable_paths: writablePaths(),
        read_only_git: options.read_only_git,
        protected_paths: protectedPaths.list().map((p) => ({ ...p, exists: existsSync(p.path) })),
        env: {
          allowlist: ENV_ALLOWLIST,
          include: [...policy.include],
          set: Object.keys(policy.set).sort(),
          dropped: scrubEnv(deps.env, policy, { credentialNames: credentialNames() }).dropped,
        },
        bash_rules: {
          always_blocked: ALWAYS_BLOCKED,
          bash_deny: config.permissions.bash_deny,
          bash_allow: config.permissions.bash_allow,
          auto_allow_read_only_bash: config.permissions.auto_allow_read_only_bash,
          allow_outside_workspace: config.permissions.allow_outside_workspace,
          timeout_seconds: config.options.bash.timeout_seconds,
          max_output_bytes: config.options.bash.max_output_bytes,
        },
        message: message(now, options.network),
        notice: fallbackNotice(now) ?? null,
      };
    },
    notice: () => fallbackNotice(state()),
    plan(request) {
      const options = deps.config().options.sandbox;
      const now = state();
      if (now.state === 'off' || now.state === 'fallback') return undefined;
      const bwrap = now.bwrap;
      if (now.state === 'unavailable' || !bwrap.path || !bwrap.proc) {
        throw new SvcError(
          'unavailable',
          `bash: options.sandbox.mode is "bwrap" but the sandbox cannot run: ${bwrap.error}. ` +
            `Install bubblewrap (${installCommand()}) or set options.sandbox.mode = "auto" or "off"; the command was not run`,
          { details: { sandbox: 'bwrap', bwrap_path: bwrap.path, error: bwrap.error } },
        );
      }
      prepareDataDir(dataDir);
      const binds = layout(bwrap.proc);
      const prefix = [
        bwrap.path,
        ...layoutArgs({ binds, network: options.network, proc: bwrap.proc }),
        '--chdir',
        request.cwd,
        '--',
      ];
      return {
        prefix,
        event: {
          sandbox: 'bwrap',
          bwrap_version: bwrap.version,
          network: options.network,
          writable: binds.filter((b) => b.access === 'read-write').map((b) => b.path),
          hidden: binds.filter((b) => b.access === 'hidden').map((b) => b.path),
        },
      };
    },
  };
}

function safeRealpath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}
