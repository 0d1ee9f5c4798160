/**
 * What `openDb` (./db.ts) adds to a SQLite handle: its statements cached per SQL text, and the
 * search log's catch-up at its close.
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3';
import { catchUpIfFree } from './message-search-log';

type Db = BetterSqlite3.Database;

/**
 * A closing handle indexes the messages its last seconds wrote (./message-search-log.ts), so a
 * short-lived `svc run` leaves no log behind; a busy store or a failure leaves it to the next
 * catch-up (any process's), never fails the close.
 */
export function closingCatchUp(db: Db): void {
  try {
    catchUpIfFree(db);
  } catch {
    // the log stays for the next catch-up
  }
}

/**
 * Domains write `db.prepare(sql).run(…)` inline; compiling the same SQL on every call showed up
 * in profiles of busy servers. Statements are cached per SQL text. Safe because nothing here
 * iterates a statement (`.iterate()`) or leaves it in another mode (`.pluck()`, `.raw()`,
 * `.expand()`; ./wide-row.ts switches to `raw` for one `get` and back before it returns), so a
 * cached statement is never busy or left in another mode when it is reused.
 */
export function cacheStatements(db: Db): void {
  const prepare = db.prepare.bind(db);
  const cache = new Map<string, ReturnType<Db['prepare']>>();
  db.prepare = ((sql: string) => {
    let statement = cache.get(sql);
    if (!statement) {
      statement = prepare(sql);
      if (cache.size < 2000) cache.set(sql, statement);
    }
    return statement;
  }) as Db['prepare'];
}
