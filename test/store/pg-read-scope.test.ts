/**
 * A read scope on PostgreSQL (issue 18, item 6; src/store/read-scope.ts): inside
 * `withReadScope`, the session row is read from the database once; every write this process
 * makes to it (update, addUsage, a message append touching updated_at, delete) makes the next
 * read fresh, and so does the end of the transaction a write was in (its ROLLBACK, a savepoint
 * of it rolled back: a copy of an undone row is never served after it; its COMMIT, for copies
 * taken outside it), but a copy the transaction took itself (its write's row, a read on its
 * connection, a write it sent before its body ended and that answered after) stays at its COMMIT.
 * Outside a scope, and once the scope's function has settled, every read goes to the database.
 * Another node's write is seen by the next scope.
 */
import { describe, expect, it } from 'vitest';
import { createPostgresSessionStore } from '../../src/sessions/pg-session-store';
import type { SqlClient } from '../../src/store/postgres/client';
import { withReadScope } from '../../src/store/read-scope';
import { createSequentialIds } from '../../src/util/ids';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

/** The client, counting its reads of the session row. */
function counting(sql: SqlClient): { sql: SqlClient; reads: () => number } {
  let reads = 0;
  const one: SqlClient['one'] = (text, params) => {
    if (text.startsWith('SELECT * FROM sessions WHERE id')) reads++;
    return sql.one(text, params);
  };
  return { sql: { ...sql, one }, reads: () => reads };
}

async function stores() {
  const sql = await migratedDatabase(pg.cluster());
  const counted = counting(sql);
  let now = 1_000;
  const clock = { now: () => ++now };
  const store = createPostgresSessionStore({
    sql: counted.sql,
    clock,
    ids: createSequentialIds(),
    workspace: '/w',
  });
  return { sql, store, reads: counted.reads };
}

