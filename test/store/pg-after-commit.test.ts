/**
 * The store port's after-commit hook (`StoreTransactions.afterTransaction`, p-aftercommit): work
 * that must read what the transaction it was asked in committed (a joined send's queue drain after
 * its caller's COMMIT) runs once that transaction has ended, on both backends; outside one, in a
 * microtask.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Db, openDb } from '../../src/store/db';
import { createPostgresClient } from '../../src/store/postgres/client';
import { postgresTransactions, sqliteTransactions } from '../../src/store/transactions';
import { postgresForFile } from '../helpers/postgres';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const pg = postgresForFile();

describe.skipIf(!pg.available)('the after-commit hook on PostgreSQL', () => {
  it('STORE-PG-821: asked in a transaction (its body or a joined call), it runs after the COMMIT, when another connection sees the rows; outside one, in a microtask', async () => {
    const db = await createPostgresClient({
      url: await pg.cluster().createDatabase(),
      pool_size: 4,
      statement_timeout_ms: 30_000,
      connect_timeout_ms: 2_000,
    });
    try {
      await db.run('CREATE TABLE t (id BIGINT PRIMARY KEY)');
      const transactions = postgresTransactions(db);
      const seen: string[] = [];
      let ran!: () => void;
      const hooked = new Promise<void>((resolve) => {
        ran = resolve;
      });
      let seenByOther: Promise<number[]> | undefined;
      await transactions.run(async () => {
        await db.run('INSERT INTO t VALUES (1)');
        await transactions.join(async () => {
          await db.run('INSERT INTO t VALUES (2)');
          transactions.afterTransaction(() => {
            seen.push('hook');
            // Another connection, at once: the COMMIT has answered.
            seenByOther = db.autocommit
              .query<{ id: number }>('SELECT id FROM t ORDER BY id')
              .then((rows) => rows.map((r) => r.id));
            ran();
          });
        });
        await Promise.resolve();
        seen.push('body end');
      });
      seen.push('committed');
      await hooked;
      expect(seen).toEqual(['body end', 'hook', 'committed']);
      expect(await seenByOther).toEqual([1, 2]);

      // Outside a transaction: not at once, in a microtask.
      const outside: string[] = [];
      transactions.afterTransaction(() => outside.push('hook'));
      outside.push('after the call');
      await Promise.resolve();
      expect(outside).toEqual(['after the call', 'hook']);

      // A transaction that rolls back: after its ROLLBACK.
      let rolledBack = false;
      await expect(
        transactions.run(async () => {
          await db.run('INSERT INTO t VALUES (3)');
          transactions.afterTransaction(() => {
            rolledBack = !db.inTransaction();
          });
          throw new Error('no');
        }),
      ).rejects.toThrow('no');
      await Promise.resolve();
      expect(rolledBack).toBe(true);
    } finally {
      await db.close();
    }
  });
});

describe('the after-commit hook on SQLite', () => {
  const opened: Db[] = [];
  afterEach(() => {
    for (const db of opened.splice(0)) db.close();
  });

  it('STORE-PG-822: asked in a body (by its token or the async scope), it runs after the body’s COMMIT, when another connection sees the rows; outside one, in a microtask', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const other = openDb({ dataDir });
    opened.push(db, other);
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
    const transactions = sqliteTransactions(() => db);
    const ids = () =>
      (other.prepare('SELECT id FROM t ORDER BY id').all() as { id: number }[]).map((r) => r.id);
    const seen: string[] = [];
    let seenByOther: number[] | undefined;
    // A token body (no async scope) and a scoped one: the hook found through either.
    await transactions.runWith(async (tx) => {
      db.prepare('INSERT INTO t VALUES (1)').run();
      await transactions.join(async () => {
        db.prepare('INSERT INTO t VALUES (2)').run();
        transactions.afterTransaction(() => {
          seen.push('token hook');
          seenByOther = ids();
        }, tx);
      }, tx);
      seen.push('token body end');
    });
    await Promise.resolve();
    expect(seen).toEqual(['token body end', 'token hook']);
    expect(seenByOther).toEqual([1, 2]);

    seen.length = 0;
    await transactions.run(async () => {
      db.prepare('INSERT INTO t VALUES (3)').run();
      transactions.afterTransaction(() => {
        seen.push('scoped hook');
        seenByOther = ids();
      });
      await Promise.resolve();
      seen.push('scoped body end');
    });
    await Promise.resolve();
    expect(seen).toEqual(['scoped body end', 'scoped hook']);
    expect(seenByOther).toEqual([1, 2, 3]);

    // Outside a body: not at once, in a microtask.
    const outside: string[] = [];
    transactions.afterTransaction(() => outside.push('hook'));
    outside.push('after the call');
    await Promise.resolve();
    expect(outside).toEqual(['after the call', 'hook']);
  });
});
