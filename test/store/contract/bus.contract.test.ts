/**
 * Runs the bus contract (./bus.contract.ts) over both backends' event logs: the SQLite store
 * (which answers at once) and the PostgreSQL store on a throwaway cluster (through the write queue).
 */
import { describe } from 'vitest';
import { createEventStore } from '../../../src/events/event-store';
import { createPostgresEventStore } from '../../../src/events/pg-event-store';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { busContract } from './bus.contract';

describe('Bus contract on the SQLite log', () => {
  busContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      store: () => createEventStore(db),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('Bus contract on the PostgreSQL log', () => {
  busContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    const store = createPostgresEventStore({ sql });
    return { store: () => store, close: () => sql.close() };
  });
});