describe.skipIf(!pg.available)('read scope on PostgreSQL', () => {
  it('STORE-PG-scope-1: inside a scope the row is read once; each write of this process makes the next read fresh', async () => {
    const { sql, store, reads } = await stores();
    try {
      const session = await store.create({ title: 'one' });
      await withReadScope(async () => {
        // The row the create wrote is the scope's copy only inside the scope: this reads once.
        const before = reads();
        expect((await store.require(session.id)).title).toBe('one');
        expect((await store.get(session.id))?.title).toBe('one');
        expect(await store.root(session.id)).toBe(session.id);
        expect(reads() - before).toBe(1);
        await store.update(session.id, { title: 'two' });
        expect((await store.require(session.id)).title).toBe('two');
        await store.addUsage(session.id, { input_tokens: 5, output_tokens: 7, cost: 0.5 });
        expect((await store.require(session.id)).prompt_tokens).toBe(5);
        const touched = (await store.require(session.id)).updated_at;
        await store.appendMessage({ session_id: session.id, role: 'user', parts: [] });
        expect((await store.require(session.id)).updated_at).toBeGreaterThan(touched);
      });
      // Outside a scope every read goes to the database.
      const before = reads();
      await store.get(session.id);
      await store.get(session.id);
      expect(reads() - before).toBe(2);
    } finally {
      await sql.close();
    }
  });

  it('STORE-PG-scope-2: a copy read inside a transaction is not served after its ROLLBACK', async () => {
    const { sql, store } = await stores();
    try {
      const session = await store.create({ title: 'kept' });
      await withReadScope(async () => {
        await expect(
          sql.transaction(async () => {
            await store.update(session.id, { title: 'rolled back' });
            expect((await store.require(session.id)).title).toBe('rolled back');
            throw new Error('undo');
          }),
        ).rejects.toThrow('undo');
        expect((await store.require(session.id)).title).toBe('kept');
      });
    } finally {
      await sql.close();
    }
  });

  it("STORE-PG-scope-3: another node's write is seen by the next scope; a deleted session is gone at once", async () => {
    const { sql, store } = await stores();
    try {
      const session = await store.create({ title: 'a' });
      await withReadScope(async () => {
        expect((await store.require(session.id)).title).toBe('a');
        // Another node's write (statements this process's store did not make).
        await sql.run("UPDATE sessions SET title = 'b' WHERE id = $1", [session.id]);
        // One moment's reads: the scope keeps what it read (the operation owns the row).
        expect((await store.require(session.id)).title).toBe('a');
      });
      await withReadScope(async () => {
        expect((await store.require(session.id)).title).toBe('b');
        await store.delete(session.id);
        expect(await store.get(session.id)).toBeUndefined();
      });
    } finally {
      await sql.close();
    }
  });

  it("STORE-PG-72: a message append's session row is the scope's copy: the next read sends nothing, and sees its updated_at", async () => {
    const { sql, store, reads } = await stores();
    try {
      const session = await store.create({ title: 'appended' });
      await withReadScope(async () => {
        const before = reads();
        const touched = (await store.require(session.id)).updated_at;
        await store.appendMessage({ session_id: session.id, role: 'user', parts: [] });
        const after = await store.require(session.id);
        expect(after.updated_at).toBeGreaterThan(touched);
        expect(after.title).toBe('appended');
        expect(reads() - before).toBe(1);
        // Inside a transaction too; the copy it wrote stays at its COMMIT (STORE-PG-171).
        await sql.transaction(async () => {
          await store.appendMessage({ session_id: session.id, role: 'user', parts: [] });
          expect((await store.require(session.id)).updated_at).toBeGreaterThan(after.updated_at);
        });
        await store.require(session.id);
        expect(reads() - before).toBe(1);
      });
      // A missing session is still not_found, nothing written.
      await expect(
        store.appendMessage({ session_id: 'ses_missing', role: 'user', parts: [] }),
      ).rejects.toThrow(/no session/);
    } finally {
      await sql.close();
    }
  });

  it("STORE-PG-171: a transaction's own copy stays at its COMMIT; one read outside it meanwhile does not", async () => {
    const { sql, store, reads } = await stores();
    try {
      const session = await store.create({ title: 'a' });
      await withReadScope(async () => {
        let written!: () => void;
        const inTransaction = new Promise<void>((resolve) => {
          written = resolve;
        });
        // Started before the transaction: its read goes to another connection, which sees the
        // committed row ('a') until the COMMIT.
        const outside = (async () => {
          await inTransaction;
          return (await store.require(session.id)).title;
        })();
        await sql.transaction(async () => {
          // In a scope of its own: this scope's copy is the one read outside.
          await withReadScope(() => store.update(session.id, { title: 'b' }));
          written();
          expect(await outside).toBe('a');
        });
        // The outside copy went stale at the COMMIT: read again, the committed row.
        const before = reads();
        expect((await store.require(session.id)).title).toBe('b');
        expect(reads() - before).toBe(1);
        // The update's own row (RETURNING) stays, in the transaction and after its COMMIT.
        let inside = -1;
        await sql.transaction(async () => {
          await store.update(session.id, { title: 'c' });
          const at = reads();
          expect((await store.require(session.id)).title).toBe('c');
          inside = reads() - at;
        });
        const committed = reads();
        expect((await store.require(session.id)).title).toBe('c');
        expect([inside, reads() - committed]).toEqual([0, 0]);
      });
    } finally {
      await sql.close();
    }
  });

  it('STORE-PG-172: a copy a savepoint wrote is not served after it rolled back, though the transaction committed', async () => {
    const { sql, store, reads } = await stores();
    try {
      const session = await store.create({ title: 'kept' });
      await withReadScope(async () => {
        await sql.transaction(async () => {
          await store.update(session.id, { title: 'outer' });
          await expect(
            sql.transaction(async () => {
              await store.update(session.id, { title: 'undone' });
              throw new Error('undo');
            }),
          ).rejects.toThrow('undo');
        });
        const before = reads();
        expect((await store.require(session.id)).title).toBe('outer');
        expect(reads() - before).toBe(1);
      });
    } finally {
      await sql.close();
    }
  });

  it('STORE-PG-173: work a transaction started and did not await keeps the row its write answered after the body ended (a run after the compat start)', async () => {
    const { sql, store, reads } = await stores();
    try {
      let committed!: () => void;
      const ended = new Promise<void>((resolve) => {
        committed = resolve;
      });
      let run!: Promise<string>;
      let sessionId = '';
      await sql.transaction(async () => {
        sessionId = (await store.create({ title: 'started' })).id;
        // As the compat start's run: its prompt's append is sent while the body runs, answered
        // once it has ended, and the run reads its session after the COMMIT.
        run = withReadScope(async () => {
          await store.appendMessage({ session_id: sessionId, role: 'user', parts: [] });
          await ended;
          const before = reads();
          const { title } = await store.require(sessionId);
          return `${title} ${reads() - before}`;
        });
      });
      committed();
      expect(await run).toBe('started 0');
      expect(
        await sql.one('SELECT count(*)::int AS n FROM messages WHERE session_id = $1', [sessionId]),
      ).toEqual({
        n: 1,
      });
    } finally {
      await sql.close();
    }
  });
});
