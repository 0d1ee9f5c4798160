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

describe('messages written in the transaction', () => {
  it('ENGINE-READS-8 the history of a session created in the transaction and a message written in it are answered without a statement, as reads give them', async () => {
    const { db } = openTestDb(opened);
    const sessions = storeOn(db);
    db.exec('BEGIN IMMEDIATE');
    const created = await sessions.create();
    const user = await sessions.appendMessage({
      session_id: created.id,
      role: 'user',
      parts: [{ type: 'text', text: 'hi' }],
    });
    const reply = await sessions.appendMessage({
      session_id: created.id,
      role: 'assistant',
      parts: [],
      finished: false,
    });
    await sessions.updateMessage(reply.id, {
      parts: [{ type: 'text', text: 'yes' }],
      usage: { input_tokens: 1, output_tokens: 2 },
      finished: true,
    });
    const counted = countStatements(db);
    const history = await sessions.messages(created.id);
    const last = await sessions.messages(created.id, { after: user.id });
    const answer = await sessions.getMessage(reply.id);
    expect(counted.texts.filter((t) => t.includes('FROM messages'))).toEqual([]); // main: 3
    vi.restoreAllMocks();
    db.exec('COMMIT');
    expect(history).toEqual(await sessions.messages(created.id));
    expect(history.map((m) => m.id)).toEqual([user.id, reply.id]);
    expect(last).toEqual(await sessions.messages(created.id, { after: user.id }));
    expect(answer).toEqual(await sessions.getMessage(reply.id));
    // A caller changing what it got does not change the next answer.
    history[0].parts.push({ type: 'text', text: 'x' });
    expect((await sessions.messages(created.id))[0].parts).toHaveLength(1);
  });

  it('ENGINE-READS-9 a session not created in the transaction is read from the database, a second connection its message included; a deleted message is gone', async () => {
    const { db, dataDir } = openTestDb(opened);
    const sessions = storeOn(db);
    const created = await sessions.create();
    const other = openDb({ dataDir });
    opened.push(other);
    const theirs = await storeOn(other).appendMessage({ session_id: created.id, role: 'user', parts: [] });
    db.exec('BEGIN IMMEDIATE');
    const mine = await sessions.appendMessage({ session_id: created.id, role: 'user', parts: [] });
    expect((await sessions.messages(created.id)).map((m) => m.id)).toEqual([theirs.id, mine.id]);
    const fresh = await sessions.create();
    const gone = await sessions.appendMessage({ session_id: fresh.id, role: 'user', parts: [] });
    await sessions.deleteMessage(gone.id);
    expect(await sessions.messages(fresh.id)).toEqual([]);
    expect(await sessions.getMessage(gone.id)).toBeUndefined();
    await sessions.delete(created.id);
    expect(await sessions.getMessage(mine.id)).toBeUndefined();
    db.exec('COMMIT');
  });
});
