/**
 * Reads a node keeps in memory on PostgreSQL (issue 18 item 6, p-pgcache), on a throwaway cluster:
 * migration 35's change notifications and `TableChanges` (src/store/postgres/table-changes.ts) fed
 * by the node's LISTEN (src/events/pg-notify.ts `followOtherNodes`). Pinned here:
 * - a committed INSERT, UPDATE or DELETE of a watched table notifies its name; a rolled-back one
 *   nothing (STORE-PG-140);
 * - the pending recommendations and the codebase summary row are read once and then answered from
 *   memory; this node's own write is seen by its next read at once, another node's once its
 *   notification arrived (STORE-PG-141, STORE-PG-142);
 * - with the LISTEN lost nothing is answered from memory (another node's write is seen at once),
 *   and once it is back reads are kept again (STORE-PG-143);
 * - a read inside a transaction that wrote the table is not kept: rolled back, its rows are gone
 *   from the next read (STORE-PG-144).
 * Nothing is timed: waits are bounded loops on what the node observes.
 */
import { AsyncResource } from 'node:async_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { createEventListener } from '../../src/events/pg-notify';
import { createPostgresCodebaseCacheStore } from '../../src/observe/pg-codebase-cache-store';
import { createPostgresRecommendationRepository } from '../../src/readouts/cognition/pg-recommendation-store';
import type { RecordInput } from '../../src/readouts/cognition/recommendation-store';
import { followingNodes, postgresForFile, twoNodes, untilKept } from '../helpers/postgres';
import { until } from '../helpers/until';

const pg = postgresForFile();

const clock = { now: () => Date.now() };
let n = 0;
const ids = { next: (prefix: string) => `${prefix}_${++n}` };
const advice = (kind: string): RecordInput => ({
  zone: 'compaction',
  kind,
  payload: { kind },
  window_seconds: 3600,
});

