/**
 * Where a store's background failures go: a group commit that failed after its callers returned,
 * a search-index catch-up that could not run. Nobody waits on these, so they are reported, not
 * thrown. The App points a database at its log file (`openDb({ warn })`): in the TUI and MCP
 * stdio modes the terminal and stdout are not ours to write to. A database opened without one
 * (tests, tools) reports through `process.emitWarning`.
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3';

export type StoreWarn = (message: string) => void;

const sinks = new WeakMap<BetterSqlite3.Database, StoreWarn>();

export function setStoreWarn(db: BetterSqlite3.Database, warn: StoreWarn): void {
  sinks.set(db, warn);
}

/** Report a background failure of `db`'s; never throws (a report must not fail the caller). */
export function storeWarning(db: BetterSqlite3.Database, message: string): void {
  try {
    (sinks.get(db) ?? process.emitWarning)(message);
  } catch {
    // nowhere left to report it
  }
}
