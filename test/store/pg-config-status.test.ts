/**
 * `svc config show-config-status` (the `config_status` tool) on a PostgreSQL store, in a command
 * that has just started: its database line reads the schema version (it printed `schema ?` before
 * the store monitor's first probe).
 */
import { describe, expect, it } from 'vitest';
import { binarySchemaVersion } from '../../src/store/postgres/migrate';
import { invokeTool } from '../../src/tools/core/call-tool';
import { makeTestApp } from '../helpers/make-test-app';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

describe.skipIf(!pg.available)('config status on PostgreSQL', () => {
  it('CLUSTER-24: config_status right after start names the store and its schema version, not "?"', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const app = await makeTestApp({ postgres: sql });
    try {
      const status = (await invokeTool(app, 'config_status', {}, { surface: 'cli' })) as {
        database: { kind?: string; path: string; schema_version?: number; error?: string };
      };
      expect(status.database).toMatchObject({ kind: 'postgres', schema_version: binarySchemaVersion() });
      expect(status.database.error).toBeUndefined();
      expect(status.database.path).toMatch(/^postgres(ql)?:\/\//);
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
