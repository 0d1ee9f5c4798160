import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { scopedStorage } from '../store/async-scope';
import { ownContext } from './own-context';

describe('ownContext', () => {
  it('STORE-PG-415: a runner made outside every scope runs its work outside the caller’s scope (a transaction’s storage, a plain AsyncLocalStorage), in what it runs synchronously and in the promises and timers it starts; the caller’s scope is back after it', async () => {
    const scoped = scopedStorage<string>();
    const plain = new AsyncLocalStorage<string>();
    const own = ownContext('svc.test');
    const seen: unknown[] = [];
    const stores = () => [scoped.getStore(), plain.getStore()];
    await scoped.run('tx', () =>
      plain.run('span', async () => {
        const sync = own.run(stores);
        const later = await own.run(async () => {
          await Promise.resolve();
          return stores();
        });
        const timer = await own.run(
          () => new Promise<unknown[]>((done) => setImmediate(() => done(stores()))),
        );
        seen.push(sync, later, timer, stores());
      }),
    );
    expect(seen).toEqual([
      [undefined, undefined],
      [undefined, undefined],
      [undefined, undefined],
      ['tx', 'span'],
    ]);
  });

  it('STORE-PG-415: the runner answers what its function answers, a throw included', () => {
    const own = ownContext('svc.test');
    expect(own.run(() => 42)).toBe(42);
    expect(() =>
      own.run(() => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
  });
});