describe.skipIf(!pg.available)('reads kept in memory on PostgreSQL (migration 35)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /**
   * Node A (its statements recorded, listening as an App does) and node B (not listening) on one
   * database.
   */
  async function nodes(reconnectDelayMs = 50) {
    const { a, b, sent, changes, follow } = await followingNodes(pg.cluster(), closers, reconnectDelayMs);
    await follow().started;
    return { a, b, sent, changes };
  }

  it('STORE-PG-140: a committed write of a watched table notifies its name; a rolled-back one nothing', async () => {
    const { sql, other, close } = await twoNodes(pg.cluster());
    closers.push(close);
    const heard: string[] = [];
    const listener = await createEventListener({ sql, reconnectDelayMs: 50 });
    closers.push(() => listener.close());
    listener.subscribe({ event: () => {}, resync: () => {}, tableChanged: (table) => heard.push(table) });
    await expect(
      other.transaction(async (tx) => {
        await tx.run("INSERT INTO codebase_context_cache VALUES ('/w', '{}', 1, 1, 1)");
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await other.run("INSERT INTO codebase_context_cache VALUES ('/w', '{}', 1, 1, 1)");
    await other.run(`INSERT INTO recommendations (id, zone, kind, recommended_at, payload_digest, evidence, window_seconds)
                     VALUES ('r1', 'compaction', 'k', 1, 'd', '{}', 60)`);
    await other.run("UPDATE findings SET state = 'stale' WHERE false");
    await other.run("DELETE FROM edit_capsules WHERE id = 'none'");
    await until(() => heard.length >= 4);
    expect(heard).toEqual(['codebase_context_cache', 'recommendations', 'findings', 'edit_capsules']);
  });

  it('STORE-PG-141: pending recommendations are read once, own writes seen at once, another node`s after its notification', async () => {
    const { a, b, sent, changes } = await nodes();
    const onA = createPostgresRecommendationRepository({ sql: a, clock, ids });
    const onB = createPostgresRecommendationRepository({ sql: b, clock, ids });
    const reads = () => sent.filter((t) => /FROM recommendations WHERE outcome = 'pending'/.test(t)).length;
    const kinds = async () => (await onA.pending()).map((r) => r.kind);

    expect(await kinds()).toEqual([]);
    expect(await kinds()).toEqual([]);
    expect(reads()).toBe(1);

    await onA.record(advice('own'));
    expect(await kinds()).toEqual(['own']);
    expect(reads()).toBe(2);

    await onB.record(advice('other'));
    await until(async () => (await kinds()).length === 2);
    expect(changes.isListening()).toBe(true);
    expect(await untilKept(reads, kinds)).toEqual(['own', 'other']);
    // The filters pick from the kept rows as the statement would.
    const kept = await untilKept(reads, () => onA.pending({ kind: 'other' }));
    expect(kept.map((r) => r.kind)).toEqual(['other']);
  });

  it('STORE-PG-142: the codebase summary row is read once; a put here or on another node replaces it', async () => {
    const { a, b, sent } = await nodes();
    const onA = createPostgresCodebaseCacheStore({ sql: a });
    const onB = createPostgresCodebaseCacheStore({ sql: b });
    const reads = () => sent.filter((t) => /FROM codebase_context_cache/.test(t)).length;
    const entry = (summary: string) => ({ summary, computed_at: 1, compute_ms: 2 });

    expect(await onA.get('/w')).toBeUndefined();
    expect(await onA.get('/w')).toBeUndefined();
    expect(reads()).toBe(1);
    await onA.put('/w', entry('{"v":1}'));
    expect(await onA.get('/w')).toEqual({
      summary: '{"v":1}',
      computed_at: 1,
      compute_ms: 2,
      computations: 1,
    });
    await onB.put('/w', entry('{"v":2}'));
    await until(async () => (await onA.get('/w'))?.summary === '{"v":2}');
    expect(await untilKept(reads, () => onA.get('/w'))).toEqual({
      summary: '{"v":2}',
      computed_at: 1,
      compute_ms: 2,
      computations: 2,
    });
    // Another key is read on its own.
    const before = reads();
    expect(await onA.get('/other')).toBeUndefined();
    expect(reads()).toBe(before + 1);
  });

  it('STORE-PG-143: with the LISTEN lost every read goes to the database; once it is back reads are kept again', async () => {
    // The listener reconnects 1.5 s after the loss: the write and reads below happen before.
    const { a, b, sent, changes } = await nodes(1_500);
    const onA = createPostgresCodebaseCacheStore({ sql: a });
    const onB = createPostgresCodebaseCacheStore({ sql: b });
    const reads = () => sent.filter((t) => /FROM codebase_context_cache/.test(t)).length;
    await onA.get('/w');
    await onA.get('/w');
    expect(reads()).toBe(1);

    await b.run(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'svc-listen' AND datname = current_database()",
    );
    await until(() => !changes.isListening());
    expect(changes.generation('codebase_context_cache')).toBeUndefined();
    // Written while A cannot hear it: A's next read sees it.
    await onB.put('/w', { summary: '{"lost":true}', computed_at: 5, compute_ms: 1 });
    expect(await onA.get('/w')).toMatchObject({ summary: '{"lost":true}' });
    expect(await onA.get('/w')).toMatchObject({ summary: '{"lost":true}' });
    expect(reads()).toBe(3);

    await until(() => changes.isListening());
    expect(await untilKept(reads, () => onA.get('/w'))).toMatchObject({ summary: '{"lost":true}' });
  });

  it('STORE-PG-144: a read inside a transaction that wrote the table is not kept; rolled back, its row is gone', async () => {
    const { a, sent } = await nodes();
    const onA = createPostgresRecommendationRepository({ sql: a, clock, ids });
    const reads = () => sent.filter((t) => /FROM recommendations WHERE outcome = 'pending'/.test(t)).length;
    expect(await onA.pending()).toEqual([]);
    const outside = new AsyncResource('outside the transaction');
    await expect(
      a.transaction(async () => {
        await onA.record(advice('uncommitted'));
        expect((await onA.pending()).map((r) => r.kind)).toEqual(['uncommitted']);
        // Outside the transaction meanwhile: not answered from what the transaction read.
        expect(await outside.runInAsyncScope(() => onA.pending())).toEqual([]);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await onA.pending()).toEqual([]);
    expect(await onA.pending()).toEqual([]);
    expect(reads()).toBe(4);
  });
});
