/**
 * The command sandbox (`options.sandbox`): with mode `bwrap` every bash command and background job
 * runs inside bubblewrap (./bwrap.ts): the workspace read-write, the rest of the system
 * read-only, a private /tmp, the network per `options.sandbox.network`. When bwrap is missing or
 * cannot run here, `plan` throws an `unavailable` SvcError that names the fix: a command is never
 * run unsandboxed while the sandbox is configured. Mode `off` (default) runs commands as they are.
 *
 * `status()` is the `sandbox_status` read model (and `svc config show-sandbox`).
 * @module
 */
import { existsSync, mkdirSync, realpathSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import { type BindMount, type BwrapProbe, baseBinds, layoutArgs, probeBwrap } from './bwrap';

/** The wrapper for one command (the shell puts `prefix` before `bash -c …`). */
export interface CommandSandboxPlan {
  prefix: string[];
  /** Payload of the `sandbox_exec_started` run ledger event (the shell adds command and cwd). */
  event: Record<string, unknown>;
}

export interface SandboxStatus {
  mode: 'off' | 'bwrap';
  /** Commands run inside the sandbox now (mode bwrap and bwrap usable). */
  enforced: boolean;
  /** bwrap is installed and can create a sandbox here. */
  available: boolean;
  bwrap: BwrapProbe;
  network: 'none' | 'host';
  /** The mounts a sandboxed command gets (the layout mode bwrap uses, also shown when off). */
  binds: BindMount[];
  /** `options.sandbox.writable_paths`, resolved; missing ones are not bound. */
  writable_paths: { path: string; exists: boolean }[];
  read_only_git: boolean;
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
}

export interface Sandbox {
  status(): SandboxStatus;
  /** The wrapper for a command starting in `cwd`; undefined when mode is off. Throws when it cannot run. */
  plan(request: { cwd: string }): CommandSandboxPlan | undefined;
}

/** What bash analysis refuses whatever the config (src/shell/bash-analysis.ts). */
export const ALWAYS_BLOCKED = [
  'privilege escalation (sudo, doas, su, pkexec)',
  'rm -r of /, the home directory or the whole workspace; rm --no-preserve-root',
  'writes outside the workspace (unless permissions.allow_outside_workspace)',
  'writes to raw devices',
  'formatting or repartitioning disks',
  'shutdown, reboot, halt',
  'kill -1',
  'fork bombs',
  'downloads piped into a shell',
] as const;

/** Probe results are kept this long (bwrap does not appear or vanish often). */
const PROBE_TTL_MS = 30_000;

export function createSandbox(deps: {
  config: () => Config;
  workspace: string;
  dataDir: string;
  env: Readonly<Record<string, string | undefined>>;
}): Sandbox {
  let cached: { key: string; at: number; probe: BwrapProbe } | undefined;
  const probe = (): BwrapProbe => {
    const options = deps.config().options.sandbox;
    const key = `${options.bwrap_path ?? ''}\0${options.network}\0${deps.env.PATH ?? ''}`;
    const now = Date.now();
    if (!cached || cached.key !== key || now - cached.at > PROBE_TTL_MS) {
      cached = { key, at: now, probe: probeBwrap(options.bwrap_path, deps.env, options.network) };
    }
    return cached.probe;
  };
  const realWorkspace = safeRealpath(deps.workspace);
  const shellState = join(safeRealpath(resolve(deps.workspace, deps.dataDir)), 'shell');

  const writablePaths = () =>
    deps
      .config()
      .options.sandbox.writable_paths.map((p) => resolve(realWorkspace, p))
      .map((path) => ({ path, exists: existsSync(path) }));

  const layout = (proc: 'fresh' | 'host'): BindMount[] => {
    const options = deps.config().options.sandbox;
    const binds = [
      ...baseBinds(proc),
      { path: realWorkspace, access: 'read-write', why: 'the workspace' } as BindMount,
    ];
    if (!inside(realWorkspace, shellState)) {
      binds.push({
        path: shellState,
        access: 'read-write',
        why: "svc's shell state (the cwd between calls)",
      });
    }
    for (const extra of writablePaths()) {
      if (extra.exists)
        binds.push({ path: extra.path, access: 'read-write', why: 'options.sandbox.writable_paths' });
    }
    const git = join(realWorkspace, '.git');
    if (options.read_only_git && existsSync(git)) {
      binds.push({ path: git, access: 'read-only', why: 'options.sandbox.read_only_git' });
    }
    return binds;
  };

  return {
    status() {
      const config = deps.config();
      const options = config.options.sandbox;
      const bwrap = probe();
      const enforced = options.mode === 'bwrap' && bwrap.usable;
      return {
        mode: options.mode,
        enforced,
        available: bwrap.usable,
        bwrap,
        network: options.network,
        binds: layout(bwrap.proc ?? 'fresh'),
        writable_paths: writablePaths(),
        read_only_git: options.read_only_git,
        bash_rules: {
          always_blocked: ALWAYS_BLOCKED,
          bash_deny: config.permissions.bash_deny,
          bash_allow: config.permissions.bash_allow,
          auto_allow_read_only_bash: config.permissions.auto_allow_read_only_bash,
          allow_outside_workspace: config.permissions.allow_outside_workspace,
          timeout_seconds: config.options.bash.timeout_seconds,
          max_output_bytes: config.options.bash.max_output_bytes,
        },
        message:
          options.mode === 'off'
            ? 'sandbox off: bash commands run unsandboxed (set options.sandbox.mode = "bwrap" to sandbox them)'
            : enforced
              ? `bash commands run inside bubblewrap ${bwrap.version ?? ''}`.trimEnd() +
                ` (workspace read-write, the rest read-only, private /tmp, network ${options.network})`
              : `sandbox unavailable: bash calls fail until it can run (${bwrap.error})`,
      };
    },
    plan(request) {
      const options = deps.config().options.sandbox;
      if (options.mode === 'off') return undefined;
      const bwrap = probe();
      if (!bwrap.usable || !bwrap.path || !bwrap.proc) {
        throw new SvcError(
          'unavailable',
          `bash: options.sandbox.mode is "bwrap" but the sandbox cannot run: ${bwrap.error}. ` +
            'Install bubblewrap (apt-get install bubblewrap) or set options.sandbox.mode = "off"; the command was not run',
          { details: { sandbox: 'bwrap', bwrap_path: bwrap.path, error: bwrap.error } },
        );
      }
      const binds = layout(bwrap.proc);
      for (const bind of binds) {
        if (bind.path === shellState) mkdirSync(shellState, { recursive: true });
      }
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
        },
      };
    },
  };
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

function safeRealpath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}
