/**
 * The shapes the plugin service's parts share: a change's approval and options, an installed
 * plugin, a change's outcome, and what the service needs (`PluginDeps`).
 * @module
 */
import type { ConfigSource } from '../config/load';
import type { Config } from '../config/schema';
import type { Logger } from '../log';
import type { Clock } from '../util/ids';
import type { SourceType } from './fetch-source';
import type { PluginSummary } from './manifest';
import type { PluginRepository } from './plugin-repository';

export interface PluginApproval {
  title: string;
  /** What a session grant covers, after the tool name (default: the plugin's name). */
  scope?: string;
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

export interface PluginDeps {
  /** The plugins' tables (SQLite: createPluginRepository, PostgreSQL: its pg- twin). */
  rows: PluginRepository;
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
