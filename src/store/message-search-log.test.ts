/**
 * The message search index written from a log (issue 17 item 2, migration 5): a message write
 * logs its id instead of indexing it in the step's commit; a search indexes the log first, so it
 * finds every committed message of every connection; the log is emptied a few seconds after a
 * write and when the database closes, without waiting on another connection's write lock; the
 * index the log builds is the one the old triggers built; a database from before the log keeps
 * its index and finds old and new messages.
 */
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { createSessionStore } from '../sessions/session-store';
import type { MessagePart } from '../sessions/types';
import { createSequentialIds } from '../util/ids';
import { type Db, openDb } from './db';
import { catchUpIfFree, catchUpMessageSearch, catchUpSoon } from './message-search-log';
import { migrations } from './migrations/index';

const storeOn = (db: Db, ids = createSequentialIds()) => {
  let now = 1_000;
  return createSessionStore({ db: () => db, clock: { now: () => (now += 1_000) }, ids, workspace: '/w' });
};
const text = (t: string): MessagePart[] => [{ type: 'text', text: t }];
const count = (db: Db, table: string) =>
  (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
const docs = (db: Db) =>
  db
    .prepare(
      'SELECT id, message_id, session_id, role, tools, created_at, body FROM message_search_docs ORDER BY id',
    )
    .all();

/** The writes of a few agent steps: appends, parts updates, a finish, deletes of a message and a session. */
async function steps(store: ReturnType<typeof storeOn>) {
  const a = await store.create({ title: 'a' });
  const b = await store.create({ title: 'b' });
  await store.appendMessage({ session_id: a.id, role: 'user', parts: text('find the narwhal') });
  const reply = await store.appendMessage({
    session_id: a.id,
    role: 'assistant',
    parts: [],
    finished: false,
  });
  await store.updateMessage(reply.id, {
    parts: [
      { type: 'text', text: 'looking for it' },
      { type: 'tool-call', tool_call_id: 'c1', tool: 'grep', input: { pattern: 'narwhal' } },
    ],
  });
  await store.appendMessage({
    session_id: a.id,
    role: 'tool',
    parts: [{ type: 'tool-result', tool_call_id: 'c1', tool: 'grep', output: 'src/sea.ts: narwhal tusk' }],
  });
  await store.updateMessage(reply.id, { finished: true });
  const gone = await store.appendMessage({ session_id: a.id, role: 'user', parts: text('a passing walrus') });
  await store.deleteMessage(gone.id);
  await store.appendMessage({ session_id: b.id, role: 'user', parts: text('the narwhal of b') });
  await store.delete(b.id);
  await store.appendMessage({ session_id: a.id, role: 'user', parts: text('and the narwhal again') });
  return a;
}

describe('message search index from a log', () => {
  it('ENGINE-CPU-160: a message write logs its id and leaves the index to the catch-up', async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const store = storeOn(db);
    const s = await store.create();
    const m = await store.appendMessage({ session_id: s.id, role: 'user', parts: text('an okapi') });
    await store.updateMessage(m.id, { parts: text('an okapi, edited') });
    expect(count(db, 'message_search_docs')).toBe(0);
    expect(db.prepare('SELECT message_id FROM message_search_pending ORDER BY id').all()).toEqual([
      { message_id: m.id },
      { message_id: m.id },
    ]);
    catchUpMessageSearch(db);
    expect(count(db, 'message_search_pending')).toBe(0);
    expect(docs(db)).toMatchObject([{ message_id: m.id, body: 'an okapi, edited' }]);
    // A write of something else than the parts logs nothing.
    await store.updateMessage(m.id, { finished: true });
    expect(count(db, 'message_search_pending')).toBe(0);
    db.close();
  });

  it("ENGINE-CPU-161: a search finds another connection's committed messages at once", async () => {
    const dataDir = tmpWorkspace();
    const writer = openDb({ dataDir });
    const reader = openDb({ dataDir });
    const ids = createSequentialIds();
    const writes = storeOn(writer, ids);
    const s = await writes.create();
    const m = await writes.appendMessage({ session_id: s.id, role: 'user', parts: text('a capybara') });
    expect((await storeOn(reader, ids).search('capybara')).map((h) => h.message_id)).toEqual([m.id]);
    await writes.updateMessage(m.id, { parts: text('a tapir now') });
    expect(await storeOn(reader, ids).search('capybara')).toEqual([]);
    expect((await storeOn(reader, ids).search('tapir')).map((h) => h.message_id)).toEqual([m.id]);
    expect(count(writer, 'message_search_pending')).toBe(0);
    writer.close();
    reader.close();
  });

  it('ENGINE-CPU-162: the index the log builds is the one the old triggers built', async () => {
    const old = openDb({ dataDir: tmpWorkspace(), migrations: migrations.filter((m) => m.id < 5) });
    const db = openDb({ dataDir: tmpWorkspace() });
    const a = await steps(storeOn(old));
    const b = await steps(storeOn(db));
    expect(a.id).toBe(b.id);
    catchUpMessageSearch(db);
    expect(docs(db)).toEqual(docs(old));
    expect(docs(db)).toHaveLength(4);
    for (const query of ['narwhal', 'walrus', 'tusk']) {
      const hits = async (store: ReturnType<typeof storeOn>) =>
        (await store.search(query, { tool: 'grep' })).map((h) => [h.message_id, h.snippet]);
      expect(await hits(storeOn(db))).toEqual(await hits(storeOn(old)));
    }
    old.close();
    db.close();
  });

  it('ENGINE-CPU-163: the log is emptied after a write and at close, never waiting for a held write lock', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const other = openDb({ dataDir });
    const ids = createSequentialIds();
    const store = storeOn(db, ids);
    const s = await store.create();
    // Written by the other connection (whose own timer this test leaves alone).
    await storeOn(other, ids).appendMessage({ session_id: s.id, role: 'user', parts: text('an axolotl') });
    // Another connection holds the write lock: the background catch-up gives up at once.
    other.prepare('BEGIN IMMEDIATE').run();
    expect(catchUpIfFree(db)).toBe(false);
    other.prepare('COMMIT').run();
    expect(count(db, 'message_search_pending')).toBe(1);
    // The timer a write arms catches up on its own.
    catchUpSoon(db, 5);
    await expect.poll(() => count(db, 'message_search_pending')).toBe(0);
    expect(docs(db)).toMatchObject([{ body: 'an axolotl' }]);
    // A closing connection catches up what it wrote.
    await store.appendMessage({ session_id: s.id, role: 'user', parts: text('a pangolin') });
    expect(count(other, 'message_search_pending')).toBe(1);
    db.close();
    expect(count(other, 'message_search_pending')).toBe(0);
    expect(docs(other)).toMatchObject([{ body: 'an axolotl' }, { body: 'a pangolin' }]);
    other.close();
  });

  it('ENGINE-CPU-164: a database from before the log keeps its index and finds old and new messages', async () => {
    const dataDir = tmpWorkspace();
    const old = openDb({ dataDir, migrations: migrations.filter((m) => m.id < 5) });
    const ids = createSequentialIds();
    const s = await storeOn(old, ids).create();
    const t = await storeOn(old, ids).create();
    const first = await storeOn(old, ids).appendMessage({
      session_id: s.id,
      role: 'user',
      parts: text('old gecko'),
    });
    const before = docs(old);
    old.close();
    const db = openDb({ dataDir });
    const triggers = db
      .prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'messages' ORDER BY name",
      )
      .all();
    expect(triggers).toEqual([
      { name: 'message_search_ad' },
      { name: 'message_search_log_ai' },
      { name: 'message_search_log_au' },
    ]);
    expect(docs(db)).toEqual(before);
    const store = storeOn(db, ids);
    const second = await store.appendMessage({ session_id: t.id, role: 'user', parts: text('new gecko') });
    expect((await store.search('gecko')).map((h) => h.message_id).sort()).toEqual(
      [first.id, second.id].sort(),
    );
    expect((await store.search('new gecko')).map((h) => h.message_id)).toEqual([second.id]);
    db.close();
  });

  it("a catch-up that fails reports to the database's warn sink (the App's log), not to stderr", async () => {
    const reported: string[] = [];
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const db = openDb({ dataDir: tmpWorkspace(), warn: (m) => reported.push(m) });
      const store = storeOn(db);
      const s = await store.create();
      await store.appendMessage({ session_id: s.id, role: 'user', parts: text('a quokka') });
      // An index the catch-up cannot write: it throws inside the timer, where nobody waits for it.
      db.exec('DROP TABLE message_search_docs');
      // The write armed the background catch-up (CATCH_UP_DELAY_MS); this arms nothing more.
      catchUpSoon(db, 1);
      await expect.poll(() => reported.length, { timeout: 10_000 }).toBeGreaterThan(0);
      expect(reported[0]).toMatch(/^svc: the message search index could not catch up: .*message_search_docs/);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.message.includes('message search index'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
