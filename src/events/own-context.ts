/**
 * A background bus listener's own async context (issue 18 items 2–3). The bus delivers an event in
 * its publisher's async context (./bus.ts `publisherContext`), and a PostgreSQL transaction's scope
 * takes every statement started in its context while it is open (src/store/postgres/client.ts).
 * An event delivered with the publisher's transaction still open (a compat start's joined events,
 * p-pgstart4; events a `flush` inside a transaction releases) took a background listener's
 * statements into that transaction: its reads lengthened it (a lone start became BEGIN … COMMIT),
 * its writes were committed, or rolled back, with the publisher's. A listener whose work is its
 * own runs that work here instead: in the context taken when the runner was made (where the
 * listener subscribes: a service's start, outside every transaction), so its statements go to
 * the pool and its transactions are its own. A listener whose reads must see the publisher's
 * transaction (the adaptive monitor) stays in the publisher's context.
 *
 * The runner is one `AsyncResource`, made once; a run is its `runInAsyncScope` (≈ 0.3 µs), not
 * `AsyncResource.bind` or `AsyncLocalStorage.bind` (≈ 13 µs a call on Node 20, ./bus.ts). On Node
 * 20 and 22 the resource's init copies each enabled storage's store at construction (none outside
 * a scope: ../store/async-scope.ts disables its storage when its last scope ends); on Node 24 it
 * captures the async context frame at construction. Either way the runner's context is the one
 * it was made in, whatever the context of the call.
 * @module
 */
import { AsyncResource } from 'node:async_hooks';

export interface OwnContext {
  /** `fn` in the runner's own context, its answer as it is (no promise of its own). */
  run<R>(fn: () => R): R;
}

/** Made where the listener subscribes (outside every transaction): that context is the runner's. */
export function ownContext(name: string): OwnContext {
  const resource = new AsyncResource(name);
  return { run: (fn) => resource.runInAsyncScope(fn) };
}
