/**
 * A SQLite session's fixed columns known beyond the statement that wrote or read them (issue 17
 * item 3, p-sqlusage; src/sessions/session-row-known.ts): a step's usage UPDATE (`addUsage`,
 * `closeStep`) of a session this store created or read returns only the columns some writer may
 * change (9 of 14), the id, parent, workspace and `created_at` taken from the row it holds. Pinned:
 * the statement's text, the answers equal to the stored rows (keys in order) and to what the
 * transaction's kept row answers after; another connection's writes (a second better-sqlite3 handle
 * on the same file) to every other column seen; a session gone (deleted elsewhere, rolled back,
 * deleted here) answering nothing or its new row as `RETURNING *` did.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import { createSessionStore } from '../../src/sessions/session-store';
import { DB_FILE, type Db } from '../../src/store/db';
import { createIds } from '../../src/util/ids';
import { closedAfterEach, countStatements, openTestDb } from '../helpers/sqlite-ledger';

const { opened, others } = closedAfterEach();

const USAGE_UPDATE =
  'UPDATE sessions SET prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?, cost = cost + ?, updated_at = ? WHERE id = ?';
const SHORT = `${USAGE_UPDATE} RETURNING title, mode, agent, model, reasoning_effort, prompt_tokens, completion_tokens, cost, metadata`;
const WHOLE = `${USAGE_UPDATE} RETURNING *`;
const USAGE = { input_tokens: 10, output_tokens: 4, cost: 0.25 };

/** A session store over a fresh database (time moving a millisecond a call), and the file. */
function openStore() {
  const { db, dataDir } = openTestDb(opened);
  let at = 1_800_000_000_000;
  const store = createSessionStore({
    db: () => db,
    clock: { now: () => at++ },
    ids: createIds(),
    workspace: '/w',
  });
  return { db, file: join(dataDir, DB_FILE), store };
}

/** A second connection to the same file (another process's, as far as SQLite is concerned). */
function otherHandle(file: string): Database.Database {
  const other = new Database(file);
  others.push(other);
  other.pragma('busy_timeout = 5000');
  return other;
}

const stored = (db: Db, id: string) =>
  db.prepare('SELECT * FROM sessions WHERE id = ?').get(id) as Record<string, unknown> | undefined;
const usageTexts = (texts: string[]) =>
  texts.filter((t) => t.startsWith('UPDATE sessions SET prompt_tokens'));

