/**
 * Which sessions have a pending reshape proposal, kept in memory on PostgreSQL (issue 18 item 6):
 * with the adaptive layer off every idle state (once a compat request) read the session's
 * `adaptive_sessions` row only to find no proposal. Migration 40 adds the table to the change
 * notifications of migration 35, and the store keeps the set of sessions with a proposal while
 * no write to the table is notified (src/adaptive/pg-adaptive-store.ts `mayHaveProposal`).
 * Pinned here, on a throwaway cluster:
 * - read once, then answered from memory; this node's own write seen at once, another node's once
 *   its notification arrived; without the LISTEN it cannot tell and says so (STORE-PG-230);
 * - a compat request on a PostgreSQL App reads no `adaptive_sessions` row, and a proposal left
 *   with the layer off is still cleared at the session's idle state (STORE-PG-231).
 * Nothing is timed: waits are bounded loops on what the node observes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createPostgresAdaptiveStore } from '../../src/adaptive/pg-adaptive-store';
import { type AdaptiveRow, emptyRow } from '../../src/adaptive/store';
import { reply } from '../helpers/fake-provider';
import {
  driverStatements,
  followingNodes,
  migratedDatabase,
  postgresForFile,
  untilKept,
} from '../helpers/postgres';
import { until } from '../helpers/until';
import { compatServer, settledCompatRow, streamedAnswer } from '../http/compat-helpers';

const pg = postgresForFile();

const proposal = {
  rule: 'test',
  base_revision: 0,
  genome: {},
} as unknown as NonNullable<AdaptiveRow['proposal']>;

describe.skipIf(!pg.available)(
  'sessions with a pending reshape proposal, kept on PostgreSQL (migration 40)',
  () => {
    const closers: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close();
    });

    it('STORE-PG-230: read once, own writes seen at once, another node`s after its notification; no LISTEN: cannot tell', async () => {
      const { both, a, sent, follow } = await followingNodes(pg.cluster(), closers);
      for (const id of ['s1', 's2'])
        await both.other.run('INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1)', [id]);
      const onA = createPostgresAdaptiveStore({ sql: a });
      const onB = createPostgresAdaptiveStore({ sql: both.other });
      const reads = () =>
        sent.filter((t) => /FROM adaptive_sessions WHERE proposal IS NOT NULL/.test(t)).length;

      // Not listening yet: nothing kept, the caller is told to read the row.
      expect(await onA.mayHaveProposal!('s1')).toBe(true);
      expect(reads()).toBe(0);

      await follow().started;

      expect(await onA.mayHaveProposal!('s1')).toBe(false);
      expect(await onA.mayHaveProposal!('s2')).toBe(false);
      expect(reads()).toBe(1);

      // This node's own write: seen by its next answer at once.
      await onA.put({ ...emptyRow('s1', 1), proposal });
      expect(await onA.mayHaveProposal!('s1')).toBe(true);
      expect(await onA.mayHaveProposal!('s2')).toBe(false);

      // Another node's write: seen once its notification arrived, then kept again.
      await onB.put({ ...emptyRow('s2', 1), proposal });
      await until(() => onA.mayHaveProposal!('s2'), 'the other node`s proposal seen');
      // A read may see B's commit before its notification arrives; that arrival moves the set
      // once more, so it is kept again from the first answer that sends no read.
      expect(await untilKept(reads, () => onA.mayHaveProposal!('s2'))).toBe(true);
      const at = reads();
      expect(await onA.mayHaveProposal!('s2')).toBe(true);
      expect(reads()).toBe(at);

      // A proposal cleared (here by `update`) is gone from the next answer.
      await onA.update('s1', (current) => (current ? { row: { ...current, proposal: null } } : undefined));
      expect(await onA.mayHaveProposal!('s1')).toBe(false);
      expect((await onA.get('s2'))?.proposal).toEqual(proposal);
    });

    it('STORE-PG-231: a compat request reads no adaptive_sessions row; a proposal left with the layer off is still cleared', async () => {
      const sql = await migratedDatabase(pg.cluster());
      const statements = driverStatements();
      closers.push(async () => statements.restore());
      const { app, client } = await compatServer(
        [reply().text('warm'), reply().text('one'), reply().text('two')],
        {
          postgres: sql,
        },
      );
      await streamedAnswer(client);
      await settledCompatRow(app);
      await app.bus.flush();
      const adaptiveReads = (from: number) =>
        statements.sent.slice(from).filter((t) => /FROM adaptive_sessions WHERE session_id/.test(t)).length;

      // The kept set is read at most once (the first idle state after the LISTEN is in place).
      let from = statements.sent.length;
      expect(await streamedAnswer(client)).toBe('one');
      const row = await settledCompatRow(app);
      await app.bus.flush();
      // The run's idle state reaches the adaptive monitor a check phase after it is delivered.
      await new Promise((resolve) => setImmediate(resolve));
      await app.bus.flush();
      expect(adaptiveReads(from)).toBe(0);

      // A proposal another process left on the session: cleared at its next idle state (layer off).
      const store = createPostgresAdaptiveStore({ sql });
      await store.put({ ...emptyRow(row.session_id, 1), proposal });
      expect(await store.mayHaveProposal!(row.session_id)).toBe(true);
      from = statements.sent.length;
      await app.bus.publish(row.session_id, 'state.changed', { state: 'idle' });
      await until(async () => (await store.get(row.session_id))?.proposal === null, 'the proposal cleared');
      expect((await store.get(row.session_id))?.cleared_reason).toContain('enabled is false');
      expect(adaptiveReads(from)).toBeGreaterThan(0);
    });
  },
);
