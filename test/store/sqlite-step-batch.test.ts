/**
 * A step batch asked for while a transaction is open (issue 17 item 3): a compat request's run asks
 * for one inside the request's own async transaction (src/agent/run-loop.ts `prepare`), and the
 * turn's group-commit batch may be open when a step asks. The open transaction becomes the step
 * batch: the writes that follow in the busy stretch join it, one commit at the check phase, where
 * before the body committed at its end and the writes after it committed on their own.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  atomicallyAsync,
  type Db,
  enableGroupCommit,
  groupCommit,
  openDb,
  stepBatch,
} from '../../src/store/db';
import { tmpWorkspace } from '../helpers/tmp-workspace';

enableGroupCommit();

const opened: Db[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});

function twoConnections() {
  const dataDir = tmpWorkspace();
  const db = openDb({ dataDir });
  const other = openDb({ dataDir });
  opened.push(db, other);
  const begins: string[] = [];
  const exec = db.exec.bind(db);
  db.exec = ((sql: string) => {
    if (/^(BEGIN|COMMIT|ROLLBACK)/.test(sql)) begins.push(sql);
    return exec(sql);
  }) as Db['exec'];
  // The async bodies and batches run them as statements prepared on the handle.
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => {
    const statement = prepare(sql);
    if (!/^(BEGIN|COMMIT|ROLLBACK)/.test(sql)) return statement;
    const run = statement.run.bind(statement);
    return Object.assign(Object.create(statement), {
      run: (...args: unknown[]) => {
        begins.push(sql);
        return run(...args);
      },
    });
  }) as Db['prepare'];
  return { db, other, begins };
}
const insert = (db: Db, id: string) =>
  db.prepare('INSERT INTO sessions (id, title, created_at, updated_at) VALUES (?, ?, 1, 1)').run(id, id);
const count = (db: Db) => (db.prepare('SELECT count(*) AS n FROM sessions').get() as { n: number }).n;
const checkPhase = () => new Promise((resolve) => setImmediate(resolve));

describe('a step batch asked for in an open transaction', () => {
  it('STORE-44 inside an async transaction’s body: the body’s transaction becomes the batch, one commit at the check phase', async () => {
    const { db, other, begins } = twoConnections();
    await atomicallyAsync(
      () => db,
      async () => {
        insert(db, 'ses_a');
        stepBatch(() => db);
      },
    );
    // The body ended: its rows are not committed yet, the writes after it join them.
    expect(db.inTransaction).toBe(true);
    groupCommit(db);
    insert(db, 'ses_b');
    expect(count(other)).toBe(0);
    await checkPhase();
    expect(db.inTransaction).toBe(false);
    expect(count(other)).toBe(2);
    expect(begins).toEqual(['BEGIN IMMEDIATE', 'COMMIT']);
    // A body that asks and then fails rolls back as before; one that does not ask commits at its end.
    await expect(
      atomicallyAsync(
        () => db,
        async () => {
          insert(db, 'ses_c');
          stepBatch(() => db);
          throw new Error('no');
        },
      ),
    ).rejects.toThrow('no');
    expect(db.inTransaction).toBe(false);
    await atomicallyAsync(
      () => db,
      async () => insert(db, 'ses_d'),
    );
    expect(db.inTransaction).toBe(false);
    expect(count(other)).toBe(3);
  });

  it('STORE-45 inside the turn’s group-commit batch: its commit moves to the check phase', async () => {
    const { db, other, begins } = twoConnections();
    groupCommit(db);
    insert(db, 'ses_a');
    stepBatch(() => db);
    await Promise.resolve();
    await new Promise<void>((resolve) => queueMicrotask(resolve));
    // Past the turn's microtasks: still open, the next stretch's writes join it.
    expect(db.inTransaction).toBe(true);
    insert(db, 'ses_b');
    await checkPhase();
    expect(db.inTransaction).toBe(false);
    expect(count(other)).toBe(2);
    expect(begins).toEqual(['BEGIN IMMEDIATE', 'COMMIT']);
  });
});
