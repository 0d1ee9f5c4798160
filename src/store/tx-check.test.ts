/**
 * The missed-token check (`SVC_TX_CHECK=1`, ./tx-check.ts; p-txcheck): a nested call inside an
 * open token body (`atomicallyWith`) not given the body's token throws an error naming the call,
 * where without the check it would wait for the body's end (a deadlock when the body awaits it);
 * an unrelated caller still waits, and with the check off nothing of it runs.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { atomicallyAsync, atomicallyWith, type Db, openDb, stepBatch } from './db';
import { setTxCheck } from './tx-check';

let dir: string;
let db: Db;
let checkWas: boolean;
const handle = () => db;
const rows = () => (db.prepare('SELECT n FROM t ORDER BY n').all() as { n: number }[]).map((r) => r.n);
const insert = (n: number) => db.prepare('INSERT INTO t VALUES (?)').run(n);
/** What `work` settled to by the next check phase: its answer, its error's message, or 'waiting'. */
async function settledSoon(work: Promise<unknown>): Promise<unknown> {
  const soon = new Promise((resolve) => setImmediate(() => setImmediate(() => resolve('waiting'))));
  return Promise.race([work.catch((error: Error) => `${error.name}: ${error.message}`), soon]);
}

beforeEach(() => {
  checkWas = setTxCheck(true);
  dir = mkdtempSync(join(tmpdir(), 'svc-txcheck-'));
  db = openDb({ dataDir: dir });
  db.exec('CREATE TABLE t (n INTEGER)');
});
afterEach(() => {
  setTxCheck(checkWas);
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the missed-token check (SQLite)', () => {
  it('COMPAT-PERF-290: a nested atomicallyAsync or atomicallyWith not given the open token body’s token throws, naming the call and the body; the body goes on', async () => {
    const seen: unknown[] = [];
    const body = atomicallyWith(handle, async (tx) => {
      insert(1);
      // Awaited by the body: without the check, a wait for this body's own end (a hang).
      seen.push(await settledSoon(atomicallyAsync(handle, async () => void insert(2))));
      seen.push(await settledSoon(atomicallyWith(handle, async () => void insert(3))));
      // From a deeper async context of the body, too.
      seen.push(await settledSoon((async () => atomicallyAsync(handle, async () => void insert(4)))()));
      await atomicallyAsync(handle, async () => void insert(5), tx);
      return 'done';
    });
    expect(await settledSoon(body)).toBe('done');
    expect(seen).toHaveLength(3);
    for (const [i, call] of ['atomicallyAsync', 'atomicallyWith', 'atomicallyAsync'].entries()) {
      expect(seen[i]).toMatch(
        new RegExp(`^MissedTxToken: svc \\(SVC_TX_CHECK\\): ${call} called inside an open token body`),
      );
      // The call's frames and the body's are this file's.
      expect(seen[i]).toMatch(
        /The call:\n.*tx-check\.test\.ts[\s\S]*The body, opened:\n.*tx-check\.test\.ts/,
      );
    }
    expect(rows()).toEqual([1, 5]);
    expect(db.inTransaction).toBe(false);
  });

  it('COMPAT-PERF-291: a stepBatch inside an open token body without its token throws; given the token it hands the body to the step batch', async () => {
    const missed = await atomicallyWith(handle, async () => {
      insert(1);
      try {
        stepBatch(handle);
        return 'no error';
      } catch (error) {
        return `${(error as Error).name}: ${(error as Error).message}`;
      }
    });
    expect(missed).toMatch(
      /^MissedTxToken: svc \(SVC_TX_CHECK\): stepBatch called inside an open token body/,
    );
    expect(db.inTransaction).toBe(false);
    await atomicallyWith(handle, async (tx) => {
      insert(2);
      stepBatch(handle, tx);
    });
    expect(db.inTransaction).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(db.inTransaction).toBe(false);
    expect(rows()).toEqual([1, 2]);
  });

  it('COMPAT-PERF-292: an unrelated caller during an open token body still waits for it (no error), and work the body left behind runs once it ended', async () => {
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => {
      resume = resolve;
    });
    let leftBehind: Promise<unknown> | undefined;
    const body = atomicallyWith(handle, async () => {
      insert(1);
      // Not awaited, and run after the body ended (its context descends from the body, which is closed).
      leftBehind = paused.then(() =>
        new Promise((resolve) => setImmediate(resolve)).then(() =>
          atomicallyAsync(handle, async () => void insert(3)),
        ),
      );
      await paused;
    });
    // Not inside the body: queued behind it on the connection, as without the check.
    const unrelated = atomicallyAsync(handle, async () => void insert(2));
    expect(await settledSoon(unrelated)).toBe('waiting');
    resume();
    await body;
    await unrelated;
    await leftBehind;
    expect(rows()).toEqual([1, 2, 3]);
  });

  it('COMPAT-PERF-293: with the check off a token body enters no AsyncLocalStorage scope, and a missed token waits as in production', async () => {
    setTxCheck(false);
    const proto = AsyncLocalStorage.prototype;
    const run = proto.run;
    let scopes = 0;
    proto.run = function (this: AsyncLocalStorage<unknown>, ...args: Parameters<typeof run>) {
      scopes++;
      return run.apply(this, args) as ReturnType<typeof run>;
    } as typeof run;
    let nested: unknown;
    try {
      await atomicallyWith(handle, async () => {
        insert(1);
        nested = atomicallyWith(handle, async () => void insert(2));
        // Waiting for this body's end: not awaited here, so no deadlock.
        expect(await settledSoon(nested as Promise<unknown>)).toBe('waiting');
      });
    } finally {
      proto.run = run;
    }
    await nested;
    expect(scopes).toBe(0);
    expect(rows()).toEqual([1, 2]);
  });
});
