/**
 * A module loaded on first use with its import asked once: every model resolution and build asked
 * the module loader again (issue 17). A failed import is forgotten, so the next use tries again.
 * @module
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
