/**
 * Which sessions have a pending reshape proposal, kept in memory on SQLite (issue 17 item 3):
 * with the adaptive layer off every idle state (once a compat request) read the session's
 * `adaptive_sessions` row only to find no proposal. The store keeps the set of sessions with one
 * while no other connection committed (`PRAGMA data_version`) and it wrote no row
 * (src/adaptive/store.ts `mayHaveProposal`, as src/adaptive/pg-adaptive-store.ts on PostgreSQL).
 * - read once, then answered from memory; this store's own write seen at once, a second
 *   connection's at the next answer (COMPAT-PERF-66);
 * - a compat request on SQLite reads no `adaptive_sessions` row, and a proposal another process
 *   left with the layer off is still cleared at the session's idle state (COMPAT-PERF-67).
 */
import { dirname } from 'node:path';
import type { Statement } from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type AdaptiveRow, createAdaptiveStore, emptyRow } from '../../src/adaptive/store';
import { type Db, openDb } from '../../src/store/db';
import { reply } from '../helpers/fake-provider';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { until } from '../helpers/until';
import { compatServer, settledCompatRow, streamedAnswer } from '../http/compat-helpers';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

/** Statements run (`get` and `all`) whose text matches `pattern`, on every connection of the process. */
function counted(pattern: RegExp): { n: number } {
  const probe = openDb({ dataDir: tmpWorkspace() });
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Statement;
  probe.close();
  const out = { n: 0 };
  for (const method of ['get', 'all'] as const) {
    const original = proto[method] as (...args: unknown[]) => unknown;
    vi.spyOn(proto, method).mockImplementation(function (this: Statement, ...args: unknown[]) {
      if (pattern.test(this.source)) out.n++;
      return original.apply(this, args);
    } as never);
  }
  return out;
}

const proposal = {
  rule: 'test',
  base_revision: 0,
  genome: {},
} as unknown as NonNullable<AdaptiveRow['proposal']>;

describe('sessions with a pending reshape proposal, kept on SQLite', () => {
  it('COMPAT-PERF-66: read once, own writes seen at once, a second connection`s at the next answer', async () => {
    const dataDir = tmpWorkspace();
    const mine = openDb({ dataDir });
    const theirs = openDb({ dataDir });
    opened.push(mine, theirs);
    for (const id of ['s1', 's2'])
      theirs.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, 1, 1)').run(id);
    const store = createAdaptiveStore(() => mine);
    const other = createAdaptiveStore(() => theirs);
    const reads = counted(/FROM adaptive_sessions WHERE proposal IS NOT NULL/);

    expect(await store.mayHaveProposal!('s1')).toBe(false);
    expect(await store.mayHaveProposal!('s2')).toBe(false);
    expect(reads.n).toBe(1);

    // This store's own write: seen by its next answer.
    await store.put({ ...emptyRow('s1', 1), proposal });
    expect(await store.mayHaveProposal!('s1')).toBe(true);
    expect(await store.mayHaveProposal!('s2')).toBe(false);
    expect(reads.n).toBe(2);

    // Another connection's commit moves data_version: read again, then kept.
    await other.put({ ...emptyRow('s2', 1), proposal });
    expect(await store.mayHaveProposal!('s2')).toBe(true);
    expect(await store.mayHaveProposal!('s2')).toBe(true);
    expect(reads.n).toBe(3);

    // A proposal cleared by `update` is gone from the next answer.
    await store.update('s1', (current) => (current ? { row: { ...current, proposal: null } } : undefined));
    expect(await store.mayHaveProposal!('s1')).toBe(false);
    expect((await store.get('s2'))?.proposal).toEqual(proposal);

    // A write inside a transaction that rolls back leaves the next answer right.
    expect(() =>
      mine.transaction(() => {
        void store.put({ ...emptyRow('s1', 1), proposal });
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    expect(await store.mayHaveProposal!('s1')).toBe(false);
  });

  it('COMPAT-PERF-67: a compat request reads no adaptive_sessions row; a proposal left with the layer off is still cleared', async () => {
    const { app, client } = await compatServer([reply().text('warm'), reply().text('one')]);
    await streamedAnswer(client);
    await settledCompatRow(app);
    await app.bus.flush();
    const rowReads = counted(/FROM adaptive_sessions WHERE session_id/);

    expect(await streamedAnswer(client)).toBe('one');
    const row = await settledCompatRow(app);
    await app.bus.flush();
    // The run's idle state reaches the adaptive monitor a check phase after it is delivered.
    await new Promise((resolve) => setImmediate(resolve));
    await app.bus.flush();
    await new Promise((resolve) => setImmediate(resolve));
    expect(rowReads.n).toBe(0);

    // A proposal another process left on the session: cleared at its next idle state (layer off).
    const theirs = openDb({ dataDir: dirname(app.db.name) });
    opened.push(theirs);
    const store = createAdaptiveStore(() => theirs);
    await store.put({ ...emptyRow(row.session_id, 1), proposal });
    await app.bus.publish(row.session_id, 'state.changed', { state: 'idle' });
    await until(async () => (await store.get(row.session_id))?.proposal === null, 'the proposal cleared');
    expect((await store.get(row.session_id))?.cleared_reason).toContain('enabled is false');
    expect(rowReads.n).toBeGreaterThan(0);
  });
});
