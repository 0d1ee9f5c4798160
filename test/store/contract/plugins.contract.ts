/**
 * The plugin repository's contract (issue 18): what every backend's `plugins` and `plugin_events`
 * answer, run on SQLite and on PostgreSQL by ./plugins.contract.test.ts. Pins: plugins listed by
 * name, a row round-trips with its null commit, an upsert updates and keeps installed_at, delete
 * forgets, a missing plugin is undefined; events newest first, limited, session_id null kept.
 */
import { expect, it } from 'vitest';
import type { PluginRepository, PluginRow } from '../../../src/plugins/plugin-repository';
import { withOpened } from './fixture';

export type OpenPluginRepository = () => Promise<{ rows: PluginRepository; close: () => Promise<void> }>;

export function pluginRepositoryContract(open: OpenPluginRepository): void {
  const withRows = withOpened(open, (f) => f.rows);

  const plugin = (name: string, over: Partial<PluginRow> = {}) => ({
    name,
    version: '1.0.0',
    description: `the ${name} plugin`,
    source_type: 'git' as const,
    source: `https://example.test/${name}.git`,
    commit_sha: null,
    dir: `/data/plugins/${name}`,
    summary: '{"packs":1}',
    ...over,
  });

  it(
    'STORE-PG-plugins: rows by name, an upsert keeps installed_at, delete forgets, a missing one is undefined',
    withRows(async (rows) => {
      expect(await rows.list()).toEqual([]);
      expect(await rows.get('zeta')).toBeUndefined();
      await rows.upsert(plugin('zeta'), 100, 100);
      await rows.upsert(plugin('Alpha', { source_type: 'path', commit_sha: 'abc123' }), 110, 110);
      await rows.upsert(plugin('beta'), 120, 120);
      expect((await rows.list()).map((r) => r.name)).toEqual(['Alpha', 'beta', 'zeta']);
      expect(await rows.get('zeta')).toEqual({ ...plugin('zeta'), installed_at: 100, updated_at: 100 });
      await rows.upsert(plugin('zeta', { version: '2.0.0', commit_sha: 'def456', summary: '{}' }), 999, 200);
      expect(await rows.get('zeta')).toEqual({
        ...plugin('zeta', { version: '2.0.0', commit_sha: 'def456', summary: '{}' }),
        installed_at: 100,
        updated_at: 200,
      });
      await rows.delete('beta');
      await rows.delete('never');
      expect((await rows.list()).map((r) => r.name)).toEqual(['Alpha', 'zeta']);
      expect(await rows.get('beta')).toBeUndefined();
    }),
  );

  it(
    'STORE-PG-plugins: events newest first, limited, nulls kept',
    withRows(async (rows) => {
      expect(await rows.events(10)).toEqual([]);
      await rows.record({
        name: 'a',
        action: 'install',
        version: '1',
        source: 's',
        by: 'alice',
        session_id: 's1',
        at: 1,
      });
      await rows.record({
        name: 'a',
        action: 'update',
        version: '2',
        source: 's',
        by: 'bob',
        session_id: null,
        at: 1,
      });
      await rows.record({
        name: 'a',
        action: 'remove',
        version: '2',
        source: 's',
        by: 'cli',
        session_id: null,
        at: 3,
      });
      expect(await rows.events(2)).toEqual([
        { name: 'a', action: 'remove', version: '2', source: 's', by: 'cli', session_id: null, at: 3 },
        { name: 'a', action: 'update', version: '2', source: 's', by: 'bob', session_id: null, at: 1 },
      ]);
      expect((await rows.events(10)).map((e) => e.action)).toEqual(['remove', 'update', 'install']);
    }),
  );
}
