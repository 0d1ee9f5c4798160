/**
 * A transaction body handed its token with no async scope (`atomicallyWith`, p-txtoken): nested
 * calls given the token join it, no `AsyncLocalStorage` scope is entered (Node 20's promise hooks
 * stay off), an unrelated caller's call waits for the body instead of joining it, and work the body
 * left behind joins no ended body.
 */
import { AsyncLocalStorage, executionAsyncId } from 'node:async_hooks';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { atomicallyAsync, atomicallyWith, type Db, openDb, stepBatch, type TxToken } from './db';
import { setTxCheck } from './tx-check';

/** The async id a promise continuation runs under: 0 while no async hook tracks promises. */
async function continuationId(): Promise<number> {
  await null;
  return executionAsyncId();
}

let dir: string;
let db: Db;
const handle = () => db;
const rows = () => (db.prepare('SELECT n FROM t ORDER BY n').all() as { n: number }[]).map((r) => r.n);
const insert = (n: number) => db.prepare('INSERT INTO t VALUES (?)').run(n);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-txtoken-'));
  db = openDb({ dataDir: dir });
  db.exec('CREATE TABLE t (n INTEGER)');
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a transaction body with its token (SQLite)', () => {
  it('COMPAT-PERF-251: no async scope is entered; a token-joined nested write rolls back with its body, and commits with it', async () => {
    // What production enters: the missed-token check's own scope off (./tx-check.ts).
    const checkWas = setTxCheck(false);
    const proto = AsyncLocalStorage.prototype;
    const run = proto.run;
    let scopes = 0;
    proto.run = function (this: AsyncLocalStorage<unknown>, ...args: Parameters<typeof run>) {
      scopes++;
      return run.apply(this, args) as ReturnType<typeof run>;
    } as typeof run;
    let hooks = -1;
    let failed: unknown;
    try {
      failed = await atomicallyWith(handle, async (tx) => {
        insert(1);
        // A nested body given the token joins this one (a savepoint of it, no wait on the queue).
        await atomicallyAsync(
          handle,
          async () => {
            await null;
            insert(2);
          },
          tx,
        );
        await atomicallyWith(
          handle,
          async (inner) => {
            expect(inner).toBe(tx);
            insert(3);
          },
          tx,
        );
        hooks = await continuationId();
        throw new Error('body failed');
      }).catch((error: Error) => error.message);
      await atomicallyWith(handle, async (tx) => {
        insert(4);
        await atomicallyAsync(handle, async () => void insert(5), tx);
      });
    } finally {
      proto.run = run;
      setTxCheck(checkWas);
    }
    expect(failed).toBe('body failed');
    expect(scopes).toBe(0);
    // No promise hooks inside the body (on Node 20, a scoped body's continuations have an id).
    expect(hooks).toBe(0);
    expect(rows()).toEqual([4, 5]);
    expect(db.inTransaction).toBe(false);
  });

  it('COMPAT-PERF-252: an unrelated caller during an open token body does not join it: it waits, and its write survives the body’s rollback', async () => {
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => {
      resume = resolve;
    });
    const order: string[] = [];
    const body = atomicallyWith(handle, async () => {
      insert(1);
      order.push('body');
      await paused;
      order.push('body resumed');
      throw new Error('body failed');
    }).catch((error: Error) => error.message);
    // Not inside the body (no token, no scope): queued behind it on the connection.
    const unrelated = atomicallyAsync(handle, async () => {
      order.push('unrelated');
      insert(2);
    });
    await Promise.resolve();
    order.push('tick');
    resume();
    expect(await body).toBe('body failed');
    await unrelated;
    expect(order).toEqual(['body', 'tick', 'body resumed', 'unrelated']);
    expect(rows()).toEqual([2]);
  });

  it('COMPAT-PERF-253: work a token body left behind, run once it ended with its token, joins no ended body: its transaction is its own', async () => {
    let ended!: () => void;
    const bodyEnded = new Promise<void>((resolve) => {
      ended = resolve;
    });
    let left: Promise<string> | undefined;
    let token: TxToken | undefined;
    await atomicallyWith(handle, async (tx) => {
      token = tx;
      insert(1);
      left = (async () => {
        await bodyEnded;
        return atomicallyAsync(
          handle,
          async () => {
            insert(2);
            throw new Error('rolled back');
          },
          tx,
        ).catch((error: Error) => error.message);
      })();
    });
    expect(token?.open).toBe(false);
    ended();
    expect(await left).toBe('rolled back');
    expect(rows()).toEqual([1]);
  });

  it('COMPAT-PERF-254: a step batch asked with the token makes the body’s transaction the step batch (committed at the check phase)', async () => {
    await atomicallyWith(handle, async (tx) => {
      insert(1);
      stepBatch(handle, tx);
    });
    // Handed to the step batch at the body's end, not committed: a write now joins it.
    expect(db.inTransaction).toBe(true);
    insert(2);
    await new Promise((resolve) => setImmediate(resolve));
    expect(db.inTransaction).toBe(false);
    expect(rows()).toEqual([1, 2]);
    // Without the token (no scope either) the body commits at its end: production's path, the
    // missed-token check off (with it on, this stepBatch throws: COMPAT-PERF-291).
    const checkWas = setTxCheck(false);
    try {
      await atomicallyWith(handle, async () => {
        insert(3);
        stepBatch(handle);
      });
    } finally {
      setTxCheck(checkWas);
    }
    expect(db.inTransaction).toBe(false);
    expect(rows()).toEqual([1, 2, 3]);
  });
});
