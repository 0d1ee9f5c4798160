/**
 * A run's side reads on PostgreSQL answered from memory while the tables are unchanged (issue 18
 * item 6, p-pgcache; src/store/postgres/table-changes.ts, migration 35), on a throwaway cluster.
 * Pinned here:
 * - the stale sweep at a run's end is skipped under SQLite's conditions, the findings' change
 *   generation standing for data_version; a finding another node wrote (long unseen) is swept
 *   stale once its notification arrived (STORE-PG-145);
 * - whether a capsule is recording is read once; another node's recording capsule is seen once
 *   notified, its close too (STORE-PG-146);
 * - a compat request on a node that listens reads none of recommendations, the codebase summary,
 *   findings or edit capsules once the first request has read them (STORE-PG-147).
 * Nothing is timed: waits are bounded loops on what the node observes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { EventBus } from '../../src/events/bus';
import { STALE_AFTER_MS } from '../../src/quality/finding-status';
import { createFindingService } from '../../src/quality/findings';
import { createPostgresCapsuleRepository } from '../../src/quality/pg-capsule-repository';
import { createPostgresFindingRepository } from '../../src/quality/pg-finding-repository';
import { reply } from '../helpers/fake-provider';
import {
  driverStatements,
  followingNodes,
  migratedDatabase,
  postgresForFile,
  untilKept,
} from '../helpers/postgres';
import { until } from '../helpers/until';
import { compatServer } from '../http/compat-helpers';

const pg = postgresForFile();

let n = 0;
const ids = { next: (prefix: string) => `${prefix}_${++n}` };
// The findings' bus events are not what these tests pin.
const bus = { publish: () => {} } as unknown as EventBus;

describe.skipIf(!pg.available)('side reads on PostgreSQL answered from memory', () => {
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** Node A (statements recorded, listening as an App does) and node B on one database. */
  async function nodes() {
    const { a, b, sent, follow } = await followingNodes(pg.cluster(), closers);
    await follow().started;
    return { a, b, sent };
  }

  it('STORE-PG-145: the stale sweep reads nothing while findings are unchanged; another node`s old finding is swept once notified', async () => {
    const { a, b, sent } = await nodes();
    const now = 10 * STALE_AFTER_MS;
    const onA = createFindingService({
      findings: createPostgresFindingRepository({ sql: a }),
      clock: { now: () => now },
      ids,
      bus,
    });
    const onB = createFindingService({
      findings: createPostgresFindingRepository({ sql: b }),
      clock: { now: () => now - STALE_AFTER_MS - 1 },
      ids,
      bus,
    });
    const reads = () => sent.filter((t) => /FROM findings/.test(t)).length;
    const actor = { source: 'sweep' };

    expect(await onA.sweep(actor)).toEqual([]);
    const first = reads();
    expect(first).toBeGreaterThan(0);
    expect(await onA.sweep(actor)).toEqual([]);
    expect(await onA.sweep(actor)).toEqual([]);
    expect(reads()).toBe(first);

    const seen = await onB.observe({ kind: 'reported', fingerprint: 'f1', title: 'left behind' }, actor);
    let swept: { id: string; state: string }[] = [];
    await until(async () => {
      swept = await onA.sweep(actor);
      return swept.length > 0;
    });
    expect(swept.map((f) => [f.id, f.state])).toEqual([[seen.id, 'stale']]);
    // Its own transition notified too; once that is heard, passes read nothing again.
    expect(await untilKept(reads, () => onA.sweep(actor))).toEqual([]);
    expect((await onA.get(seen.id)).state).toBe('stale');
  });

  it('STORE-PG-146: whether a capsule is recording is read once; another node`s recording and its close are seen once notified', async () => {
    const { a, b, sent } = await nodes();
    const onA = createPostgresCapsuleRepository({ sql: a });
    const onB = createPostgresCapsuleRepository({ sql: b });
    const reads = () => sent.filter((t) => /FROM edit_capsules/.test(t)).length;
    expect(await onA.noneRecording?.()).toBe(true);
    expect(await onA.noneRecording?.()).toBe(true);
    expect(reads()).toBe(1);

    await onB.insertRecording({
      id: 'cap_1',
      session_id: 's1',
      run_id: 'run_1',
      parent_run_id: null,
      checkpoint_id: null,
      checkpoint_note: null,
      created_at: 1,
    });
    await until(async () => (await onA.noneRecording?.()) === false);
    expect(await untilKept(reads, async () => onA.noneRecording?.())).toBe(false);

    await onB.close('cap_1', 'completed', { files: [], additions: 0, deletions: 0 }, 2);
    await until(async () => (await onA.noneRecording?.()) === true);
    expect((await onA.byRun('run_1'))?.status).toBe('open');
  });

  it('STORE-PG-147: a compat request reads no recommendations, codebase summary, findings or capsules once kept', async () => {
    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    const replies = Array.from({ length: 8 }, (_, i) => reply().text(`answer ${i}`));
    const { app, client } = await compatServer(replies, { postgres: sql, allowExtra: true });
    closers.push(() => app.close());
    const sideReads = /FROM (recommendations|codebase_context_cache|findings|edit_capsules)\b/;
    /** One request, to its run's end; the side reads it sent. */
    const ask = async (): Promise<string[]> => {
      const driver = driverStatements();
      closers.push(driver.restore);
      try {
        const answer = await client.chat.completions.create({
          model: 'fake/m1',
          messages: [{ role: 'user', content: 'hello' }],
        });
        expect(answer.choices[0]?.message.content).toMatch(/^answer \d$/);
        // The run's end (the sweep, the capsule check) follows its row's completion.
        await until(async () => (await app.compatRequests.list({ limit: 1 })).rows[0]?.status !== 'running');
        await app.bus.flush();
        await app.quality.findings.flush();
      } finally {
        driver.restore();
      }
      return driver.sent.filter((t) => sideReads.test(t)).map((t) => t.slice(t.indexOf('FROM')));
    };
    // The first requests read (and the first expiry sweep of recommendations writes: its own
    // notification drops them once more); then they are kept.
    expect(await ask()).not.toEqual([]);
    let clean = false;
    for (let i = 0; i < 5 && !clean; i++) clean = (await ask()).length === 0;
    expect(clean).toBe(true);
    expect(await ask()).toEqual([]);
    expect((await app.compatRequests.list({ limit: 1 })).rows[0]?.status).toBe('completed');
  });
});
