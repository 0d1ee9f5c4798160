import { AsyncLocalStorage, executionAsyncId } from 'node:async_hooks';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scopedStorage } from './async-scope';
import { atomicallyAsync, openDb } from './db';
import { enableReadScopes, readThrough, withReadScope } from './read-scope';

/** The async id a promise continuation runs under: 0 while no async hook tracks promises. */
async function continuationId(): Promise<number> {
  await null;
  return executionAsyncId();
}

/**
 * Whether this Node's `AsyncLocalStorage` tracks promises with async hooks (Node 20 and 22), the
 * cost `scopedStorage` bounds. Node 24 carries the store in an async context frame instead: no
 * promise hooks ever, and a callback keeps the frame it was made in, so work a closed scope left
 * behind still sees that scope's store (which is why svc's stores carry `open`).
 */
async function hooksBased(): Promise<boolean> {
  const probe = new AsyncLocalStorage<number>();
  const id = await probe.run(1, continuationId);
  probe.disable();
  return id !== 0;
}

describe('scoped async storage', () => {
  it('STORE-SCOPE-1: the store follows the awaits of its scope, nested scopes see their own, and a closed scope leaves no store', async () => {
    const storage = scopedStorage<string>();
    const seen: (string | undefined)[] = [];
    let later: Promise<string | undefined> | undefined;
    await storage.run('outer', async () => {
      await null;
      seen.push(storage.getStore());
      await storage.run('inner', async () => {
        await Promise.resolve();
        seen.push(storage.getStore());
      });
      seen.push(storage.getStore());
      later = new Promise((resolve) => setTimeout(() => resolve(storage.getStore()), 5));
    });
    expect(seen).toEqual(['outer', 'inner', 'outer']);
    expect(storage.open).toBe(0);
    expect(storage.getStore()).toBeUndefined();
    // With hooks the closed scope's store is gone for the work it left; with context frames that
    // work keeps its frame's store, closed (the stores in ./db.ts and ./read-scope.ts say `open`).
    expect(await later).toBe((await hooksBased()) ? undefined : 'outer');
  });

  it('STORE-SCOPE-2: promise hooks are on while a transaction body is open and off once it ended', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-scope-'));
    const db = openDb({ dataDir: dir });
    try {
      const inside = await atomicallyAsync(
        () => db,
        async () => {
          // A nested body joins the open one (no deadlock on the connection's queue).
          return atomicallyAsync(() => db, continuationId);
        },
      );
      // Hooks on inside the body where this Node uses them; off after it, on every Node.
      expect(inside !== 0).toBe(await hooksBased());
      expect(await continuationId()).toBe(0);
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('STORE-SCOPE-3: a read scope is no scope (and no promise hooks) until a repository reads through one', async () => {
    let loads = 0;
    const load = async () => ++loads;
    const twice = async () => [
      await readThrough('row', load),
      await readThrough('row', load),
      await continuationId(),
    ];
    const [, second, hooks] = await withReadScope(twice);
    expect(second).toBe(2);
    expect(hooks).toBe(0);
    enableReadScopes(); // what the PostgreSQL session store does when it is made
    const [first, again, inside] = await withReadScope(twice);
    expect(again).toBe(first);
    expect(inside !== 0).toBe(await hooksBased());
    expect(await continuationId()).toBe(0);
  });
});

describe('the hooks between bodies', () => {
  /** How often this process's `AsyncLocalStorage` hooks go on (a storage enabled). */
  function countEnables(): { enables: number; restore(): void } {
    const proto = AsyncLocalStorage.prototype as unknown as { _enable(): void };
    const enable = proto._enable;
    const counted = { enables: 0, restore: () => (proto._enable = enable) };
    proto._enable = function (this: { enabled: boolean }) {
      if (!this.enabled) counted.enables++;
      enable.call(this);
    };
    return counted;
  }

  it('COMPAT-PERF-190: bodies one after another each turn the hooks on and off, and the promises between them are made hook-free', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-scope-'));
    const db = openDb({ dataDir: dir });
    db.exec('CREATE TABLE t (n INTEGER)');
    const hooked = await hooksBased();
    const counted = countEnables();
    const between: number[] = [];
    try {
      for (let n = 0; n < 3; n++) {
        await atomicallyAsync(
          () => db,
          async () => {
            await null;
            db.prepare('INSERT INTO t VALUES (?)').run(n);
          },
        );
        between.push(await continuationId());
      }
      // Kept off in between (p-scopehooks): leaving them on to the end of the turn or to the
      // check phase saved the toggles (≈ 15 µs a body in the service) but hooked as many more
      // promises, and cost the same CPU a compat request (docs/performance-log.md). Node 24's
      // storage has no hooks to turn on.
      expect(counted.enables).toBe(hooked ? 3 : 0);
      expect(between).toEqual([0, 0, 0]);
      expect(db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 3 });
    } finally {
      counted.restore();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('COMPAT-PERF-191: work a body started and did not await, run once the body has ended, joins no body: its transaction is its own', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-scope-'));
    const db = openDb({ dataDir: dir });
    db.exec('CREATE TABLE t (n INTEGER)');
    try {
      let ended!: () => void;
      const bodyEnded = new Promise<void>((resolve) => {
        ended = resolve;
      });
      let left: Promise<string> | undefined;
      await atomicallyAsync(
        () => db,
        async () => {
          db.prepare('INSERT INTO t VALUES (1)').run();
          left = (async () => {
            await bodyEnded;
            return atomicallyAsync(
              () => db,
              async () => {
                db.prepare('INSERT INTO t VALUES (2)').run();
                throw new Error('rolled back');
              },
            ).catch((error: Error) => error.message);
          })();
        },
      );
      ended();
      // Its own transaction, rolled back: joined to the ended body, its row would have stayed
      // (the body's store is closed on every Node, whatever its hooks say).
      expect(await left).toBe('rolled back');
      expect(db.prepare('SELECT n FROM t').all()).toEqual([{ n: 1 }]);
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
