/**
 * The contract of `workflow_runs` and `worktree_overrides` (issue 18): what every backend's
 * `WorkflowRunRepository` and `WorktreeStore` answer, run on SQLite and on PostgreSQL by
 * ./workflow-runs.contract.test.ts. Pins: a new workflow run is `running` with an empty result,
 * its finish records the outcome, lists are newest first (created_at, then id in byte order,
 * descending) with kind/name/ref filters and a limit, a missing row is undefined, a duplicate id
 * fails; the run store parses the JSON and reads a running row as its ledger run ended; a worktree
 * override starts `active`, an update answers the row after it, lists filter by status with 50
 * rows unless told.
 */
import { expect, it } from 'vitest';
import { createSequentialIds } from '../../../src/util/ids';
import { createWorkflowRunStore } from '../../../src/workflows/workflow-runs';
import type {
  WorkflowRunInsert,
  WorkflowRunRepository,
} from '../../../src/workflows/workflow-runs-repository';
import type { WorktreeStore } from '../../../src/workflows/worktree-store';
import { withOpened } from './fixture';

/** The sessions the fixture creates first (workflow_runs references sessions). */
export const WORKFLOW_SESSIONS = ['ses_1', 'ses_2'];

export type OpenWorkflowRuns = () => Promise<{
  runs: WorkflowRunRepository;
  worktrees: WorktreeStore;
  /** The clock the worktree store reads. */
  tick: (ms: number) => void;
  close: () => Promise<void>;
}>;

const insert = (over: Partial<WorkflowRunInsert> & { id: string }): WorkflowRunInsert => ({
  kind: 'dag',
  name: 'build',
  ref: null,
  session_id: 'ses_1',
  run_id: `run_${over.id}`,
  parent_run_id: null,
  input: '{}',
  now: 1000,
  ...over,
});

const worktree = (id: string) => ({
  id,
  session_id: 'ses_1',
  path: `/data/worktrees/${id}`,
  workspace_root: `/data/worktrees/${id}/pkg`,
  branch: `svc/worktree/${id}`,
  base_commit: 'abc123',
});

