/**
 * Installing and updating a plugin: stage the source into a hidden directory and validate it,
 * refuse clashes with another source's MCP servers or agent kinds, ask, then swap it in, record it
 * and reload the config. A denial or a failure leaves nothing behind. A git source is asked for
 * before it is cloned too (a no-op for the operator's own call, as every ask here); the approval
 * of the change shows what the plugin runs (./approval-details.ts).
 * @module
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { SvcError } from '../errors';
import type { Logger } from '../log';
import { makeDirs } from '../util/make-dirs';
import { runDetails, updateDetails } from './approval-details';
import { fetchSource, type ResolvedSource, resolveSource } from './fetch-source';
import { type LoadedManifest, loadManifest, type PluginManifest, type PluginSummary } from './manifest';
import type { PluginRepository } from './plugin-repository';
import type { ChangeOptions, PluginChange, PluginDeps } from './plugin-types';

/** What a change works with: the deps, the table, the plugins directory, the log. */
export interface ChangeContext {
  deps: PluginDeps;
  rows: PluginRepository;
  root: string;
  log: Logger;
  /** Record a change in plugin_events. */
  record(
    name: string,
    action: PluginChange['action'],
    version: string,
    source: string,
    options: ChangeOptions,
  ): Promise<void>;
  /** Reload the config; warnings when it failed. */
  reload(): string[];
  /** The sweep of stale staging folders started when the service was made (./plugin-changes.ts). */
  swept: Promise<void>;
}

interface Staged {
  staging: string;
  commit: string | null;
  loaded: LoadedManifest;
}

export async function installPlugin(
  context: ChangeContext,
  input: { source: string; ref?: string },
  options: ChangeOptions,
): Promise<PluginChange> {
  const { deps, rows, root, log } = context;
  const source = resolveSource(input.source, deps.workspace, deps.dataDir);
  const staged = await stage(context, source, input.ref, options);
  try {
    const { manifest, summary } = staged.loaded;
    if (await rows.get(manifest.name)) {
      throw new SvcError(
        'conflict',
        `plugin "${manifest.name}" is already installed; use plugin_update to change it or plugin_remove first`,
      );
    }
    refuseConflicts(deps, manifest.name, summary);
    await options.ask({
      title: `install plugin "${manifest.name}"${manifest.version ? ` ${manifest.version}` : ''} from ${source.location}`,
      details: {
        name: manifest.name,
        version: manifest.version,
        description: manifest.description,
        source: source.location,
        source_type: source.type,
        commit: staged.commit,
        provides: summary,
        ...runDetails(manifest, join(root, manifest.name)),
      },
    });
    const dir = join(root, manifest.name);
    rmSync(dir, { recursive: true, force: true }); // leftovers of a directory nobody recorded
    renameSync(staged.staging, dir);
    const now = deps.clock.now();
    await rows.upsert(
      {
        name: manifest.name,
        version: manifest.version,
        description: manifest.description,
        source_type: source.type,
        source: source.location,
        commit_sha: staged.commit,
        dir,
        summary: JSON.stringify(summary),
      },
      now,
      deps.clock.now(),
    );
    await context.record(manifest.name, 'install', manifest.version, source.location, options);
    log.info('plugin installed', {
      name: manifest.name,
      version: manifest.version,
      source_type: source.type,
    });
    return {
      action: 'install',
      name: manifest.name,
      version: manifest.version,
      source: source.location,
      provides: summary,
      warnings: context.reload(),
    };
  } finally {
    await rm(staged.staging, { recursive: true, force: true });
  }
}

export async function updatePlugin(
  context: ChangeContext,
  input: { name: string; source?: string; ref?: string },
  options: ChangeOptions,
): Promise<PluginChange> {
  const { deps, rows, root, log } = context;
  const row = await rows.get(input.name);
  if (!row) throw new SvcError('not_found', `name: no installed plugin "${input.name}"; see plugin_list`);
  const source: ResolvedSource = input.source
    ? resolveSource(input.source, deps.workspace, deps.dataDir)
    : row.source_type === 'path'
      ? resolveSource(row.source, deps.workspace, deps.dataDir)
      : { type: row.source_type, location: row.source };
  const staged = await stage(context, source, input.ref, options);
  try {
    const { manifest, summary } = staged.loaded;
    if (manifest.name !== row.name) {
      throw new SvcError(
        'invalid_input',
        `source: its manifest names plugin "${manifest.name}", not "${row.name}"; install it as a new plugin instead`,
      );
    }
    refuseConflicts(deps, manifest.name, summary);
    await options.ask({
      title: `update plugin "${row.name}" ${row.version || '(no version)'} → ${manifest.version || '(no version)'} from ${source.location}`,
      details: {
        name: row.name,
        from_version: row.version,
        version: manifest.version,
        source: source.location,
        commit: staged.commit,
        previous_commit: row.commit_sha,
        provides: summary,
        ...updateDetails(installedManifest(row.dir), manifest, row.dir),
      },
    });
    const old = join(root, `.old-${randomBytes(6).toString('hex')}`);
    if (existsSync(row.dir)) renameSync(row.dir, old);
    renameSync(staged.staging, row.dir);
    await rm(old, { recursive: true, force: true });
    await rows.upsert(
      {
        name: row.name,
        version: manifest.version,
        description: manifest.description,
        source_type: source.type,
        source: source.location,
        commit_sha: staged.commit,
        dir: row.dir,
        summary: JSON.stringify(summary),
      },
      row.installed_at,
      deps.clock.now(),
    );
    await context.record(row.name, 'update', manifest.version, source.location, options);
    log.info('plugin updated', { name: row.name, from: row.version, to: manifest.version });
    return {
      action: 'update',
      name: row.name,
      version: manifest.version,
      previous_version: row.version,
      source: source.location,
      provides: summary,
      warnings: context.reload(),
    };
  } finally {
    await rm(staged.staging, { recursive: true, force: true });
  }
}

