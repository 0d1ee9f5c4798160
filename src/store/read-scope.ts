/**
 * Read-through copies of rows within one operation (issue 18, item 6): an agent `send`, a run's
 * preparation. On PostgreSQL each read is a round trip; the services of one operation (the agent,
 * the permission and adaptive readers, the tool funnel) each ask their repository for the same
 * row. Inside `withReadScope(fn)` a repository that reads through `readThrough` answers a row it
 * already read in this scope without asking the database again, as long as this process wrote
 * nothing to it since: every write a repository makes to a row calls `wrote(key)`, which makes
 * every scope's copy of it stale. Other nodes' writes are not seen: a scope is short and opened
 * after its request came, so its reads are those of one moment (as if all were made at its
 * first), and it is used where the operation owns the row for its duration. Outside a scope (and
 * once the scope's function has settled, for work it started and did not await) reads go to the
 * database as before.
 *
 * A write inside a transaction is seen only on the transaction's connection until it ends, so its
 * end makes copies stale again, with one exception: a copy taken in that same transaction (read
 * on its connection, or the row its write answered) is the row as committed, so after a COMMIT
 * that kept all its writes it stays (its transaction is its `TransactionEnd`). A ROLLBACK (or a
 * savepoint rolled back) makes every copy of the rows it wrote stale. Before, every copy went
 * stale at the end, and a run started by the compat request's transaction read its session again
 * right after that COMMIT (docs/performance-log.md, p-pgpromise2).
 * @module
 */
import { scopedStorage } from './async-scope';

/** A transaction as a read scope sees it (a PostgreSQL client's `transactionNow`, ./postgres/client.ts). */
export interface TransactionEnd {
  /**
   * `fn` once the transaction has ended (at once when it has): `kept` when it committed with
   * every write it made (no savepoint of it rolled back); `rolledBack` when it is known that none
   * of its writes stands (it rolled back before or at its COMMIT, nothing of it sent alone), not
   * when its COMMIT's answer was lost with the connection (it may have committed).
   */
  onEnd(fn: (kept: boolean, rolledBack: boolean) => void): void;
  /**
   * `fn` once what the transaction wrote until now is committed or rolled back: at its end, or
   * sooner, at the answer of a statement that went alone and committed it (`SqlClient.alone`,
   * p-pgstart2). Absent: `onEnd`.
   */
  onWritten?(fn: (kept: boolean) => void): void;
}

interface Copy {
  version: number;
  value: unknown;
  /** The transaction it was taken in: it stays at that transaction's COMMIT. */
  tx: TransactionEnd | undefined;
}

interface Scope {
  open: boolean;
  rows: Map<string, Copy>;
}

// Its promise hooks are on only while a scope is open (./async-scope.ts).
const ambient = scopedStorage<Scope>();

/** Write counters per row key, hashed into a fixed table (a collision only costs a read). */
const SLOTS = 4096;
const versions = new Uint32Array(SLOTS);

/**
 * Per slot, the last committed transaction's ends: the counter moved from `from` to `to` at them
 * alone, so a copy that transaction took at `from` is still the row.
 */
const carried: ({ tx: TransactionEnd; from: number; to: number } | undefined)[] = new Array(SLOTS);

function slot(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % SLOTS;
}

/** Whether `copy` is still the row in slot `at` (a copy carried over its transaction's COMMIT is brought up to date). */
function fresh(copy: Copy, at: number): boolean {
  if (copy.version === versions[at]) return true;
  const carry = carried[at];
  if (!copy.tx || carry?.tx !== copy.tx || carry.from !== copy.version || carry.to !== versions[at])
    return false;
  copy.version = carry.to;
  return true;
}

/** The end of `tx`, which wrote the row in slot `at`: copies go stale but those `tx` took when it kept its writes. */
function ended(at: number, tx: TransactionEnd, kept: boolean): void {
  const from = versions[at]++;
  if (!kept) return;
  const carry = carried[at];
  if (carry?.tx === tx && carry.to === from) carry.to = versions[at];
  else carried[at] = { tx, from, to: versions[at] };
}

/**
 * Whether any repository of this process reads through a scope (the PostgreSQL session store
 * says so when it is made). On SQLite nothing does: a scope would only cost its promise hooks.
 */
let wanted = false;
export function enableReadScopes(): void {
  wanted = true;
}
/** Whether read scopes are on in this process (the test suite's shared-worker check). */
export function readScopesEnabled(): boolean {
  return wanted;
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
 * `load()` (remembered in the scope). Outside a scope, `load()`. `tx`: the transaction `load`'s
 * statement is part of (or waits for the end of).
 */
export function readThrough<T>(key: string, load: () => Promise<T>, tx?: TransactionEnd): Promise<T> {
  const scope = ambient.getStore();
  // No async wrapper: a read outside a scope is `load()`'s own promise alone (issue 18, item 6).
  if (!scope?.open) return load();
  const at = slot(key);
  const cached = scope.rows.get(key);
  if (cached && fresh(cached, at)) return Promise.resolve(cached.value as T);
  const version = versions[at];
  return load().then((value) => {
    if (scope.open) scope.rows.set(key, { version, value, tx });
    return value;
  });
}

/** This scope's copy of the row under `key`, when it holds one not stale; nothing is read. */
export function peek<T>(key: string): { value: T } | undefined {
  const scope = ambient.getStore();
  const cached = scope?.open ? scope.rows.get(key) : undefined;
  return cached && fresh(cached, slot(key)) ? { value: cached.value as T } : undefined;
}

/**
 * This process wrote the row under `key` (call it after the statement answered): copies read
 * before are stale. `tx`: the transaction the write was part of; copies go stale again at its end
 * (all at a ROLLBACK; at a COMMIT, but those it took itself).
 */
export function wrote(key: string, tx?: TransactionEnd): void {
  const at = slot(key);
  versions[at]++;
  if (tx?.onWritten) tx.onWritten((kept) => ended(at, tx, kept));
  else tx?.onEnd((kept) => ended(at, tx, kept));
}

/** The write counter of the row under `key`: it moves whenever this process writes the row (a collision moves it too). */
export function rowVersion(key: string): number {
  return versions[slot(key)];
}

/** A row this process just wrote and read back (`RETURNING *`) in `tx`, kept as the scope's copy. */
export function remember(key: string, value: unknown, tx?: TransactionEnd): void {
  const scope = ambient.getStore();
  if (scope?.open) scope.rows.set(key, { version: versions[slot(key)], value, tx });
}
