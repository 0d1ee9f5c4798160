/**
 * Runs the RunLedger contract (./run-ledger.contract.ts) on both backends: ledgers over one SQLite
 * file, and PostgreSQL ledgers alternating between two clients (two nodes) on a throwaway cluster.
 */
import { join } from 'node:path';
import { describe } from 'vitest';
import { createPostgresRunLedger } from '../../../src/runs/pg-run-ledger';
import { createRunLedger } from '../../../src/runs/run-ledger';
import { DB_FILE, openDb } from '../../../src/store/db';
import { createIds, systemClock } from '../../../src/util/ids';
import { postgresForFile, twoNodes } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { runLedgerContract } from './run-ledger.contract';

const common = { clock: systemClock, ids: createIds() };

describe('RunLedger contract on SQLite', () => {
  runLedgerContract(async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    return {
      ledger: (options) =>
        createRunLedger({ ...common, ...options, db: () => db, dbPath: join(dataDir, DB_FILE) }),
      addSession: async (id) => {
        db.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, 1, 1)').run(id);
      },
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('RunLedger contract on PostgreSQL', () => {
  runLedgerContract(async () => {
    const nodes = await twoNodes(pg.cluster());
    let made = 0;
    return {
      // Ledgers alternate between the two nodes' clients.
      ledger: (options) =>
        createPostgresRunLedger({ ...common, ...options, sql: made++ % 2 ? nodes.other : nodes.sql }),
      addSession: async (id) => {
        await nodes.sql.run('INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1)', [id]);
      },
      close: () => nodes.close(),
    };
  });
});
