import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { atomicallyAsync, enableGroupCommit, groupCommit, openDb, stepBatch } from './db';
import { statementCache } from './statement-cache';
import { transactionMemo } from './transaction-memo';

enableGroupCommit();

const insert = (db: ReturnType<typeof openDb>, id: string) =>
  db.prepare('INSERT INTO sessions (id, title, created_at, updated_at) VALUES (?, ?, 1, 1)').run(id, id);
const count = (db: ReturnType<typeof openDb>) =>
  (db.prepare('SELECT count(*) AS n FROM sessions').get() as { n: number }).n;

describe('transaction statements', () => {
  it('STORE-100: async bodies and batches run prepared BEGIN/COMMIT/SAVEPOINT/RELEASE, never a new SQL text', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const texts = new Set<string>();
    const exec = db.exec.bind(db);
    db.exec = ((sql: string) => {
      texts.add(sql);
      return exec(sql);
    }) as typeof db.exec;
    for (let i = 0; i < 5; i++) {
      // an async body on its own (BEGIN/COMMIT), the turn's group commit, one inside a batch (a savepoint)
      await atomicallyAsync(
        () => db,
        async () => insert(db, `ses_own_${i}`),
      );
      groupCommit(db);
      await Promise.resolve();
      stepBatch(() => db); // open until the check phase: the next body is a savepoint of it
      await atomicallyAsync(
        () => db,
        async () => insert(db, `ses_in_${i}`),
      );
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(count(db)).toBe(10);
    expect([...texts]).toEqual([]);
    db.close();
  });

  it('STORE-101: a failed body inside a batch rolls back only its own rows, and drops the memos', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    stepBatch(() => db); // commits at the check phase: still open when the body has failed
    insert(db, 'ses_kept');
    const owner = {};
    transactionMemo<number>(db, owner)?.set('k', 1);
    await expect(
      atomicallyAsync(
        () => db,
        async () => {
          insert(db, 'ses_lost');
          throw new Error('body failed');
        },
      ),
    ).rejects.toThrow('body failed');
    expect(transactionMemo<number>(db, owner)?.get('k')).toBeUndefined();
    expect(db.inTransaction).toBe(true); // the batch is still open
    await new Promise((resolve) => setImmediate(resolve));
    expect(db.inTransaction).toBe(false);
    expect(db.prepare('SELECT id FROM sessions').all()).toEqual([{ id: 'ses_kept' }]);
    db.close();
  });

  it('STORE-160: the transaction statements and every statementCache share one prepared statement per handle and text', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const prepared: string[] = [];
    const prepare = db.prepare.bind(db);
    db.prepare = ((sql: string) => {
      prepared.push(sql);
      return prepare(sql);
    }) as typeof db.prepare;
    await atomicallyAsync(
      () => db,
      async () => insert(db, 'ses_one'),
    );
    const first = statementCache(() => db);
    const second = statementCache(() => db);
    const select = 'SELECT count(*) AS n FROM sessions';
    expect(first('COMMIT')).toBe(second('COMMIT'));
    expect(first(select)).toBe(second(select));
    expect((second(select).get() as { n: number }).n).toBe(1);
    // BEGIN IMMEDIATE and COMMIT by the async body, the INSERT, the SELECT: each prepared once.
    expect(prepared.filter((sql) => sql !== select && !sql.startsWith('INSERT'))).toEqual([
      'BEGIN IMMEDIATE',
      'COMMIT',
    ]);
    expect(prepared.filter((sql) => sql === select)).toHaveLength(1);
    db.close();
  });

  it('STORE-161: group commits read no environment variable (the checkpoint worker flag is read where group commit is turned on)', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const env = process.env;
    const read: string[] = [];
    process.env = new Proxy(env, {
      get(target, key) {
        if (typeof key === 'string') read.push(key);
        return Reflect.get(target, key);
      },
    });
    try {
      for (let i = 0; i < 20; i++) {
        groupCommit(db);
        insert(db, `ses_${i}`);
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      process.env = env;
    }
    expect(count(db)).toBe(20);
    expect(read).toEqual([]);
    db.close();
  });
});