describe('a session row known beyond its INSERT (SQLite)', () => {
  it('COMPAT-PERF-486: the usage UPDATE of a session this store created or read returns 9 columns, no `*`, and answers the stored row, keys in order', async () => {
    const { db, file, store } = openStore();
    const parent = await store.create({ title: 'parent' });
    const child = await store.create({ parent_id: parent.id, title: 'child', metadata: { a: 1 } });
    // A session another connection created: held once this store has read it.
    otherHandle(file)
      .prepare(
        `INSERT INTO sessions (id, parent_id, title, workspace, metadata, created_at, updated_at)
         VALUES ('ses_read', ?, 'read', '/elsewhere', '{"b":2}', 5, 5)`,
      )
      .run(parent.id);
    const read = await store.get('ses_read');
    if (!store.closeStep) throw new Error('the SQLite session store has no closeStep');

    const counted = countStatements(db);
    const answers = [
      [await store.addUsage(child.id, USAGE), child.id],
      [await store.closeStep({ sessionId: parent.id, messages: [], usage: USAGE }), parent.id],
      [await store.addUsage('ses_read', USAGE), 'ses_read'],
      [await store.addUsage(child.id, USAGE), child.id],
    ] as const;
    vi.restoreAllMocks();
    expect(usageTexts(counted.texts)).toEqual([SHORT, SHORT, SHORT, SHORT]); // 4b09f78d: WHOLE

    const reader = createSessionStore({
      db: () => db,
      clock: { now: () => 0 },
      ids: createIds(),
      workspace: '/w',
    });
    for (const [answer, id] of answers.slice(1)) {
      const row = await reader.get(id);
      expect(answer).toEqual(row);
      expect(Object.keys(answer ?? {})).toEqual(Object.keys(stored(db, id) ?? {}));
    }
    expect(answers[0][0]).toMatchObject({ prompt_tokens: 10, completion_tokens: 4, cost: 0.25 });
    expect(answers[3][0]).toMatchObject({
      id: child.id,
      parent_id: parent.id,
      workspace: '/w',
      created_at: child.created_at,
      metadata: { a: 1 },
      prompt_tokens: 20,
      completion_tokens: 8,
      cost: 0.5,
    });
    expect(answers[2][0]).toMatchObject({ workspace: '/elsewhere', created_at: 5, parent_id: parent.id });
    expect(read?.workspace).toBe('/elsewhere');
  });

  it('COMPAT-PERF-487: another connection’s change to a non-fixed column (title, mode, metadata…) shows in the answer and the transaction’s kept row', async () => {
    const { db, file, store } = openStore();
    const session = await store.create({ title: 'before', model: 'fake/m1' });
    const other = otherHandle(file);
    other
      .prepare(
        `UPDATE sessions SET title = 'after', mode = 'plan', agent = 'plan', model = NULL,
           reasoning_effort = 'high', metadata = '{"by":"other"}', prompt_tokens = 100,
           completion_tokens = 50, cost = 2, updated_at = 7 WHERE id = ?`,
      )
      .run(session.id);

    db.exec('BEGIN IMMEDIATE');
    const answer = await store.addUsage(session.id, USAGE);
    const kept = await store.require(session.id); // the transaction's kept row: no read
    db.exec('COMMIT');
    expect(answer).toMatchObject({
      title: 'after',
      mode: 'plan',
      agent: 'plan',
      model: null,
      reasoning_effort: 'high',
      metadata: { by: 'other' },
      prompt_tokens: 110,
      completion_tokens: 54,
      cost: 2.25,
    });
    const row = stored(db, session.id);
    expect(answer).toEqual({ ...row, metadata: { by: 'other' } });
    expect(Object.keys(answer ?? {})).toEqual(Object.keys(row ?? {}));
    expect(kept).toEqual(answer);
  });

  it('COMPAT-PERF-488: a session gone answers nothing; one deleted here and written again elsewhere answers its new row', async () => {
    const { db, file, store } = openStore();
    const other = otherHandle(file);
    // Deleted by another connection.
    const elsewhere = await store.create({ title: 'deleted elsewhere' });
    other.prepare('DELETE FROM sessions WHERE id = ?').run(elsewhere.id);
    expect(await store.addUsage(elsewhere.id, USAGE)).toBeUndefined();
    // Created in a transaction that rolled back.
    db.exec('BEGIN IMMEDIATE');
    const rolledBack = await store.create({ title: 'rolled back' });
    db.exec('ROLLBACK');
    expect(await store.addUsage(rolledBack.id, USAGE)).toBeUndefined();
    expect(stored(db, rolledBack.id)).toBeUndefined();
    // Deleted by this store: forgotten, so a row of that id written after is read back whole.
    const here = await store.create({ title: 'deleted here' });
    await store.delete(here.id);
    other
      .prepare(
        `INSERT INTO sessions (id, title, workspace, created_at, updated_at) VALUES (?, 'again', '/other', 3, 3)`,
      )
      .run(here.id);
    const counted = countStatements(db);
    const again = await store.addUsage(here.id, USAGE);
    vi.restoreAllMocks();
    expect(usageTexts(counted.texts)).toEqual([WHOLE]);
    expect(again).toEqual({ ...stored(db, here.id), metadata: {} });
    expect(again).toMatchObject({ workspace: '/other', created_at: 3, title: 'again', prompt_tokens: 10 });
  });
});
