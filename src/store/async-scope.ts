/**
 * An `AsyncLocalStorage` whose promise hooks are on only while one of its scopes is open.
 *
 * On Node 20 an `AsyncLocalStorage` enables async hooks at its first `run` and keeps them on for
 * the life of the process: from then on every promise the process makes (the AI SDK's web
 * streams, undici, the HTTP answer) goes through a promise init hook that copies the store, 0.5 ms
 * and more of CPU per agent step (issue 17). The scopes svc opens (a transaction body, a read
 * scope) are short, so the storage is disabled again when the last open scope ends: outside a
 * scope `getStore()` is undefined, as it would be anyway (a scope's store says whether it is still
 * `open`, and a closed one counts as none). Work a scope started and did not await sees no store
 * once every scope has ended, the same as a closed store. Node 24's `AsyncLocalStorage` keeps the
 * store in an async context frame instead (no promise hooks at all): there such work still sees
 * the closed scope's store, and its `open` flag is what says it has ended.
 *
 * Off at once, not later: a toggle costs ≈ 10 µs on and ≈ 4 µs off in the service (a compat
 * request on SQLite opens four bodies, ≈ 55 µs), but leaving the hooks on to the end of the turn's
 * microtasks or to the next check phase hooked as many more promises, and a compat request's CPU
 * came out the same (docs/performance-log.md, p-scopehooks).
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface ScopedStorage<T> {
  /** `fn` with `store` as the current store; the hooks stay on until every open scope has ended. */
  run<R>(store: T, fn: () => Promise<R>): Promise<R>;
  /**
   * `run` with no promise of its own: `fn`'s answer as it is, its scope left open until the caller
   * calls `leave()` once that work has ended (a transaction body's own `then`, ./db.ts). Every
   * `enter` that returns or throws needs its one `leave`.
   */
  enter<R>(store: T, fn: () => R): R;
  /** The end of a scope `enter` opened: the hooks go off when it was the last one open. */
  leave(): void;
  /**
   * `fn` with no store, whatever scope this code runs in: it and the work it starts see none, as
   * outside every open scope (the hooks stay as they are).
   */
  exit<R>(fn: () => R): R;
  /** The store of the scope this code runs in, or undefined outside every open scope. */
  getStore(): T | undefined;
  /** Scopes open now (tests). */
  readonly open: number;
}

export function scopedStorage<T>(): ScopedStorage<T> {
  const storage = new AsyncLocalStorage<T>();
  let open = 0;
  const leave = () => {
    if (--open === 0) storage.disable();
  };
  return {
    async run(store, fn) {
      open++;
      try {
        return await storage.run(store, fn);
      } finally {
        leave();
      }
    },
    enter(store, fn) {
      open++;
      return storage.run(store, fn);
    },
    leave,
    exit: (fn) => (open === 0 ? fn() : storage.exit(fn)),
    getStore: () => storage.getStore(),
    get open() {
      return open;
    },
  };
}
