/**
 * A value built on first use, once. For module-level zod schemas that `svc run` loads but seldom
 * uses (issue 17: building zod schemas at load was a large part of its start-up CPU): the module
 * exports `const xSchema = lazy(() => z.object(…))` and callers write `xSchema().parse(…)`.
 * @module
 */
export function lazy<T>(build: () => T): () => T {
  let built = false;
  let value: T | undefined;
  return () => {
    if (!built) {
      value = build();
      built = true;
    }
    return value as T;
  };
}

/**
 * An async value (a module's dynamic import) asked for once, on first use: every later call gets
 * the same promise. A failed load is forgotten, so the next call tries again (unlike `lazy`).
 */
export function lazily<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= load().catch((error) => {
      loading = undefined;
      throw error;
    });
    return loading;
  };
}
