/**
 * Runs the contract of `workflow_runs` and `worktree_overrides` (./workflow-runs.contract.ts) on
 * both backends, through the workflows' stores (src/workflows/stores.ts). `workflow_runs`
 * references `sessions`, so the sessions exist.
 */
import { describe } from 'vitest';
import { openDb } from '../../../src/store/db';
import { createSequentialIds } from '../../../src/util/ids';
import { createPostgresWorkflowStores, createSqliteWorkflowStores } from '../../../src/workflows/stores';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { WORKFLOW_SESSIONS, workflowRunsContract } from './workflow-runs.contract';

const manualClock = () => {
  let now = 1000;
  return {
    clock: { now: () => now },
    tick: (ms: number) => {
      now += ms;
    },
  };
};

describe('workflow runs and worktree overrides contract on SQLite', () => {
  workflowRunsContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    for (const id of WORKFLOW_SESSIONS)
      db.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, 1, 1)').run(id);
    const { clock, tick } = manualClock();
    const stores = createSqliteWorkflowStores({ db: () => db, clock, ids: createSequentialIds() });
    return {
      runs: stores.runs,
      worktrees: stores.worktrees,
      tick,
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('workflow runs and worktree overrides contract on PostgreSQL', () => {
  workflowRunsContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    for (const id of WORKFLOW_SESSIONS)
      await sql.run('INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1)', [id]);
    const { clock, tick } = manualClock();
    const stores = createPostgresWorkflowStores({ sql, clock, ids: createSequentialIds() });
    return {
      runs: stores.runs,
      worktrees: stores.worktrees,
      tick,
      close: () => sql.close(),
    };
  });
});
