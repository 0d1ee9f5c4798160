/**
 * Workspace trust: whether a workspace's own config files may set the keys ./trust-keys.ts calls
 * risky. Trust is remembered per workspace (its real path) in the user's config directory, never
 * in the workspace: `<XDG_CONFIG_HOME or ~/.config>/svc/trusted-workspaces.json`.
 *
 * `[security] workspace_trust` (read from the user's files, env and flags only): "ask" (default;
 * the TUI asks, headless surfaces honour the files as before), "require" (headless surfaces drop
 * the risky keys of an untrusted workspace, with a warning) or "off" (no gate).
 * `SVC_TRUST_WORKSPACE=1` (or `--trust-workspace`) trusts the workspace for one invocation.
 * @module
 */
import { readFileSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SvcError } from '../errors';
import { atomicWrite } from '../workspace/file-io';
import { getPath, isTable, stripPaths } from './config-tree';
import type { RiskyKey } from './trust-keys';

export type WorkspaceTrustMode = 'ask' | 'require' | 'off';

/** What the invoking surface says about trust (AppOptions.workspaceTrust). */
export interface WorkspaceTrustInput {
  /** The TUI: it asks before the app exists and passes the answer as `decision`. */
  interactive?: boolean;
  /** trust: for this invocation (the TUI also remembers it); without: drop the risky keys. */
  decision?: 'trust' | 'without';
}

export interface WorkspaceTrustReport {
  mode: WorkspaceTrustMode;
  workspace: string;
  trusted: boolean;
  /** The risky keys the workspace's files set. */
  risky: RiskyKey[];
  /** Those dropped for this process. */
  dropped: RiskyKey[];
  /** An interactive surface should ask before using the config (untrusted, risky keys, not off). */
  ask: boolean;
}

export interface TrustedWorkspace {
  path: string;
  trusted_at: string;
}

const STORE_FILE = 'trusted-workspaces.json';

/** The store's path: next to the global config (config/load.ts `globalConfigDir`). */
export function trustStorePath(configDir: string): string {
  return join(configDir, STORE_FILE);
}

/** A workspace as the store names it: its absolute real path (a symlink names its target). */
export function workspaceKey(path: string): string {
  const abs = resolve(path);
  try {
    return realpathSync(abs);
  } catch {
    return abs;
  }
}

function readStore(file: string, strict: boolean): Record<string, { trusted_at: string }> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    if (!strict) return {};
    throw new SvcError(
      'config_error',
      `${file}: cannot read the trusted workspaces: ${(error as Error).message}`,
    );
  }
  try {
    const parsed = JSON.parse(text) as { workspaces?: unknown };
    if (isTable(parsed) && isTable(parsed.workspaces))
      return parsed.workspaces as Record<string, { trusted_at: string }>;
  } catch {
    // Falls through to the error below.
  }
  if (!strict) return {};
  throw new SvcError(
    'config_error',
    `${file}: not a trusted-workspaces file (expected {"workspaces": {...}}); fix it or remove it and trust again`,
  );
}

function writeStore(file: string, workspaces: Record<string, { trusted_at: string }>) {
  atomicWrite(file, `${JSON.stringify({ version: 1, workspaces }, null, 2)}\n`);
}

/** Whether the workspace is remembered as trusted (an unreadable store trusts nothing). */
export function isTrustedWorkspace(configDir: string, workspace: string): boolean {
  return Object.hasOwn(readStore(trustStorePath(configDir), false), workspaceKey(workspace));
}

export function listTrustedWorkspaces(configDir: string): TrustedWorkspace[] {
  return Object.entries(readStore(trustStorePath(configDir), true))
    .map(([path, entry]) => ({ path, trusted_at: String(entry?.trusted_at ?? '') }))
    .sort((a, b) => a.path.localeCompare(b.path));
}

export function trustWorkspace(
  configDir: string,
  workspace: string,
  now = new Date(),
): { path: string; already: boolean } {
  const file = trustStorePath(configDir);
  const workspaces = readStore(file, true);
  const path = workspaceKey(workspace);
  const already = Object.hasOwn(workspaces, path);
  if (!already) writeStore(file, { ...workspaces, [path]: { trusted_at: now.toISOString() } });
  return { path, already };
}

export function revokeWorkspace(configDir: string, workspace: string): { path: string; removed: boolean } {
  const file = trustStorePath(configDir);
  const workspaces = readStore(file, true);
  const path = workspaceKey(workspace);
  if (!Object.hasOwn(workspaces, path)) return { path, removed: false };
  const { [path]: _removed, ...rest } = workspaces;
  writeStore(file, rest);
  return { path, removed: true };
}

const MODES: readonly WorkspaceTrustMode[] = ['ask', 'require', 'off'];

/** The mode the non-workspace trees set, the last one winning (they come in precedence order). */
export function trustMode(trees: readonly Record<string, unknown>[]): WorkspaceTrustMode {
  let mode: WorkspaceTrustMode = 'ask';
  for (const tree of trees) {
    const value = getPath(tree, ['security', 'workspace_trust']);
    if (MODES.includes(value as WorkspaceTrustMode)) mode = value as WorkspaceTrustMode;
  }
  return mode;
}

