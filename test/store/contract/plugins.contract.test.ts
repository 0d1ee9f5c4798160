/**
 * Runs the plugin repository's contract (./plugins.contract.ts) on both backends: the SQLite
 * repository and its PostgreSQL twin on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createPostgresPluginRepository } from '../../../src/plugins/pg-plugin-repository';
import { createPluginRepository } from '../../../src/plugins/plugin-repository';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { pluginRepositoryContract } from './plugins.contract';

describe('plugin repository contract on SQLite', () => {
  pluginRepositoryContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      rows: createPluginRepository(() => db),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('plugin repository contract on PostgreSQL', () => {
  pluginRepositoryContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return { rows: createPostgresPluginRepository({ sql }), close: () => sql.close() };
  });
});
