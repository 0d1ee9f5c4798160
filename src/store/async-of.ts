/**
 * `T` with every method returning a promise: the shape of a repository on an async backend
 * (PostgreSQL, issue 18). Once the core repository interfaces are async (the `async` stage),
 * `AsyncOf<SessionStore>` is SessionStore itself and this can go.
 * @module
 */
export type AsyncOf<T> = {
  [K in keyof T]: T[K] extends (...a: infer A) => infer R ? (...a: A) => Promise<Awaited<R>> : T[K];
};
