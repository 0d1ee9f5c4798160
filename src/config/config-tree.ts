/**
 * The merged config tree: merging one source's tree into it (keeping each leaf's source) and
 * reading, writing and removing keys by path.
 * @module
 */
export const isTable = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);

/** `Source` is load.ts's ConfigSource; generic so this file does not import load.ts (a cycle). */
export function mergeInto<Source>(
  base: Record<string, unknown>,
  next: Record<string, unknown>,
  path: string[],
  provenance: Map<string, Source>,
  source: Source,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(next)) {
    const here = [...path, key];
    if (isTable(value) && Object.keys(value).length > 0) {
      out[key] = mergeInto(
        isTable(out[key]) ? (out[key] as Record<string, unknown>) : {},
        value,
        here,
        provenance,
        source,
      );
    } else {
      // A scalar, array or empty table replaces what was there; earlier leaves below it are gone.
      // Walk the replaced subtree rather than scan every provenance key: the scan made a table of
      // n keys cost n² (20k keys under [options] took 13 s of every command).
      if (isTable(out[key])) forgetBelow(out[key] as Record<string, unknown>, here.join('.'), provenance);
      out[key] = value;
      provenance.set(here.join('.'), source);
    }
  }
  return out;
}

/** Drops the provenance of every key below `prefix` (the table at that path is being replaced). */
function forgetBelow<Source>(
  table: Record<string, unknown>,
  prefix: string,
  provenance: Map<string, Source>,
) {
  const pending: [Record<string, unknown>, string][] = [[table, prefix]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [node, path] = next;
    for (const [key, value] of Object.entries(node)) {
      const here = `${path}.${key}`;
      provenance.delete(here);
      if (isTable(value)) pending.push([value, here]);
    }
  }
}

/**
 * How deep a config tree may nest. The walks over it (interpolation, merge, validation, the
 * redactor, explain) recurse, and a header `[options.a.a.a…]` 5,000 levels deep overflowed the
 * stack ("internal error: Maximum call stack size exceeded"). Real configs nest under ten.
 */
export const MAX_CONFIG_DEPTH = 64;

/** The key path of the first value nested deeper than MAX_CONFIG_DEPTH, or undefined. */
export function tooDeepPath(tree: Record<string, unknown>): string[] | undefined {
  // Iterative: this is the check that keeps the recursive walks safe.
  const pending: [Record<string, unknown> | unknown[], string[]][] = [[tree, []]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [node, path] = next;
    for (const [key, value] of Object.entries(node)) {
      if (!isTable(value) && !Array.isArray(value)) continue;
      const here = [...path, key];
      if (here.length >= MAX_CONFIG_DEPTH) return here;
      pending.push([value, here]);
    }
  }
  return undefined;
}

export function setPath(
  tree: Record<string, unknown>,
  path: readonly string[],
  value: unknown,
): Record<string, unknown> {
  let node = tree;
  for (const key of path.slice(0, -1)) {
    if (!isTable(node[key])) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]] = value;
  return tree;
}

export function getPath(tree: unknown, path: readonly string[]): unknown {
  let node = tree;
  for (const key of path) {
    if (!isTable(node) && !Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

export function stripPaths(
  tree: unknown,
  paths: readonly (readonly PropertyKey[])[],
): Record<string, unknown> {
  const copy = structuredClone(tree) as Record<string, unknown>;
  for (const path of paths) {
    if (path.length === 0) continue;
    const parent = getPath(copy, path.slice(0, -1).map(String));
    if (isTable(parent)) delete parent[String(path[path.length - 1])];
    else if (Array.isArray(parent)) parent.splice(Number(path[path.length - 1]), 1);
  }
  return copy;
}
