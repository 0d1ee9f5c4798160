/**
 * Runs the AgentStateStore contract (./agent-state.contract.ts) on both backends: the SQLite
 * store and the PostgreSQL store on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createAgentStateStore } from '../../../src/agent/agent-state-store';
import { createPostgresAgentStateStore } from '../../../src/agent/pg-agent-state-store';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { agentStateContract } from './agent-state.contract';

describe('AgentStateStore contract on SQLite', () => {
  agentStateContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      store: createAgentStateStore(() => db),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('AgentStateStore contract on PostgreSQL', () => {
  agentStateContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return { store: createPostgresAgentStateStore({ sql }), close: () => sql.close() };
  });
});
