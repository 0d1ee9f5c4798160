/**
 * A connection's `PRAGMA data_version` (issue 17 item 3): it moves when another connection (another
 * process: a CLI `svc run`, another node) commits to svc.db, never for this connection's own
 * commits. A store that answers a read from memory (`memoByDataVersion`) keeps what it read with
 * the version it was read at, and reads the table again when the version moved or when this
 * process wrote the table.
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3';
import { transactionMemo } from './transaction-memo';

type Db = BetterSqlite3.Database;

const statements = new WeakMap<Db, BetterSqlite3.Statement>();
const versionOwner = {};

/**
 * The connection's data_version now. Inside a transaction it is read once: every transaction svc
 * opens on SQLite is IMMEDIATE (./busy.ts, group commit and step batches in ./db.ts), so it holds
 * the write lock and no other connection commits until it ends (the memo is dropped then).
 */
export function dataVersion(db: Db): number {
  const memo = db.inTransaction ? transactionMemo<number>(db, versionOwner) : undefined;
  const known = memo?.get('version');
  if (known !== undefined) return known;
  let statement = statements.get(db);
  if (!statement) {
    statement = db.prepare('PRAGMA data_version');
    statements.set(db, statement);
  }
  const version = (statement.get() as { data_version: number }).data_version;
  memo?.set('version', version);
  return version;
}

/**
 * Values read from the database by key, kept while they provably still hold: no other connection
 * committed since (data_version) and this process did not write what they were read from (the
 * owner calls `invalidate` before each of its writes). A value read inside a transaction in which
 * the owner wrote is not kept (the transaction may roll back); otherwise what a transaction reads
 * is committed data.
 */
export function memoByDataVersion<K, V>(db: () => Db, load: (key: K) => V) {
  const held = new Map<K, { handle: Db; version: number; writes: number; value: V }>();
  const owner = {};
  let writes = 0;
  return {
    get(key: K): V {
      const handle = db();
      const version = dataVersion(handle);
      const kept = held.get(key);
      if (kept && kept.handle === handle && kept.version === version && kept.writes === writes) {
        return kept.value;
      }
      held.delete(key);
      const before = writes;
      const value = load(key);
      const wroteInTransaction =
        handle.inTransaction && transactionMemo(handle, owner)?.has('wrote') !== false;
      if (!wroteInTransaction && writes === before) held.set(key, { handle, version, writes, value });
      return value;
    },
    /** Before each write of the owner to the table. */
    invalidate(): void {
      writes++;
      held.clear();
      const handle = db();
      if (handle.inTransaction) transactionMemo<boolean>(handle, owner)?.set('wrote', true);
    },
  };
}
