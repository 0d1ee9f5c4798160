/**
 * Plugins: install, update and remove bundles of MCP servers, agent kinds, operating packs,
 * recipes and custom commands. Content lives in `<data dir>/plugins/<name>/`; the `plugins` table
 * records what is installed and from where, `plugin_events` every change and who approved it.
 * Each change is staged first (fetched and validated into a hidden directory), then approved
 * through `ask` with the manifest summary (TOOLS-58), then swapped in; a denial leaves nothing
 * behind. The pieces are found by their subsystems: MCP servers and agent kinds through the config
 * layer (config-layer.ts), packs through the packs discovery (`packDirs`), recipes and commands
 * through `contributions`.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ConfigSource } from '../config/load';
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { Logger } from '../log';
import type { Db } from '../store/db';
import type { Clock } from '../util/ids';
import { pluginsDir } from './config-layer';
import { fetchSource, type ResolvedSource, resolveSource, type SourceType } from './fetch-source';
import { type LoadedManifest, loadManifest, MANIFEST_FILE, type PluginSummary } from './manifest';

export interface PluginApproval {
  title: string;
  details: Record<string, unknown>;
}

export interface ChangeOptions {
  /** Asks the operator; throws (forbidden) on deny. */
  ask: (request: PluginApproval) => Promise<void>;
  by: string;
  sessionId?: string;
  signal?: AbortSignal;
}

export interface InstalledPlugin {
  name: string;
  version: string;
  description: string;
  source: { type: SourceType; location: string; commit: string | null };
  dir: string;
  /** installed: files and record agree; missing: recorded but its directory is gone. */
  status: 'installed' | 'missing' | 'invalid';
  problem?: string;
  provides: PluginSummary;
  installed_at: number;
  updated_at: number;
}

export interface PluginChange {
  action: 'install' | 'update' | 'remove';
  name: string;
  version: string;
  previous_version?: string;
  source: string;
  provides: PluginSummary;
  /** Config reload after the change (MCP servers, agent kinds): warnings when it could not. */
  warnings: string[];
}

export type ContributionKind = 'packs' | 'recipes' | 'commands';

export interface PluginService {
  list(): InstalledPlugin[];
  install(input: { source: string; ref?: string }, options: ChangeOptions): Promise<PluginChange>;
  update(
    input: { name: string; source?: string; ref?: string },
    options: ChangeOptions,
  ): Promise<PluginChange>;
  remove(input: { name: string }, options: ChangeOptions): Promise<PluginChange>;
  /** Directories of operating packs that installed plugins provide (packs discovery). */
  packDirs(): string[];
  /** Installed plugins' recipe or command directories, by plugin (recipes and slash commands). */
  contributions(kind: ContributionKind): { plugin: string; dir: string }[];
  /** Recent install/update/remove records. */
  events(limit?: number): {
    name: string;
    action: string;
    version: string;
    source: string;
    by: string;
    session_id: string | null;
    at: number;
  }[];
}

export interface PluginDeps {
  db: () => Db;
  clock: Clock;
  dataDir: string;
  workspace: string;
  env: Readonly<Record<string, string | undefined>>;
  config: () => Config;
  provenance: () => Map<string, ConfigSource>;
  /** Re-read the config so plugin MCP servers and agent kinds take effect. */
  reload: () => void;
  log: Logger;
}

interface Row {
  name: string;
  version: string;
  description: string;
  source_type: SourceType;
  source: string;
  commit_sha: string | null;
  dir: string;
  summary: string;
  installed_at: number;
  updated_at: number;
}

