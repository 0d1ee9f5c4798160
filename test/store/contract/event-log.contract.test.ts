/**
 * Runs the read models' contract (./event-log.contract.ts) on both backends: the SQLite readers
 * and their PostgreSQL twins on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createEventStore } from '../../../src/events/event-store';
import { createEventLogQueries } from '../../../src/events/log-queries';
import { createPostgresEventStore } from '../../../src/events/pg-event-store';
import { createPostgresEventLogQueries } from '../../../src/events/pg-log-queries';
import { createMessageQueries } from '../../../src/sessions/message-queries';
import { createPostgresMessageQueries } from '../../../src/sessions/pg-message-queries';
import { createPostgresUsageQueries } from '../../../src/sessions/pg-usage-queries';
import { createUsageQueries } from '../../../src/sessions/usage-queries';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { readModelsContract } from './event-log.contract';

describe('Read models contract on SQLite', () => {
  readModelsContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      log: createEventLogQueries(() => db),
      events: createEventStore(db),
      messages: createMessageQueries(() => db),
      usage: createUsageQueries(() => db),
      exec: async (statement, params) => {
        db.prepare(statement).run(...params);
      },
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('Read models contract on PostgreSQL', () => {
  readModelsContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return {
      log: createPostgresEventLogQueries({ sql }),
      events: createPostgresEventStore({ sql }),
      messages: createPostgresMessageQueries({ sql }),
      usage: createPostgresUsageQueries({ sql }),
      exec: async (statement, params) => {
        let n = 0;
        await sql.run(
          statement.replace(/\?/g, () => `$${++n}`),
          params,
        );
      },
      close: () => sql.close(),
    };
  });
});
