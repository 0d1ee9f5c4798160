/**
 * Read-through copies of rows within one operation (issue 18, item 6): an agent `send`, a run's
 * preparation. On PostgreSQL each read is a round trip; the services of one operation (the agent,
 * the permission and adaptive readers, the tool funnel) each ask their repository for the same
 * row. Inside `withReadScope(fn)` a repository that reads through `readThrough` answers a row it
 * already read in this scope without asking the database again, as long as this process wrote
 * nothing to it since: every write a repository makes to a row calls `wrote(key)` (again when the
 * surrounding transaction ends, committed or not: `afterEnd`), which makes every scope's copy of
 * it stale. Other nodes' writes are not seen: a scope is short and opened after its request came,
 * so its reads are those of one moment (as if all were made at its first), and it is used where
 * the operation owns the row for its duration. Outside a scope (and once the scope's function has
 * settled, for work it started and did not await) reads go to the database as before.
 * @module
 */
import { scopedStorage } from './async-scope';

interface Scope {
  open: boolean;
  rows: Map<string, { version: number; value: unknown }>;
}

// Its promise hooks are on only while a scope is open (./async-scope.ts).
const ambient = scopedStorage<Scope>();

/** Write counters per row key, hashed into a fixed table (a collision only costs a read). */
const SLOTS = 4096;
const versions = new Uint32Array(SLOTS);

function slot(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % SLOTS;
}

/**
 * Whether any repository of this process reads through a scope (the PostgreSQL session store
 * says so when it is made). On SQLite nothing does: a scope would only cost its promise hooks.
 */
let wanted = false;
export function enableReadScopes(): void {
  wanted = true;
}

/** `fn` with a new read scope (a nested call gets its own); the scope closes when `fn` settles. */
export async function withReadScope<T>(fn: () => Promise<T>): Promise<T> {
  if (!wanted) return fn();
  const scope: Scope = { open: true, rows: new Map() };
  try {
    return await ambient.run(scope, fn);
  } finally {
    scope.open = false;
    scope.rows.clear();
  }
}

/**
 * The row under `key`: this scope's copy when no write of this process touched it since, else
 * `load()` (remembered in the scope). Outside a scope, `load()`.
 */
export function readThrough<T>(key: string, load: () => Promise<T>): Promise<T> {
  const scope = ambient.getStore();
  // No async wrapper: a read outside a scope is `load()`'s own promise alone (issue 18, item 6).
  if (!scope?.open) return load();
  const at = slot(key);
  const cached = scope.rows.get(key);
  if (cached && cached.version === versions[at]) return Promise.resolve(cached.value as T);
  const version = versions[at];
  return load().then((value) => {
    if (scope.open) scope.rows.set(key, { version, value });
    return value;
  });
}

/** This scope's copy of the row under `key`, when it holds one not stale; nothing is read. */
export function peek<T>(key: string): { value: T } | undefined {
  const scope = ambient.getStore();
  const cached = scope?.open ? scope.rows.get(key) : undefined;
  return cached && cached.version === versions[slot(key)] ? { value: cached.value as T } : undefined;
}

/**
 * This process wrote the row under `key` (call it after the statement answered): copies read
 * before are stale. `afterEnd`, when the write is inside a transaction: a hook run when it ends,
 * so copies read inside it (its uncommitted row) go stale at its COMMIT or ROLLBACK too.
 */
export function wrote(key: string, afterEnd?: (fn: () => void) => void): void {
  const at = slot(key);
  versions[at]++;
  afterEnd?.(() => {
    versions[at]++;
  });
}

/** The write counter of the row under `key`: it moves whenever this process writes the row (a collision moves it too). */
export function rowVersion(key: string): number {
  return versions[slot(key)];
}

/** A row this process just wrote and read back (`RETURNING *`), kept as the scope's copy. */
export function remember(key: string, value: unknown): void {
  const scope = ambient.getStore();
  if (scope?.open) scope.rows.set(key, { version: versions[slot(key)], value });
}
