/**
 * Runs the EventStore contract (./events.contract.ts) on both backends: the SQLite store (through
 * an async adapter) and the PostgreSQL store on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createEventStore } from '../../../src/events/event-store';
import { createPostgresEventStore } from '../../../src/events/pg-event-store';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { eventStoreContract } from './events.contract';

describe('EventStore contract on SQLite', () => {
  eventStoreContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const store = createEventStore(db);
    return {
      store: {
        insert: async (sessionId, type, payload, createdAt) =>
          store.insert(sessionId, type, payload, createdAt),
        maxId: async (sessionId) => store.maxId(sessionId),
        after: async (sessionId, afterId, limit) => store.now.after(sessionId, afterId, limit),
        count: async (sessionId, afterId, upTo) => store.now.count(sessionId, afterId, upTo),
      },
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('EventStore contract on PostgreSQL', () => {
  eventStoreContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return { store: createPostgresEventStore({ sql }), close: () => sql.close() };
  });
});
