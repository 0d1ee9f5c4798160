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
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../errors';
import { pluginsDir } from './config-layer';
import { type LoadedManifest, loadManifest, MANIFEST_FILE, type PluginSummary } from './manifest';
import { type ChangeContext, installPlugin, sweepStale, updatePlugin } from './plugin-changes';
import type { PluginEvent, PluginRow } from './plugin-repository';
import type {
  ChangeOptions,
  ContributionKind,
  InstalledPlugin,
  PluginChange,
  PluginDeps,
} from './plugin-types';

export type {
  ChangeOptions,
  ContributionKind,
  InstalledPlugin,
  PluginApproval,
  PluginChange,
  PluginDeps,
} from './plugin-types';

export interface PluginService {
  list(): Promise<InstalledPlugin[]>;
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
  events(limit?: number): Promise<PluginEvent[]>;
}

export function createPluginService(deps: PluginDeps): PluginService {
  const log = deps.log.child({ component: 'plugins' });
  const root = pluginsDir(deps.dataDir);
  const { rows } = deps;

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

  const record = async (
    name: string,
    action: PluginChange['action'],
    version: string,
    source: string,
    options: ChangeOptions,
  ) =>
    await rows.record({
      name,
      action,
      version,
      source,
      by: options.by,
      session_id: options.sessionId ?? null,
      at: deps.clock.now(),
    });

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

  // Staging folders a dead process left behind (a copy or clone stopped halfway) go now.
  const swept = sweepStale(root, Date.now(), log); // file times are wall-clock times
  const context: ChangeContext = { deps, rows, root, log, record, reload, swept };

  return {
    list: async () => (await rows.list()).map(viewInstalled),

    install: (input, options) => installPlugin(context, input, options),

    update: (input, options) => updatePlugin(context, input, options),

    async remove(input, options) {
      const row = await rows.get(input.name);
      if (!row) throw new SvcError('not_found', `name: no installed plugin "${input.name}"; see plugin_list`);
      const provides = JSON.parse(row.summary) as PluginSummary;
      await options.ask({
        title: `remove plugin "${row.name}"${row.version ? ` ${row.version}` : ''}`,
        details: { name: row.name, version: row.version, dir: row.dir, provides },
      });
      rmSync(row.dir, { recursive: true, force: true });
      await rows.delete(row.name);
      await record(row.name, 'remove', row.version, row.source, options);
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

    events: async (limit = 50) => await rows.events(limit),
  };
}

/** An installed plugin as recorded, checked against its files. */
function viewInstalled(row: PluginRow): InstalledPlugin {
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
}