export function workflowRunsContract(open: OpenWorkflowRuns): void {
  const withFixture = withOpened(open, (fixture) => fixture);

  it(
    'STORE-PG-wfruns: a new run is running with an empty result; finish records the outcome',
    withFixture(async ({ runs }) => {
      expect(await runs.get('wfr_none')).toBeUndefined();
      await runs.insert(
        insert({ id: 'wfr_1', ref: 'team_1', parent_run_id: 'run_p', input: '{"goal":"ship \\"it\\""}' }),
      );
      expect(await runs.get('wfr_1')).toEqual({
        id: 'wfr_1',
        kind: 'dag',
        name: 'build',
        ref: 'team_1',
        session_id: 'ses_1',
        run_id: 'run_wfr_1',
        parent_run_id: 'run_p',
        status: 'running',
        input: '{"goal":"ship \\"it\\""}',
        result: '{}',
        error: null,
        created_at: 1000,
        updated_at: 1000,
        finished_at: null,
      });
      await runs.finish('wfr_1', {
        status: 'failed',
        result: '{"steps":[1,2]}',
        error: 'step b failed',
        now: 2500,
      });
      expect(await runs.get('wfr_1')).toMatchObject({
        status: 'failed',
        result: '{"steps":[1,2]}',
        error: 'step b failed',
        created_at: 1000,
        updated_at: 2500,
        finished_at: 2500,
      });
      // Finishing a missing run changes nothing and does not fail.
      await runs.finish('wfr_none', { status: 'completed', result: '{}', error: null, now: 3000 });
      expect(await runs.get('wfr_none')).toBeUndefined();
      await expect(runs.insert(insert({ id: 'wfr_1' }))).rejects.toThrow();
    }),
  );

  it(
    'STORE-PG-wfruns: lists newest first (created_at, then id in byte order) with filters and a limit',
    withFixture(async ({ runs }) => {
      expect(await runs.list({ limit: 20 })).toEqual([]);
      await runs.insert(insert({ id: 'wfr_a', now: 1000 }));
      await runs.insert(insert({ id: 'wfr_B', now: 1000, kind: 'team', ref: 'team_1', name: 'crew' }));
      await runs.insert(insert({ id: 'wfr_c', now: 2000, kind: 'team', ref: 'team_2', name: 'crew' }));
      await runs.insert(
        insert({ id: 'wfr_d', now: 500, kind: 'recipe', name: 'build', session_id: 'ses_2' }),
      );
      const ids = async (filter: Parameters<WorkflowRunRepository['list']>[0]) =>
        (await runs.list(filter)).map((row) => row.id);
      expect(await ids({ limit: 20 })).toEqual(['wfr_c', 'wfr_a', 'wfr_B', 'wfr_d']);
      expect(await ids({ limit: 2 })).toEqual(['wfr_c', 'wfr_a']);
      expect(await ids({ kind: 'team', limit: 20 })).toEqual(['wfr_c', 'wfr_B']);
      expect(await ids({ kind: 'team', ref: 'team_1', limit: 20 })).toEqual(['wfr_B']);
      expect(await ids({ name: 'build', limit: 20 })).toEqual(['wfr_a', 'wfr_d']);
      expect(await ids({ kind: 'recipe', name: 'build', limit: 20 })).toEqual(['wfr_d']);
      expect(await ids({ kind: 'dag', name: 'crew', limit: 20 })).toEqual([]);
      expect(await ids({ ref: 'team_9', limit: 20 })).toEqual([]);
      // An empty filter value filters nothing.
      expect(await ids({ kind: '', name: '', ref: '', limit: 20 })).toHaveLength(4);
    }),
  );

  it(
    'STORE-PG-wfruns: the run store parses the JSON and reads a running row as its ledger run ended',
    withFixture(async ({ runs: repo }) => {
      let now = 7000;
      const ledger = new Map<string, string>();
      const store = createWorkflowRunStore({
        repo,
        clock: { now: () => now },
        ids: createSequentialIds(),
        runStatus: async (runId) => ledger.get(runId),
      });
      const created = await store.create({
        kind: 'workflow',
        name: 'review',
        ref: 'review',
        session_id: 'ses_2',
        run_id: 'run_x',
        parent_run_id: null,
        input: { files: ['a.ts'], depth: 2, note: 'é ✓' },
      });
      expect(created).toMatchObject({
        id: 'wfr_0001',
        status: 'running',
        input: { files: ['a.ts'], depth: 2, note: 'é ✓' },
        result: {},
      });
      ledger.set('run_x', 'interrupted');
      expect((await store.get(created.id))?.status).toBe('interrupted');
      now = 8000;
      await store.finish(created.id, {
        status: 'completed',
        result: { ok: true, items: [1, null] },
        error: null,
      });
      expect(await store.get(created.id)).toMatchObject({
        status: 'completed',
        result: { ok: true, items: [1, null] },
        finished_at: 8000,
      });
      expect((await store.list({ kind: 'workflow', ref: 'review' })).map((run) => run.id)).toEqual([
        created.id,
      ]);
      expect(await store.get('wfr_none')).toBeUndefined();
    }),
  );

  it(
    'STORE-PG-worktrees: an override starts active; an update answers the row after it',
    withFixture(async ({ worktrees, tick }) => {
      expect(await worktrees.get('wt_none')).toBeUndefined();
      const created = await worktrees.create(worktree('wt_1'));
      expect(created).toEqual({
        ...worktree('wt_1'),
        child_session_id: null,
        run_id: null,
        head_commit: null,
        status: 'active',
        files_changed: 0,
        created_at: 1000,
        finished_at: null,
      });
      expect(await worktrees.get('wt_1')).toEqual(created);
      expect(await worktrees.update('wt_1', {})).toEqual(created);
      const linked = await worktrees.update('wt_1', { child_session_id: 'ses_2', run_id: 'run_c' });
      expect(linked).toMatchObject({ child_session_id: 'ses_2', run_id: 'run_c', status: 'active' });
      tick(500);
      const done = await worktrees.update('wt_1', {
        head_commit: 'def456',
        files_changed: 3,
        status: 'removed',
        finished_at: 1500,
      });
      expect(done).toEqual({
        ...linked,
        head_commit: 'def456',
        files_changed: 3,
        status: 'removed',
        finished_at: 1500,
      });
      // An undefined value clears the column.
      expect(await worktrees.update('wt_1', { head_commit: undefined })).toMatchObject({ head_commit: null });
      expect(await worktrees.update('wt_none', { status: 'failed' })).toBeUndefined();
      await expect(worktrees.create(worktree('wt_1'))).rejects.toThrow();
    }),
  );

  it(
    'STORE-PG-worktrees: lists newest first (created_at, then id in byte order), by status, 50 unless told',
    withFixture(async ({ worktrees, tick }) => {
      expect(await worktrees.list()).toEqual([]);
      await worktrees.create(worktree('wt_a'));
      await worktrees.create(worktree('wt_B'));
      tick(10);
      await worktrees.create(worktree('wt_c'));
      await worktrees.update('wt_a', { status: 'kept' });
      const ids = async (filter?: Parameters<WorktreeStore['list']>[0]) =>
        (await worktrees.list(filter)).map((row) => row.id);
      expect(await ids()).toEqual(['wt_c', 'wt_a', 'wt_B']);
      expect(await ids({ limit: 1 })).toEqual(['wt_c']);
      expect(await ids({ status: 'active' })).toEqual(['wt_c', 'wt_B']);
      expect(await ids({ status: 'kept' })).toEqual(['wt_a']);
      expect(await ids({ status: 'failed' })).toEqual([]);
      for (let i = 0; i < 50; i++) {
        tick(1);
        await worktrees.create(worktree(`wt_n${String(i).padStart(2, '0')}`));
      }
      const all = await ids();
      expect(all).toHaveLength(50);
      expect(all[0]).toBe('wt_n49');
      expect(await ids({ limit: 60 })).toHaveLength(53);
    }),
  );
}
