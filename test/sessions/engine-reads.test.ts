/**
 * The session row inside a write transaction (issue 17 item 3): a compat request creates its
 * session, appends its prompt and reads the row back in one group-commit batch; the read is
 * answered from what the writes returned. Outside the transaction (or once it ended) a read goes
 * to the database and sees another process its writes.
 * @module
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
const sessionReads = (texts: string[]) => texts.filter((t) => t.startsWith('SELECT * FROM sessions')).length;

describe('session rows written in the transaction', () => {
  it('ENGINE-READS-5 a session created and appended to in one transaction is read back without a statement, as a read gives it', async () => {
    const { db } = openTestDb(opened);
    const sessions = storeOn(db);
    db.exec('BEGIN IMMEDIATE');
    const created = await sessions.create({ title: 't' });
    await sessions.appendMessage({
      session_id: created.id,
      role: 'user',
      parts: [{ type: 'text', text: 'hi' }],
    });
    const counted = countStatements(db);
    const fromMemory = await sessions.require(created.id);
    expect(sessionReads(counted.texts)).toBe(0); // main: 1
    vi.restoreAllMocks();
    db.exec('COMMIT');
    expect(fromMemory).toEqual(await sessions.get(created.id));

    // Its own writes in a transaction: what the read answers follows them.
    db.exec('BEGIN IMMEDIATE');
    await sessions.addUsage(created.id, { input_tokens: 5, output_tokens: 2, cost: 0.25 });
    await sessions.update(created.id, { title: 'renamed' });
    const inside = await sessions.get(created.id);
    db.exec('COMMIT');
    expect(inside).toMatchObject({ title: 'renamed', prompt_tokens: 5, completion_tokens: 2 });
    expect(inside).toEqual(await sessions.get(created.id));
  });

  it('ENGINE-READS-6 after the transaction ends a read sees a second connection its write; a rollback drops the memo', async () => {
    const { db, dataDir } = openTestDb(opened);
    const sessions = storeOn(db);
    db.exec('BEGIN IMMEDIATE');
    const created = await sessions.create({ title: 'mine' });
    db.exec('COMMIT');
    const other = openDb({ dataDir });
    opened.push(other);
    await storeOn(other).update(created.id, { title: 'theirs' });
    expect((await sessions.require(created.id)).title).toBe('theirs');

    db.exec('BEGIN IMMEDIATE');
    await sessions.appendMessage({ session_id: created.id, role: 'user', parts: [] });
    await sessions.addUsage(created.id, { input_tokens: 7, output_tokens: 0, cost: 0 });
    db.exec('ROLLBACK');
    const after = await sessions.require(created.id);
    expect(after.prompt_tokens).toBe(0);
    expect(after.title).toBe('theirs');
  });

  it('ENGINE-READS-7 a deleted session is not answered from the memo', async () => {
    const { db } = openTestDb(opened);
    const sessions = storeOn(db);
    db.exec('BEGIN IMMEDIATE');
    const created = await sessions.create();
    await sessions.delete(created.id);
    expect(await sessions.get(created.id)).toBeUndefined();
    db.exec('COMMIT');
  });
});
