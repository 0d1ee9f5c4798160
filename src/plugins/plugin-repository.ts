/**
 * The plugins' tables: `plugins` (what is installed and from where) and `plugin_events` (every
 * install, update and removal, and who approved it). The only place that knows how they are stored.
 * @module
 */
import type { Db } from '../store/db';
import type { SourceType } from './fetch-source';

export interface PluginRow {
  name: string;
  version: string;
  description: string;
  source_type: SourceType;
  source: string;
  commit_sha: string | null;
  dir: string;
  /** The manifest summary as JSON. */
  summary: string;
  installed_at: number;
  updated_at: number;
}

export interface PluginEvent {
  name: string;
  action: string;
  version: string;
  source: string;
  by: string;
  session_id: string | null;
  at: number;
}

/** The plugin upsert both backends run (`?` here, `$n` on PostgreSQL). */
export const PLUGIN_UPSERT = (p: (n: number) => string) =>
  `INSERT INTO plugins (name, version, description, source_type, source, commit_sha, dir, summary, installed_at, updated_at)
   VALUES (${Array.from({ length: 10 }, (_, i) => p(i + 1)).join(', ')})
   ON CONFLICT (name) DO UPDATE SET version = excluded.version, description = excluded.description,
     source_type = excluded.source_type, source = excluded.source, commit_sha = excluded.commit_sha,
     dir = excluded.dir, summary = excluded.summary, updated_at = excluded.updated_at`;

export const pluginUpsertValues = (
  row: Omit<PluginRow, 'installed_at' | 'updated_at'>,
  installedAt: number,
  now: number,
): unknown[] => [
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
];

export interface PluginRepository {
  list(): Promise<PluginRow[]>;
  get(name: string): Promise<PluginRow | undefined>;
  /** Insert, or update an installed plugin's row (keeps its installed_at). */
  upsert(
    row: Omit<PluginRow, 'installed_at' | 'updated_at'>,
    installedAt: number,
    now: number,
  ): Promise<void>;
  delete(name: string): Promise<void>;
  record(event: PluginEvent): Promise<void>;
  /** Newest first. */
  events(limit: number): Promise<PluginEvent[]>;
}

export function createPluginRepository(db: () => Db): PluginRepository {
  return {
    list: async () => db().prepare('SELECT * FROM plugins ORDER BY name').all() as PluginRow[],
    get: async (name) =>
      db().prepare('SELECT * FROM plugins WHERE name = ?').get(name) as PluginRow | undefined,
    async upsert(row, installedAt, now) {
      db()
        .prepare(PLUGIN_UPSERT(() => '?'))
        .run(...pluginUpsertValues(row, installedAt, now));
    },
    async delete(name) {
      db().prepare('DELETE FROM plugins WHERE name = ?').run(name);
    },
    async record(event) {
      db()
        .prepare(
          'INSERT INTO plugin_events (name, action, version, source, by, session_id, at) VALUES (?, ?, ?, ?, ?, ?, ?)',
        )
        .run(event.name, event.action, event.version, event.source, event.by, event.session_id, event.at);
    },
    events: async (limit) =>
      db()
        .prepare(
          'SELECT name, action, version, source, by, session_id, at FROM plugin_events ORDER BY id DESC LIMIT ?',
        )
        .all(limit) as PluginEvent[],
  };
}
