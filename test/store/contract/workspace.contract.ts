/**
 * The workspace repositories' contract (issue 18): what every backend's `session_todos`,
 * `file_reads` and `file_history` answer, run on SQLite and on PostgreSQL by
 * ./workspace.contract.test.ts. Pins: todos in list order, replaced whole, per session, a missing
 * active_form as null; a read record round-trips (fractional mtime), an upsert replaces it, a
 * session's records go together; history ids increase, rows round-trip with their nulls and the
 * binary flag, a missing id is undefined, list filters by session, run and path and keeps the last
 * `limit` oldest first.
 */
import { expect, it } from 'vitest';
import type { FileHistoryRow } from '../../../src/workspace/file-history-repository';
import type { WorkspaceStores } from '../../../src/workspace/stores';
import { withOpened } from './fixture';

export type OpenWorkspaceStores = () => Promise<{ stores: WorkspaceStores; close: () => Promise<void> }>;

export function workspaceContract(open: OpenWorkspaceStores): void {
  const withStores = withOpened(open, (f) => f.stores);

  it(
    'STORE-PG-ws: todos list in order, replace whole per session, active_form null when absent',
    withStores(async ({ todos }) => {
      expect(await todos.list('s1')).toEqual([]);
      await todos.replace(
        's1',
        [
          { content: 'b', status: 'in_progress', active_form: 'Doing b' },
          { content: 'a', status: 'pending' },
        ],
        100,
      );
      await todos.replace('s2', [{ content: 'other', status: 'completed' }], 101);
      expect(await todos.list('s1')).toEqual([
        { content: 'b', status: 'in_progress', active_form: 'Doing b', updated_at: 100 },
        { content: 'a', status: 'pending', active_form: null, updated_at: 100 },
      ]);
      await todos.replace('s1', [{ content: 'c', status: 'cancelled' }], 200);
      expect(await todos.list('s1')).toEqual([
        { content: 'c', status: 'cancelled', active_form: null, updated_at: 200 },
      ]);
      await todos.replace('s1', [], 300);
      expect(await todos.list('s1')).toEqual([]);
      expect((await todos.list('s2')).map((t) => t.content)).toEqual(['other']);
    }),
  );

  it(
    'STORE-PG-ws: read records round-trip, an upsert replaces, deleteSession forgets one session',
    withStores(async ({ reads }) => {
      expect(await reads.get('s1', 'a.ts')).toBeUndefined();
      const row = {
        session_id: 's1',
        path: 'a.ts',
        sha256: 'h1',
        size: 12,
        mtime_ms: 1700000000123.25,
        read_at: 5,
      };
      await reads.upsert(row);
      await reads.upsert({ ...row, path: 'b.ts' });
      await reads.upsert({ ...row, session_id: 's2' });
      expect(await reads.get('s1', 'a.ts')).toEqual(row);
      await reads.upsert({ ...row, sha256: 'h2', size: 13, mtime_ms: 1700000000999.5, read_at: 9 });
      expect(await reads.get('s1', 'a.ts')).toEqual({
        ...row,
        sha256: 'h2',
        size: 13,
        mtime_ms: 1700000000999.5,
        read_at: 9,
      });
      await reads.deleteSession('s1');
      expect(await reads.get('s1', 'a.ts')).toBeUndefined();
      expect(await reads.get('s1', 'b.ts')).toBeUndefined();
      expect(await reads.get('s2', 'a.ts')).toEqual({ ...row, session_id: 's2' });
    }),
  );

  const change = (over: Partial<Omit<FileHistoryRow, 'id'>> = {}): Omit<FileHistoryRow, 'id'> => ({
    session_id: 's1',
    run_id: 'r1',
    tool: 'edit',
    path: 'a.ts',
    change: 'modify',
    before_text: 'old',
    after_text: 'new',
    before_sha: 'b-sha',
    after_sha: 'a-sha',
    before_size: 3,
    after_size: 3,
    binary: 0,
    created_at: 1000,
    ...over,
  });

  it(
    'STORE-PG-ws: file history ids increase, rows round-trip with nulls and the binary flag',
    withStores(async ({ history }) => {
      const a = await history.insert(change());
      const b = await history.insert(
        change({
          session_id: null,
          run_id: null,
          change: 'create',
          before_text: null,
          before_sha: null,
          before_size: null,
          after_text: null,
          binary: 1,
        }),
      );
      expect(a).toBeGreaterThan(0);
      expect(b).toBeGreaterThan(a);
      expect(await history.get(a)).toEqual({ id: a, ...change() });
      expect(await history.get(b)).toMatchObject({
        id: b,
        session_id: null,
        run_id: null,
        before_text: null,
        before_size: null,
        after_text: null,
        binary: 1,
      });
      expect(await history.get(b + 1000)).toBeUndefined();
    }),
  );

  it(
    'STORE-PG-ws: file history list filters by session, run and path; the last `limit`, oldest first',
    withStores(async ({ history }) => {
      const ids: number[] = [];
      for (let n = 0; n < 6; n++) {
        ids.push(
          await history.insert(
            change({
              session_id: n % 2 ? 's2' : 's1',
              run_id: n < 3 ? 'r1' : 'r2',
              path: n === 4 ? 'b.ts' : 'a.ts',
              created_at: 1000 + n,
            }),
          ),
        );
      }
      expect((await history.list({})).map((r) => r.id)).toEqual(ids);
      expect((await history.list({ sessionId: 's1' })).map((r) => r.id)).toEqual([ids[0], ids[2], ids[4]]);
      expect((await history.list({ runId: 'r2' })).map((r) => r.id)).toEqual([ids[3], ids[4], ids[5]]);
      expect((await history.list({ sessionId: 's1', path: 'a.ts' })).map((r) => r.id)).toEqual([
        ids[0],
        ids[2],
      ]);
      expect((await history.list({ limit: 2 })).map((r) => r.id)).toEqual([ids[4], ids[5]]);
      expect((await history.list({ sessionId: 's1', runId: 'r1', limit: 1 })).map((r) => r.id)).toEqual([
        ids[2],
      ]);
      expect(await history.list({ sessionId: 'nope' })).toEqual([]);
    }),
  );

  it(
    'STORE-PG-ws: file history aggregates: per-session counts and recent paths, per tool, edits since',
    withStores(async ({ history, historyQueries }) => {
      expect(await historyQueries.sessionFileChanges('s1')).toEqual({
        by_change: [],
        distinct_paths: 0,
        recent_paths: [],
      });
      await history.insert(change({ path: 'a.ts', change: 'create', created_at: 10 }));
      await history.insert(change({ path: 'b.ts', created_at: 20 }));
      await history.insert(change({ path: 'a.ts', tool: 'write', created_at: 30 }));
      await history.insert(change({ session_id: 's2', path: 'c.ts', created_at: 40 }));
      await history.insert(change({ session_id: null, path: 'd.ts', created_at: 50 }));
      const own = await historyQueries.sessionFileChanges('s1');
      expect([...own.by_change].sort((x, y) => x.change.localeCompare(y.change))).toEqual([
        { change: 'create', n: 1, paths: 1 },
        { change: 'modify', n: 2, paths: 2 },
      ]);
      expect(own.distinct_paths).toBe(2);
      expect(own.recent_paths).toEqual(['a.ts', 'b.ts']);
      const byTool = await historyQueries.fileChangesByTool(['s1', 's2']);
      expect(
        [...byTool].sort((x, y) =>
          `${x.tool}${x.path}${x.change}`.localeCompare(`${y.tool}${y.path}${y.change}`),
        ),
      ).toEqual([
        { tool: 'edit', path: 'a.ts', change: 'create', n: 1 },
        { tool: 'edit', path: 'b.ts', change: 'modify', n: 1 },
        { tool: 'edit', path: 'c.ts', change: 'modify', n: 1 },
        { tool: 'write', path: 'a.ts', change: 'modify', n: 1 },
      ]);
      expect(await historyQueries.fileChangesByTool([])).toEqual([]);
      expect(await historyQueries.fileEditsSince(30)).toEqual([
        { session_id: 's1', path: 'a.ts', created_at: 30 },
        { session_id: 's2', path: 'c.ts', created_at: 40 },
      ]);
    }),
  );
}
