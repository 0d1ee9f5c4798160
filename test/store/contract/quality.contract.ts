/**
 * The quality repositories' contract (issue 18): what every backend's `apply_patch_log` answers,
 * run on SQLite and on PostgreSQL by ./quality.contract.test.ts. Pins: ids increase; aggregates
 * per format, outcome and reason (counts and sums as numbers, null sums for no rows, in group-key
 * order) for all sessions or one; the latest failures newest first, limited, per session, with
 * `files` as the stored JSON text.
 */
import { expect, it } from 'vitest';
import type { PatchLogRow } from '../../../src/quality/patch-log-repository';
import type { QualityStores } from '../../../src/quality/stores';

export type OpenQualityStores = () => Promise<{ stores: QualityStores; close: () => Promise<void> }>;

const attempt = (over: Partial<PatchLogRow> = {}): PatchLogRow => ({
  session_id: 's1',
  run_id: 'r1',
  format: 'codex',
  outcome: 'applied',
  files: [{ path: 'a.ts' }],
  additions: 2,
  deletions: 1,
  fuzzy_hunks: 0,
  error_code: null,
  reason: null,
  failed_path: null,
  failed_hunk: null,
  error_message: null,
  created_at: 100,
  ...over,
});

const failed = (over: Partial<PatchLogRow> = {}) =>
  attempt({
    outcome: 'failed',
    files: [],
    additions: 0,
    deletions: 0,
    error_code: 'invalid_input',
    reason: 'hunk_not_found',
    failed_path: 'a.ts',
    failed_hunk: 2,
    error_message: 'no match',
    ...over,
  });

export function qualityContract(open: OpenQualityStores): void {
  const withStores = (fn: (stores: QualityStores) => Promise<void>) => async () => {
    const { stores, close } = await open();
    try {
      await fn(stores);
    } finally {
      await close();
    }
  };

  it(
    'STORE-PG-quality: patch log aggregates per format, outcome and reason, for all or one session',
    withStores(async ({ patchLog }) => {
      expect(await patchLog.aggregates()).toEqual([]);
      const a = await patchLog.insert(
        attempt({ files: [{ path: 'a' }, { path: 'b' }], fuzzy_hunks: 1, created_at: 10 }),
      );
      const b = await patchLog.insert(attempt({ created_at: 20 }));
      expect(b).toBeGreaterThan(a);
      await patchLog.insert(attempt({ format: 'unified', session_id: 's2', created_at: 30 }));
      await patchLog.insert(failed({ created_at: 40 }));
      await patchLog.insert(failed({ reason: 'not_read', created_at: 50 }));
      await patchLog.insert(failed({ reason: null, error_code: 'internal', created_at: 60 }));
      expect(await patchLog.aggregates()).toEqual([
        { format: 'codex', outcome: 'applied', reason: null, n: 2, files: 3, fuzzy: 1, last: 20 },
        { format: 'codex', outcome: 'failed', reason: null, n: 1, files: 0, fuzzy: 0, last: 60 },
        { format: 'codex', outcome: 'failed', reason: 'hunk_not_found', n: 1, files: 0, fuzzy: 0, last: 40 },
        { format: 'codex', outcome: 'failed', reason: 'not_read', n: 1, files: 0, fuzzy: 0, last: 50 },
        { format: 'unified', outcome: 'applied', reason: null, n: 1, files: 1, fuzzy: 0, last: 30 },
      ]);
      expect((await patchLog.aggregates('s2')).map((r) => [r.format, r.n])).toEqual([['unified', 1]]);
      expect(await patchLog.aggregates('nope')).toEqual([]);
    }),
  );

  it(
    'STORE-PG-quality: recent failures newest first, limited, per session, files as stored JSON text',
    withStores(async ({ patchLog }) => {
      const first = await patchLog.insert(failed({ created_at: 10 }));
      await patchLog.insert(attempt({ created_at: 15 }));
      const second = await patchLog.insert(
        failed({ session_id: 's2', files: [{ path: 'x' }], created_at: 20 }),
      );
      const third = await patchLog.insert(failed({ created_at: 30 }));
      expect((await patchLog.recentFailures(undefined, 10)).map((r) => r.id)).toEqual([third, second, first]);
      expect((await patchLog.recentFailures(undefined, 2)).map((r) => r.id)).toEqual([third, second]);
      expect((await patchLog.recentFailures('s1', 10)).map((r) => r.id)).toEqual([third, first]);
      expect((await patchLog.recentFailures('s2', 10))[0]).toMatchObject({
        id: second,
        session_id: 's2',
        run_id: 'r1',
        format: 'codex',
        error_code: 'invalid_input',
        reason: 'hunk_not_found',
        failed_path: 'a.ts',
        failed_hunk: 2,
        error_message: 'no match',
        files: '[{"path":"x"}]',
        created_at: 20,
      });
      expect(await patchLog.recentFailures('nope', 10)).toEqual([]);
    }),
  );
}