/**
 * Decides which risky keys to drop. Untrusted with risky keys: "off" keeps them; a `without`
 * answer drops them; an interactive surface with no answer yet keeps them and says `ask`; a
 * headless one drops them under "require" and keeps them under "ask".
 */
export function decideWorkspaceTrust(args: {
  mode: WorkspaceTrustMode;
  workspace: string;
  risky: RiskyKey[];
  input: WorkspaceTrustInput | undefined;
  env: Record<string, string | undefined>;
  configDir: string;
}): WorkspaceTrustReport {
  const { mode, risky, input, env } = args;
  const workspace = workspaceKey(args.workspace);
  const report = { mode, workspace, risky, dropped: [] as RiskyKey[], ask: false, trusted: false };
  if (risky.length === 0 || mode === 'off') return report;
  report.trusted =
    env.SVC_TRUST_WORKSPACE === '1' ||
    input?.decision === 'trust' ||
    isTrustedWorkspace(args.configDir, workspace);
  if (report.trusted) return report;
  if (input?.decision === 'without') report.dropped = risky;
  else if (input?.interactive) report.ask = true;
  else if (mode === 'require') report.dropped = risky;
  return report;
}

/** Whether the workspace may run programs of its own, and why (a phrase for a readout). */
export interface ProgramTrust {
  trusted: boolean;
  why: string;
}

/**
 * Whether svc may run the workspace's own programs that no config key names (the language servers
 * in its node_modules/.bin, its `typescript` package): when it is trusted (remembered,
 * SVC_TRUST_WORKSPACE=1 or --trust-workspace, the TUI's answer) or the gate is "off". Unlike its
 * config's keys, a headless run under "ask" does not get them: svc runs its own programs instead,
 * as an editor runs its bundled TypeScript until the workspace's is allowed.
 */
export function workspaceProgramsTrust(args: {
  mode: WorkspaceTrustMode;
  workspace: string;
  input: WorkspaceTrustInput | undefined;
  env: Record<string, string | undefined>;
  configDir: string;
}): ProgramTrust {
  if (args.mode === 'off') return { trusted: true, why: 'security.workspace_trust = "off"' };
  if (args.env.SVC_TRUST_WORKSPACE === '1') return { trusted: true, why: 'SVC_TRUST_WORKSPACE=1' };
  if (args.input?.decision === 'trust') return { trusted: true, why: 'workspace trusted' };
  const workspace = workspaceKey(args.workspace);
  if (args.input?.decision !== 'without' && isTrustedWorkspace(args.configDir, workspace))
    return { trusted: true, why: 'workspace trusted (svc trust)' };
  return { trusted: false, why: `workspace not trusted; \`svc trust ${workspace}\` to use them` };
}

/** The config warning for a dropped key. */
export function droppedWarning(key: RiskyKey, report: WorkspaceTrustReport): string {
  const why =
    report.mode === 'require' ? 'security.workspace_trust = "require"' : 'you chose to continue without it';
  return `workspace not trusted (${why}): ignored ${key.key} (${key.detail})${key.file ? ` from ${key.file}` : ''}; run \`svc trust ${report.workspace}\` to use it`;
}

/** One source's tree waiting to be merged (config/load.ts); `risky` for the workspace's files. */
export interface PendingLayer<Source> {
  tree: Record<string, unknown>;
  source: Source & { path?: string };
  workspace: boolean;
  risky: RiskyKey[];
}

/**
 * Applies the gate to the layers before they are merged: a workspace file's `[security]` is
 * ignored (the user's files, env and flags choose the mode), and the risky keys to drop are
 * removed from the workspace files' trees, each with a warning.
 */
export function gateWorkspaceLayers<Source>(
  layers: PendingLayer<Source>[],
  context: {
    workspace: string;
    env: Record<string, string | undefined>;
    input: WorkspaceTrustInput | undefined;
    configDir: string;
    warnings: string[];
  },
): WorkspaceTrustReport {
  for (const layer of layers) {
    if (!layer.workspace || layer.tree.security === undefined) continue;
    delete layer.tree.security;
    context.warnings.push(
      `[security] in ${layer.source.path ?? 'the workspace config'} ignored: only the user's config (${join(context.configDir, 'svc.toml')}), SVC_CONFIG, --config or -c set it`,
    );
  }
  const mode = trustMode(layers.filter((l) => !l.workspace).map((l) => l.tree));
  const risky = layers.flatMap((l) => l.risky.map((k) => ({ ...k, file: l.source.path })));
  const report = decideWorkspaceTrust({ ...context, mode, risky });
  if (report.dropped.length === 0) return report;
  for (const layer of layers) {
    const drop = report.dropped.filter((k) => k.file === layer.source.path && layer.workspace);
    if (drop.length)
      layer.tree = stripPaths(
        layer.tree,
        drop.map((k) => k.drop),
      );
  }
  context.warnings.push(...report.dropped.map((k) => droppedWarning(k, report)));
  return report;
}
