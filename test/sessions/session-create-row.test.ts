/**
 * A new session's row on SQLite answered from the values inserted and the columns' defaults, with
 * no `RETURNING *` (issue 17 item 3, p-sqlcompat: every compat request creates its session). Pins:
 * the statement, and that the session answered is the row a read of the database gives, column for
 * column and in the same key order, for a bare session and one with every input set; the row kept
 * for the transaction's reads is that row too.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSessionStore } from '../../src/sessions/session-store';
import { type Db, openDb } from '../../src/store/db';
import { createIds, systemClock } from '../../src/util/ids';
import { countStatements, openTestDb } from '../helpers/sqlite-ledger';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

const storeOn = (db: Db) =>
  createSessionStore({ db: () => db, clock: systemClock, ids: createIds(), workspace: '/w' });

describe('a new session row on SQLite', () => {
  it('COMPAT-PERF-64: the INSERT answers no row, and the session is the row a read gives', async () => {
    const { db, dataDir } = openTestDb(opened);
    const sessions = storeOn(db);
    const counted = countStatements(db);
    const bare = await sessions.create();
    const inserts = counted.texts.filter((t) => t.startsWith('INSERT INTO sessions'));
    expect(inserts).toHaveLength(1);
    expect(inserts[0]).not.toContain('RETURNING'); // 9ff7955: `… RETURNING *`
    vi.restoreAllMocks();
    const full = await sessions.create({
      parent_id: bare.id,
      title: 'a title',
      mode: 'plan',
      agent: 'plan',
      model: 'fake/m1',
      metadata: { origin: 'openai_compat', nested: { n: 1 } },
    });

    // Another connection reads the rows as stored (no memo of this store's writes).
    const other = openDb({ dataDir });
    opened.push(other);
    const reader = storeOn(other);
    for (const created of [bare, full]) {
      const read = await reader.get(created.id);
      expect(created).toEqual(read);
      expect(Object.keys(created)).toEqual(Object.keys(read ?? {}));
    }
    expect(full).toMatchObject({ parent_id: bare.id, reasoning_effort: null, prompt_tokens: 0, cost: 0 });

    // In a transaction the kept row answers the read, and it is the stored row as well.
    db.exec('BEGIN IMMEDIATE');
    const inside = await sessions.create({ title: 'in a transaction' });
    const counting = countStatements(db);
    const kept = await sessions.require(inside.id);
    expect(counting.texts.filter((t) => t.startsWith('SELECT * FROM sessions'))).toHaveLength(0);
    vi.restoreAllMocks();
    db.exec('COMMIT');
    expect(kept).toEqual(await reader.get(inside.id));
    expect(Object.keys(kept)).toEqual(Object.keys((await reader.get(inside.id)) ?? {}));
  });

  it('COMPAT-PERF-72: a message appended in the millisecond its session was created in the same transaction makes no UPDATE of the session', async () => {
    const { db, dataDir } = openTestDb(opened);
    let at = 1_800_000_000_000;
    const sessions = createSessionStore({
      db: () => db,
      clock: { now: () => at },
      ids: createIds(),
      workspace: '/w',
    });
    const touches = (texts: string[]) => texts.filter((t) => t.startsWith('UPDATE sessions SET updated_at'));
    const user = (sessionId: string) => ({
      session_id: sessionId,
      role: 'user' as const,
      parts: [{ type: 'text' as const, text: 'hi' }],
    });

    // A compat request's start: the session and its first message in one transaction, one millisecond.
    db.exec('BEGIN IMMEDIATE');
    const counted = countStatements(db);
    const fresh = await sessions.create({ title: 'same ms' });
    const first = await sessions.appendMessage(user(fresh.id));
    expect(touches(counted.texts)).toHaveLength(0); // 0ca2824: 1
    // A later millisecond in the same transaction: the UPDATE sets the new time.
    at += 1;
    await sessions.appendMessage(user(fresh.id));
    expect(touches(counted.texts)).toHaveLength(1);
    // Its kept row follows: the next message in that millisecond makes none either.
    await sessions.appendMessage(user(fresh.id));
    expect(touches(counted.texts)).toHaveLength(1);
    vi.restoreAllMocks();
    db.exec('COMMIT');
    const reader = openDb({ dataDir });
    opened.push(reader);
    const stored = await storeOn(reader).get(fresh.id);
    expect(stored?.updated_at).toBe(at);
    expect(first.created_at).toBe(fresh.created_at);

    // Outside that transaction (no row kept) the UPDATE runs and checks the session exists.
    const outside = countStatements(db);
    await sessions.appendMessage(user(fresh.id));
    expect(touches(outside.texts)).toHaveLength(1);
    await expect(sessions.appendMessage(user('ses_missing'))).rejects.toMatchObject({ code: 'not_found' });
  });
});
