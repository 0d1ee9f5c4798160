import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { atomicallyAsync, enableGroupCommit, groupCommit, openDb, stepBatch } from './db';
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
});
