/**
 * The pending recommendations answered from memory (issue 17 item 3): read from the database once,
 * then from memory while no other connection committed (`PRAGMA data_version`) and this process
 * wrote no recommendation; a second connection its record, and this one's record, close and
 * expire, are seen at the next read.
 * @module
 */
import type { Statement } from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRecommendationRepository } from '../../src/readouts/cognition/recommendation-store';
import { type Db, openDb } from '../../src/store/db';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

function selects(db: Db): { n: number } {
  const proto = Object.getPrototypeOf(db.prepare('SELECT 1')) as Statement;
  const out = { n: 0 };
  const original = proto.all as (...args: unknown[]) => unknown[];
  vi.spyOn(proto, 'all').mockImplementation(function (this: Statement, ...args: unknown[]) {
    if (this.source.includes('FROM recommendations')) out.n++;
    return original.apply(this, args);
  } as never);
  return out;
}

describe('pending recommendations from memory', () => {
  it('ENGINE-READS-4 one read while nothing changed; writes of a second connection and of this one are seen', async () => {
    const dataDir = tmpWorkspace();
    const mine = openDb({ dataDir });
    const theirs = openDb({ dataDir });
    opened.push(mine, theirs);
    let n = 0;
    const clock = { now: () => 1_000 + n };
    const ids = (who: string) => ({
      next: (prefix: string) => `${prefix}_${who}_${String(n++).padStart(3, '0')}`,
    });
    const repo = createRecommendationRepository({ db: () => mine, clock, ids: ids('a') });
    const other = createRecommendationRepository({ db: () => theirs, clock, ids: ids('b') });
    const rec = {
      zone: 'loop_detection',
      kind: 'revise_instructions',
      payload: {},
      window_seconds: 3600,
    } as const;
    await other.record({ ...rec, session_id: 's1' });

    const counted = selects(mine);
    expect((await repo.pending({ session_id: 's1' })).length).toBe(1);
    expect(await repo.pending({ session_id: 's2' })).toEqual([]);
    expect((await repo.pending({ zone: 'loop_detection', kind: 'revise_instructions' })).length).toBe(1);
    expect(counted.n).toBe(1); // main: 3

    await other.record({ ...rec, session_id: 's2' }); // another process commits
    expect((await repo.pending({ session_id: 's2' })).map((r) => r.session_id)).toEqual(['s2']);
    expect(counted.n).toBe(2);

    const own = await repo.record({ ...rec, session_id: 's3' });
    expect((await repo.pending({ session_id: 's3' })).map((r) => r.id)).toEqual([own.id]);
    await repo.close(own.id, 'dismissed');
    expect(await repo.pending({ session_id: 's3' })).toEqual([]);
    n += 7_200_000; // every window passed
    expect(await repo.expire()).toBe(2);
    expect(await repo.pending()).toEqual([]);
  });
});