export function createPluginService(deps: PluginDeps): PluginService {
  const log = deps.log.child({ component: 'plugins' });
  const root = pluginsDir(deps.dataDir);
  const rows = () => deps.db().prepare('SELECT * FROM plugins ORDER BY name').all() as Row[];
  const read = (name: string) =>
    deps.db().prepare('SELECT * FROM plugins WHERE name = ?').get(name) as Row | undefined;

  // Files, not the database: discovery (packs, config) must work where no database is opened.
  const installedManifests = (): { name: string; loaded: LoadedManifest }[] => {
    let names: string[];
    try {
      names = readdirSync(root)
        .filter((name) => !name.startsWith('.'))
        .sort();
    } catch {
      return [];
    }
    return names.flatMap((name) => {
      try {
        return [{ name, loaded: loadManifest(join(root, name)) }];
      } catch {
        return [];
      }
    });
  };

  /** Stage a source into a hidden directory and validate it; the caller removes it on failure. */
  const stage = async (source: ResolvedSource, ref: string | undefined, signal?: AbortSignal) => {
    mkdirSync(root, { recursive: true });
    const staging = join(root, `.staging-${randomBytes(6).toString('hex')}`);
    try {
      const { commit } = await fetchSource(source, staging, { ref, signal, env: deps.env });
      return { staging, commit, loaded: loadManifest(staging) };
    } catch (error) {
      rmSync(staging, { recursive: true, force: true });
      throw error;
    }
  };

  /** MCP ids and agent kinds a plugin declares must not collide with another source's. */
  const conflicts = (name: string, summary: PluginSummary): string[] => {
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
  };

  const record = (
    name: string,
    action: PluginChange['action'],
    version: string,
    source: string,
    options: ChangeOptions,
  ) => {
    deps
      .db()
      .prepare(
        'INSERT INTO plugin_events (name, action, version, source, by, session_id, at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      )
      .run(name, action, version, source, options.by, options.sessionId ?? null, deps.clock.now());
  };

  const reload = (): string[] => {
    try {
      deps.reload();
      return [];
    } catch (error) {
      const reason = SvcError.is(error) ? error.message : String(error);
      log.warn('config reload after a plugin change failed', { error: reason });
      return [
        `config reload failed (${reason}); restart svc to pick the plugin's MCP servers and agent kinds up`,
      ];
    }
  };

  const upsert = (row: Omit<Row, 'installed_at' | 'updated_at'>, installedAt: number) => {
    const now = deps.clock.now();
    deps
      .db()
      .prepare(
        `INSERT INTO plugins (name, version, description, source_type, source, commit_sha, dir, summary, installed_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(name) DO UPDATE SET version = excluded.version, description = excluded.description,
           source_type = excluded.source_type, source = excluded.source, commit_sha = excluded.commit_sha,
           dir = excluded.dir, summary = excluded.summary, updated_at = excluded.updated_at`,
      )
      .run(
        row.name,
        row.version,
        row.description,
        row.source_type,
        row.source,
        row.commit_sha,
        row.dir,
        row.summary,
        installedAt,
        now,
      );
  };

  return {
    list() {
      return rows().map((row) => {
        const base = {
          name: row.name,
          version: row.version,
          description: row.description,
          source: { type: row.source_type, location: row.source, commit: row.commit_sha },
          dir: row.dir,
          provides: JSON.parse(row.summary) as PluginSummary,
          installed_at: row.installed_at,
          updated_at: row.updated_at,
        };
        if (!existsSync(join(row.dir, MANIFEST_FILE))) {
          return {
            ...base,
            status: 'missing' as const,
            problem: `${row.dir} is gone; plugin_remove forgets it, plugin_update reinstalls it`,
          };
        }
        try {
          return { ...base, status: 'installed' as const, provides: loadManifest(row.dir).summary };
        } catch (error) {
          return {
            ...base,
            status: 'invalid' as const,
            problem: SvcError.is(error) ? error.message : String(error),
          };
        }
      });
    },

    async install(input, options) {
      const source = resolveSource(input.source, deps.workspace);
      const staged = await stage(source, input.ref, options.signal);
      try {
        const { manifest, summary } = staged.loaded;
        if (read(manifest.name)) {
          throw new SvcError(
            'conflict',
            `plugin "${manifest.name}" is already installed; use plugin_update to change it or plugin_remove first`,
          );
        }
        const clashes = conflicts(manifest.name, summary);
        if (clashes.length)
          throw new SvcError('conflict', `plugin "${manifest.name}": ${clashes.join('; ')}`, {
            details: { conflicts: clashes },
          });
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
          },
        });
        const dir = join(root, manifest.name);
        rmSync(dir, { recursive: true, force: true }); // leftovers of a directory nobody recorded
        renameSync(staged.staging, dir);
        upsert(
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
          deps.clock.now(),
        );
        record(manifest.name, 'install', manifest.version, source.location, options);
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
          warnings: reload(),
        };
      } finally {
        rmSync(staged.staging, { recursive: true, force: true });
      }
    },

    async update(input, options) {
      const row = read(input.name);
      if (!row) throw new SvcError('not_found', `name: no installed plugin "${input.name}"; see plugin_list`);
      const source: ResolvedSource = input.source
        ? resolveSource(input.source, deps.workspace)
        : { type: row.source_type, location: row.source };
      const staged = await stage(source, input.ref, options.signal);
      try {
        const { manifest, summary } = staged.loaded;
        if (manifest.name !== row.name) {
          throw new SvcError(
            'invalid_input',
            `source: its manifest names plugin "${manifest.name}", not "${row.name}"; install it as a new plugin instead`,
          );
        }
        const clashes = conflicts(manifest.name, summary);
        if (clashes.length)
          throw new SvcError('conflict', `plugin "${manifest.name}": ${clashes.join('; ')}`, {
            details: { conflicts: clashes },
          });
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
          },
        });
        const old = join(root, `.old-${randomBytes(6).toString('hex')}`);
        if (existsSync(row.dir)) renameSync(row.dir, old);
        renameSync(staged.staging, row.dir);
        rmSync(old, { recursive: true, force: true });
        upsert(
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
        );
        record(row.name, 'update', manifest.version, source.location, options);
        log.info('plugin updated', { name: row.name, from: row.version, to: manifest.version });
        return {
          action: 'update',
          name: row.name,
          version: manifest.version,
          previous_version: row.version,
          source: source.location,
          provides: summary,
          warnings: reload(),
        };
      } finally {
        rmSync(staged.staging, { recursive: true, force: true });
      }
    },

    async remove(input, options) {
      const row = read(input.name);
      if (!row) throw new SvcError('not_found', `name: no installed plugin "${input.name}"; see plugin_list`);
      const provides = JSON.parse(row.summary) as PluginSummary;
      await options.ask({
        title: `remove plugin "${row.name}"${row.version ? ` ${row.version}` : ''}`,
        details: { name: row.name, version: row.version, dir: row.dir, provides },
      });
      rmSync(row.dir, { recursive: true, force: true });
      deps.db().prepare('DELETE FROM plugins WHERE name = ?').run(row.name);
      record(row.name, 'remove', row.version, row.source, options);
      log.info('plugin removed', { name: row.name });
      return {
        action: 'remove',
        name: row.name,
        version: row.version,
        source: row.source,
        provides,
        warnings: reload(),
      };
    },

    packDirs: () =>
      installedManifests().flatMap(({ loaded }) => (loaded.dirs.packs ? [loaded.dirs.packs] : [])),

    contributions: (kind) =>
      installedManifests().flatMap(({ name, loaded }) =>
        loaded.dirs[kind] ? [{ plugin: name, dir: loaded.dirs[kind] as string }] : [],
      ),

    events: (limit = 50) =>
      deps
        .db()
        .prepare(
          'SELECT name, action, version, source, by, session_id, at FROM plugin_events ORDER BY id DESC LIMIT ?',
        )
        .all(limit) as ReturnType<PluginService['events']>,
  };
}
