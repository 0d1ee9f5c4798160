import { executionAsyncId } from 'node:async_hooks';
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
    expect(await later).toBeUndefined();
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
      expect(inside).not.toBe(0);
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
    expect(inside).not.toBe(0);
    expect(await continuationId()).toBe(0);
  });
});
