/**
 * The messages a SQLite write transaction wrote (src/sessions/written-messages.ts): a write, a
 * rewrite and a delete cost the same however many messages the transaction already wrote (a
 * compat request importing a long history wrote each of them with a scan of the ones before: 40k
 * messages took 48 s, the server answering nobody meanwhile). Counted, not timed: how often a row's
 * `id` is read; the session's list keeps write order, a rewrite in place, a delete dropped.
 */
import { describe, expect, it } from 'vitest';
import type { MessageRow } from '../../src/sessions/types';
import { writtenMessages } from '../../src/sessions/written-messages';
import { closedAfterEach, openTestDb } from '../helpers/sqlite-ledger';

const { opened } = closedAfterEach();

/** A row whose `id` counts its reads. */
function countedRow(id: string, created_at: number, reads: { n: number }, text = 'a'): MessageRow {
  const row = {
    session_id: 'ses_1',
    role: 'user',
    parts: JSON.stringify([{ type: 'text', text }]),
    model: null,
    provider: null,
    usage: null,
    cost: 0,
    run_id: null,
    created_at,
    updated_at: created_at,
    finished_at: created_at,
  } as unknown as MessageRow;
  Object.defineProperty(row, 'id', {
    enumerable: true,
    get: () => {
      reads.n++;
      return id;
    },
  });
  return row;
}

describe('the messages a transaction wrote', () => {
  it('WRITTEN-MESSAGES-1: each write, rewrite and delete reads a bounded number of ids, whatever the count before it', () => {
    const { db } = openTestDb(opened);
    const written = writtenMessages(() => db);
    const reads = { n: 0 };
    const count = 3000;
    db.transaction(() => {
      written.sessionCreated('ses_1');
      for (let i = 0; i < count; i++) written.wrote(countedRow(`msg_${i}`, i, reads));
      // Linear: a scan of the rows before each write read ~count²/2 = 4.5 million ids.
      expect(reads.n).toBeLessThanOrEqual(count * 4);
      reads.n = 0;
      written.wrote(countedRow('msg_10', 10, reads, 'rewritten'));
      written.deleted('msg_20');
      expect(reads.n).toBeLessThanOrEqual(4);
      const list = written.list('ses_1') ?? [];
      expect(list).toHaveLength(count - 1);
      expect(list[10].parts).toContain('rewritten');
      expect(list.slice(0, 22).map((row) => row.created_at)).toEqual([
        ...Array.from({ length: 20 }, (_, i) => i),
        ...[21, 22],
      ]);
      expect(written.row('msg_20')).toBeUndefined();
    })();
    expect(written.list('ses_1')).toBeUndefined();
  });
});
