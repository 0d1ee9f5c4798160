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
import { withOpened } from './fixture';

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
  const withStores = withOpened(open, (f) => f.stores);

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

  const recording = (
    runId: string,
    over: { session_id?: string; created_at?: number; checkpoint_id?: string | null } = {},
  ) => ({
    id: `cap_${runId}`,
    session_id: over.session_id ?? 's1',
    run_id: runId,
    parent_run_id: null,
    checkpoint_id: over.checkpoint_id === undefined ? 'ck1' : over.checkpoint_id,
    checkpoint_note: null,
    created_at: over.created_at ?? 100,
  });
  const content = {
    files: [
      {
        path: 'a.ts',
        change: 'modify' as const,
        additions: 2,
        deletions: 1,
        edits: 2,
        tools: ['edit', 'write'],
        first_history_id: 1,
        last_history_id: 2,
        revertible: true,
      },
    ],
    additions: 2,
    deletions: 1,
  };

  it(
    'STORE-PG-quality: capsules record once per run, close with JSON files, revert only when open, totals',
    withStores(async ({ capsules }) => {
      expect(await capsules.totals()).toEqual({
        total: 0,
        recording: null,
        open: null,
        reverted: null,
        with_checkpoint: null,
        files: null,
        additions: null,
        deletions: null,
        last: null,
      });
      await capsules.insertRecording(recording('r1'));
      await capsules.insertRecording({ ...recording('r1'), id: 'cap_other', created_at: 999 });
      expect(await capsules.byRun('r1')).toEqual({
        id: 'cap_r1',
        session_id: 's1',
        run_id: 'r1',
        parent_run_id: null,
        status: 'recording',
        run_status: null,
        checkpoint_id: 'ck1',
        checkpoint_note: null,
        files: [],
        file_count: 0,
        additions: 0,
        deletions: 0,
        created_at: 100,
        closed_at: null,
        reverted_at: null,
        reverted_by_session_id: null,
        revert_history_ids: [],
      });
      expect(await capsules.find('cap_other')).toBeUndefined();
      await capsules.markReverted('cap_r1', 150, 's9', [7]);
      expect((await capsules.find('cap_r1'))?.status).toBe('recording');
      await capsules.close('cap_r1', 'completed', content, 200);
      expect(await capsules.find('cap_r1')).toMatchObject({
        status: 'open',
        run_status: 'completed',
        files: content.files,
        file_count: 1,
        additions: 2,
        deletions: 1,
        closed_at: 200,
      });
      await capsules.markReverted('cap_r1', 300, 's9', [7, 8]);
      expect(await capsules.find('cap_r1')).toMatchObject({
        status: 'reverted',
        reverted_at: 300,
        reverted_by_session_id: 's9',
        revert_history_ids: [7, 8],
      });
      await capsules.insertOpen(
        {
          id: 'cap_r2',
          session_id: 's2',
          run_id: 'r2',
          parent_run_id: 'r1',
          run_status: 'failed',
          checkpoint_note: 'no git',
          now: 400,
        },
        content,
      );
      expect(await capsules.totals()).toEqual({
        total: 2,
        recording: 0,
        open: 1,
        reverted: 1,
        with_checkpoint: 1,
        files: 2,
        additions: 4,
        deletions: 2,
        last: 400,
      });
      expect((await capsules.totals('s2'))?.total).toBe(1);
      await capsules.delete('cap_r2');
      expect(await capsules.byRun('r2')).toBeUndefined();
    }),
  );

  it(
    'STORE-PG-quality: capsule lists newest first with filters and limit; stranded recordings of other runs',
    withStores(async ({ capsules }) => {
      await capsules.insertRecording(recording('r1', { created_at: 10 }));
      await capsules.insertRecording(recording('r2', { created_at: 20, session_id: 's2' }));
      await capsules.insertRecording(recording('r3', { created_at: 30 }));
      await capsules.close('cap_r3', 'completed', content, 40);
      expect((await capsules.list({})).map((c) => c.id)).toEqual(['cap_r3', 'cap_r2', 'cap_r1']);
      expect((await capsules.list({ limit: 2 })).map((c) => c.id)).toEqual(['cap_r3', 'cap_r2']);
      expect((await capsules.list({ sessionId: 's1' })).map((c) => c.id)).toEqual(['cap_r3', 'cap_r1']);
      expect((await capsules.list({ status: 'recording' })).map((c) => c.id)).toEqual(['cap_r2', 'cap_r1']);
      expect((await capsules.list({ sessionId: 's1', status: 'open' })).map((c) => c.id)).toEqual(['cap_r3']);
      const stranded = await capsules.strandedExcept('r1');
      expect(stranded).toEqual([{ run_id: 'r2', session_id: 's2' }]);
    }),
  );

  it(
    'STORE-PG-96: a run end reads its capsule and the stranded recordings in one call (atRunEnd), as byRun and strandedExcept answer',
    withStores(async ({ capsules }) => {
      await capsules.insertRecording(recording('r1', { created_at: 10 }));
      await capsules.insertRecording(recording('r2', { created_at: 20, session_id: 's2' }));
      await capsules.insertRecording(recording('r3', { created_at: 30 }));
      await capsules.insertRecording(recording('r4', { created_at: 40, session_id: 's4' }));
      await capsules.close('cap_r3', 'completed', content, 50);
      if (!capsules.atRunEnd) throw new Error('no atRunEnd');
      for (const runId of ['r1', 'r3', 'r_none']) {
        expect(await capsules.atRunEnd(runId)).toEqual({
          capsule: await capsules.byRun(runId),
          stranded: await capsules.strandedExcept(runId),
        });
      }
      const end = await capsules.atRunEnd('r3');
      expect([end.capsule?.status, end.stranded.map((s) => s.run_id)]).toEqual(['open', ['r1', 'r2', 'r4']]);
    }),
  );

  it(
    'STORE-PG-findings: one finding per fingerprint, sightings, states, active scopes in order',
    withStores(async ({ findings }) => {
      const check = {
        kind: 'check' as const,
        fingerprint: 'check:.::npm test',
        title: 'npm test failed',
        checkKey: '.::npm test',
      };
      expect(await findings.byFingerprint(check.fingerprint)).toBeUndefined();
      expect(
        await findings.insert('fnd_b', check, { source: 'bash', sessionId: 's1', runId: 'r1' }, 10),
      ).toBe(true);
      // The database decides: a second insert of the fingerprint writes nothing.
      expect(await findings.insert('fnd_x', check, { source: 'bash' }, 11)).toBe(false);
      expect(await findings.byId('fnd_x')).toBeUndefined();
      const row = await findings.byFingerprint(check.fingerprint);
      expect(row).toEqual({
        id: 'fnd_b',
        kind: 'check',
        fingerprint: 'check:.::npm test',
        state: 'open',
        title: 'npm test failed',
        detail: null,
        severity: 'error',
        path: null,
        line: null,
        check_key: '.::npm test',
        check_command: null,
        check_kind: null,
        session_id: 's1',
        run_id: 'r1',
        last_session_id: 's1',
        last_run_id: 'r1',
        occurrences: 1,
        first_seen_at: 10,
        last_seen_at: 10,
        state_changed_at: 10,
      });
      await findings.sighted(
        row!,
        { ...check, title: 'again', checkCommand: 'npm test' },
        { source: 'bash' },
        20,
      );
      expect(await findings.byId('fnd_b')).toMatchObject({
        title: 'again',
        check_command: 'npm test',
        last_session_id: 's1',
        occurrences: 2,
        last_seen_at: 20,
      });
      const diag = (fingerprint: string, path: string) => ({
        kind: 'diagnostic' as const,
        fingerprint,
        title: fingerprint,
        path,
        line: 3,
      });
      await findings.insert('fnd_a', diag('d1', 'a.ts'), { source: 'diagnostics', sessionId: 's2' }, 10);
      await findings.insert('fnd_c', diag('d2', 'a.ts'), { source: 'diagnostics' }, 5);
      await findings.insert(
        'fnd_r',
        { kind: 'reported', fingerprint: 'rep', title: 'r' },
        { source: 'agent', sessionId: 's2' },
        30,
      );
      const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
      expect(ids(await findings.active({ with: 'check' }))).toEqual(['fnd_b']);
      expect(ids(await findings.active({ with: 'diagnostics_of', path: 'a.ts' }))).toEqual([
        'fnd_c',
        'fnd_a',
      ]);
      expect(ids(await findings.active({ with: 'path', path: 'a.ts' }))).toEqual(['fnd_c', 'fnd_a']);
      expect(ids(await findings.active({ with: 'touched_by', path: 'b.ts', sessionId: 's2' }))).toEqual([
        'fnd_r',
      ]);
      expect(ids(await findings.active({ with: 'seen_before', cutoff: 15 }))).toEqual(['fnd_c', 'fnd_a']);
      await findings.setState('fnd_c', 'fixed', 40);
      expect(await findings.find('fnd_c')).toMatchObject({ state: 'fixed', state_changed_at: 40 });
      expect(ids(await findings.active({ with: 'path', path: 'a.ts' }))).toEqual(['fnd_a']);
      expect(await findings.find('fnd_none')).toBeUndefined();
      // Most recently seen first; filters by state, kind and session (first or last seen).
      expect(ids(await findings.list({}))).toEqual(['fnd_r', 'fnd_b', 'fnd_a', 'fnd_c']);
      expect(ids(await findings.list({ limit: 2 }))).toEqual(['fnd_r', 'fnd_b']);
      expect(ids(await findings.list({ states: ['open', 'acknowledged'], kind: 'diagnostic' }))).toEqual([
        'fnd_a',
      ]);
      expect(ids(await findings.list({ sessionId: 's2' }))).toEqual(['fnd_r', 'fnd_a']);
      expect(await findings.countsByStateAndKind()).toEqual([
        { state: 'fixed', kind: 'diagnostic', n: 1 },
        { state: 'open', kind: 'check', n: 1 },
        { state: 'open', kind: 'diagnostic', n: 1 },
        { state: 'open', kind: 'reported', n: 1 },
      ]);
      expect(await findings.countsByStateAndKind('s1')).toEqual([{ state: 'open', kind: 'check', n: 1 }]);
    }),
  );

  it(
    'STORE-PG-findings: the finding log newest first with titles, totals, per finding and session',
    withStores(async ({ findings }) => {
      expect(await findings.events({})).toEqual({ events: [], total: 0 });
      expect(await findings.logSummary()).toEqual({ n: 0, last: null });
      await findings.insert(
        'fnd_1',
        { kind: 'reported', fingerprint: 'r1', title: 'one' },
        { source: 'agent' },
        1,
      );
      await findings.insert(
        'fnd_2',
        { kind: 'reported', fingerprint: 'r2', title: 'two' },
        { source: 'agent' },
        1,
      );
      await findings.insertEvent(
        'fnd_1',
        null,
        'open',
        'reported',
        { source: 'agent', sessionId: 's1', runId: 'r1' },
        10,
      );
      await findings.insertEvent('fnd_2', null, 'open', 'reported', { source: 'agent' }, 20);
      await findings.insertEvent(
        'fnd_1',
        'open',
        'waived',
        'fine',
        { source: 'operator', sessionId: 's1' },
        30,
      );
      const all = await findings.events({});
      expect(all.total).toBe(3);
      expect(all.events.map((e) => [e.finding_id, e.from_state, e.to_state, e.title, e.created_at])).toEqual([
        ['fnd_1', 'open', 'waived', 'one', 30],
        ['fnd_2', null, 'open', 'two', 20],
        ['fnd_1', null, 'open', 'one', 10],
      ]);
      expect(all.events[2]).toMatchObject({
        reason: 'reported',
        source: 'agent',
        session_id: 's1',
        run_id: 'r1',
      });
      expect(all.events[1]).toMatchObject({ session_id: null, run_id: null });
      expect(all.events[0].id).toBeGreaterThan(all.events[1].id);
      const one = await findings.events({ findingId: 'fnd_1', limit: 1 });
      expect([one.total, one.events.map((e) => e.to_state)]).toEqual([2, ['waived']]);
      expect((await findings.events({ sessionId: 's1' })).total).toBe(2);
      expect(await findings.logSummary()).toEqual({ n: 3, last: 30 });
      expect(await findings.logSummary('s1')).toEqual({ n: 2, last: 30 });
      expect(await findings.logSummary('s9')).toEqual({ n: 0, last: null });
    }),
  );
}