/** Stage a source into a hidden directory and validate it; the caller removes it on failure. */
async function stage(
  context: ChangeContext,
  source: ResolvedSource,
  ref: string | undefined,
  options: ChangeOptions,
): Promise<Staged> {
  if (source.type === 'git') {
    // Cloning downloads and writes whatever the repository holds: asked before, not only after.
    await options.ask({
      title: `fetch plugin source ${source.location}${ref ? ` (${ref})` : ''} with git clone to check it (nothing is installed yet)`,
      scope: `clone ${source.location}`,
      details: { source: source.location, source_type: 'git', ref: ref ?? null, step: 'clone' },
    });
  }
  await context.swept;
  makeDirs(context.root);
  const staging = join(context.root, `${STAGING}${randomBytes(6).toString('hex')}`);
  const signal = options.signal;
  try {
    const { commit } = await fetchSource(source, staging, { ref, signal, env: context.deps.env });
    return { staging, commit, loaded: loadManifest(staging) };
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

function refuseConflicts(deps: Pick<PluginDeps, 'provenance'>, name: string, summary: PluginSummary): void {
  const clashes = conflicts(deps, name, summary);
  if (clashes.length)
    throw new SvcError('conflict', `plugin "${name}": ${clashes.join('; ')}`, {
      details: { conflicts: clashes },
    });
}

/** MCP ids and agent kinds a plugin declares must not collide with another source's. */
function conflicts(deps: Pick<PluginDeps, 'provenance'>, name: string, summary: PluginSummary): string[] {
  const mine = `plugin ${name}`;
  const owners = (prefix: string) => {
    const found = new Set<string>();
    for (const [key, source] of deps.provenance()) {
      if ((key === prefix || key.startsWith(`${prefix}.`)) && source.label !== mine)
        found.add(source.path ?? source.label);
    }
    return [...found];
  };
  return [
    ...summary.mcp_servers.flatMap((id) =>
      owners(`mcp.${id}`).map((owner) => `mcp server "${id}" is already defined by ${owner}`),
    ),
    ...summary.agents.flatMap((id) => {
      const builtin = ['build', 'plan', 'explore', 'general'].includes(id);
      return builtin
        ? [`agent kind "${id}" is built in`]
        : owners(`agents.${id}`).map((owner) => `agent kind "${id}" is already defined by ${owner}`);
    }),
  ];
}

const STAGING = '.staging-';
const OLD = '.old-';
/** A staging or swapped-out folder this old was left by a process that died mid-change. */
export const STALE_MS = 60 * 60 * 1000;

/**
 * Remove the staging (`.staging-*`) and swapped-out (`.old-*`) folders older than `STALE_MS` in
 * the plugins directory: leftovers of a change whose process died. In the background (a large one
 * takes a while); a change waits for it first.
 */
export function sweepStale(root: string, now: number, log: Logger): Promise<void> {
  let names: string[];
  try {
    names = readdirSync(root).filter((name) => name.startsWith(STAGING) || name.startsWith(OLD));
  } catch {
    return Promise.resolve(); // no plugins directory yet
  }
  const stale = names.filter((name) => {
    try {
      return now - statSync(join(root, name)).mtimeMs > STALE_MS;
    } catch {
      return false;
    }
  });
  return Promise.all(
    stale.map((name) =>
      rm(join(root, name), { recursive: true, force: true }).then(
        () => log.info('stale plugin staging folder removed', { name }),
        (error: unknown) =>
          log.warn('stale plugin staging folder not removed', { name, error: String(error) }),
      ),
    ),
  ).then(() => {});
}

/** The installed plugin's manifest, to compare an update with (undefined when it does not load). */
function installedManifest(dir: string): PluginManifest | undefined {
  try {
    return loadManifest(dir).manifest;
  } catch {
    return undefined;
  }
}
