/**
 * The operating packs' store contract (issue 18): what every backend's `session_operating_packs`
 * and `pack_hook_runs` answer, run on SQLite and on PostgreSQL by ./packs.contract.test.ts. Pins:
 * a missing row reads undefined; a put round-trips every field (the flag, the summary and the
 * diagnostics decoded) and a second put replaces it; a stored row that does not decode fails as a
 * serialization error; hook runs newest first, per session, limited (20 by default), nulls kept;
 * the failed runs since a time newest first, of some sessions (none for an empty list) or all.
 */
import { expect, it } from 'vitest';
import type { HookRunQueries } from '../../../src/packs/hook-run-queries';
import { EMPTY_SUMMARY, emptyRow, type HookRun, type PackStore } from '../../../src/packs/store';
import { withOpened } from './fixture';

export type OpenPackStore = () => Promise<{
  store: PackStore;
  /** The alerts' read of the hook runs. */
  queries: HookRunQueries;
  /** Damage the stored summary of a session's row (a hand-edited database). */
  damage: (sessionId: string) => Promise<void>;
  close: () => Promise<void>;
}>;

export const PACK_SESSIONS = ['s1', 's2'];

export function packsContract(open: OpenPackStore): void {
  const withStore = withOpened(open, (f) => f);

  it(
    'STORE-PG-packs: one row per session, every field round-trips, a damaged row fails to decode',
    withStore(async ({ store, damage }) => {
      expect(store.readOnly()).toBe(false);
      expect(await store.get('s1')).toBeUndefined();
      const row = {
        ...emptyRow('s1', 100),
        active: true,
        pack_name: 'careful',
        requested: 'careful',
        manifest_path: '/packs/careful/pack.toml',
        source: 'workspace',
        digest: 'abc',
        summary: { ...EMPTY_SUMMARY },
        ref_revision: 3,
        last_action: 'activate' as const,
        diagnostics: [
          { section: 'tools', field: 'allow', level: 'warning' as const, message: 'unknown tool' },
        ],
      };
      await store.put(row);
      expect(await store.get('s1')).toEqual(row);
      const cleared = { ...emptyRow('s1', 200), ref_revision: 4, last_action: 'clear' as const };
      await store.put(cleared);
      expect(await store.get('s1')).toEqual(cleared);
      const failed = {
        ...emptyRow('s2', 300),
        failure_state: 'validation_failed' as const,
        failure_reason: 'bad manifest',
      };
      await store.put(failed);
      expect(await store.get('s2')).toEqual(failed);
      expect(await store.get('s1')).toEqual(cleared);
      await damage('s2');
      await expect(store.get('s2')).rejects.toMatchObject({ details: { reason: 'serialization' } });
    }),
  );

  it(
    'STORE-PG-packs: hook runs newest first, per session, limited',
    withStore(async ({ store }) => {
      expect(await store.hookRuns('s1')).toEqual([]);
      const run = (over: Partial<HookRun>): HookRun => ({
        session_id: 's1',
        pack_name: 'careful',
        hook_index: 0,
        event: 'tool.finished',
        event_id: 7,
        status: 'ok',
        exit_code: 0,
        duration_ms: 12,
        started_at: 1000,
        ...over,
      });
      for (let i = 0; i < 22; i++) await store.recordHookRun(run({ hook_index: i, started_at: 1000 + i }));
      await store.recordHookRun(
        run({ session_id: 's2', status: 'timeout', exit_code: null, event_id: null }),
      );
      const all = await store.hookRuns('s1');
      expect(all).toHaveLength(20);
      expect(all[0]).toEqual(run({ hook_index: 21, started_at: 1021 }));
      expect(all.map((r) => r.hook_index).slice(0, 3)).toEqual([21, 20, 19]);
      expect((await store.hookRuns('s1', 2)).map((r) => r.hook_index)).toEqual([21, 20]);
      expect(await store.hookRuns('s2')).toEqual([
        run({ session_id: 's2', status: 'timeout', exit_code: null, event_id: null }),
      ]);
    }),
  );

  it(
    'STORE-PG-packs: failed hook runs since a time, newest first, of some sessions or all',
    withStore(async ({ store, queries }) => {
      const run = (session_id: string, hook_index: number, status: HookRun['status'], started_at: number) =>
        store.recordHookRun({
          session_id,
          pack_name: `pack-${session_id}`,
          hook_index,
          event: 'tool.finished',
          event_id: null,
          status,
          exit_code: status === 'failed' ? 1 : null,
          duration_ms: 5,
          started_at,
        });
      await run('s1', 0, 'failed', 100);
      await run('s1', 1, 'ok', 200);
      await run('s2', 2, 'timeout', 300);
      await run('s1', 3, 'error', 400);
      const picked = (rows: { session_id: string; hook_index: number }[]) =>
        rows.map((r) => [r.session_id, r.hook_index]);
      expect(picked(await queries.failed({ since: 0 }))).toEqual([
        ['s1', 3],
        ['s2', 2],
        ['s1', 0],
      ]);
      expect(await queries.failed({ since: 300 })).toEqual([
        {
          session_id: 's1',
          pack_name: 'pack-s1',
          hook_index: 3,
          event: 'tool.finished',
          status: 'error',
          started_at: 400,
        },
        {
          session_id: 's2',
          pack_name: 'pack-s2',
          hook_index: 2,
          event: 'tool.finished',
          status: 'timeout',
          started_at: 300,
        },
      ]);
      expect(picked(await queries.failed({ since: 0, sessionIds: ['s1'] }))).toEqual([
        ['s1', 3],
        ['s1', 0],
      ]);
      expect(await queries.failed({ since: 0, sessionIds: [] })).toEqual([]);
    }),
  );
}
