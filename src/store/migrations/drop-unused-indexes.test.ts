/**
 * STORE-140: migration 4 drops the message_search_docs_time index no query used (issue 17 item
 * 3): on a database of the schema before it, the migration keeps every message and search row,
 * search by text, session and date answers as before, and the index is gone.
 */
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../../test/helpers/tmp-workspace';
import { createSessionStore } from '../../sessions/session-store';
import { createSequentialIds } from '../../util/ids';
import { type Db, openDb } from '../db';
import { migrations } from './index';

const indexes = (db: Db) =>
  (
    db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'message_search_docs'")
      .all() as {
      name: string;
    }[]
  ).map((r) => r.name);

describe('dropping unused indexes', () => {
  it('STORE-140 drops message_search_docs_time on an old database and keeps its data and answers', async () => {
    const dataDir = tmpWorkspace();
    const old = openDb({ dataDir, migrations: migrations.filter((m) => m.id < 4) });
    let now = 1_000;
    const store = (db: Db) =>
      createSessionStore({
        db: () => db,
        clock: { now: () => now },
        ids: createSequentialIds(),
        workspace: '/w',
      });
    const oldStore = store(old);
    const a = await oldStore.create({ title: 'a' });
    const b = await oldStore.create({ title: 'b' });
    for (const [i, session] of [a, b, a, b].entries()) {
      now = 2_000 + i * 1_000;
      await oldStore.appendMessage({
        session_id: session.id,
        role: 'user',
        parts: [{ type: 'text', text: `wombat ${i}` }],
      });
    }
    expect(indexes(old)).toContain('message_search_docs_time');
    const query = (s: ReturnType<typeof store>) =>
      Promise.all([
        s.search('wombat'),
        s.search('wombat', { session_id: a.id }),
        s.search('wombat', { since: 3_000, until: 4_000 }),
      ]);
    const before = await query(oldStore);
    const docs = old.prepare('SELECT * FROM message_search_docs ORDER BY id').all();
    old.close();

    const db = openDb({ dataDir });
    expect(indexes(db)).not.toContain('message_search_docs_time');
    expect(db.prepare('SELECT * FROM message_search_docs ORDER BY id').all()).toEqual(docs);
    expect(before[0].length).toBe(2);
    expect(before[2].length).toBeGreaterThan(0);
    expect(await query(store(db))).toEqual(before);
  });
});
