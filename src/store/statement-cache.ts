/**
 * Prepared statements, cached per database handle: preparing costs more than running a small
 * statement, and the agent loop runs the same few statements on every step. One cache per handle
 * serves the repositories (`statementCache`) and the transaction statements
 * (./transaction-statements.ts) alike, so a text is prepared once per handle whoever runs it.
 * Sharing a statement is safe for the reason ./db.ts `cacheStatements` gives: nothing here
 * iterates a statement or leaves it in another mode.
 * @module
 */
import type { Database, Statement } from 'better-sqlite3';

const byHandle = new WeakMap<Database, Map<string, Statement>>();

/** The statement of `text` on `handle`, prepared at its first use there (a reopened database gets fresh ones). */
export function preparedOn(handle: Database, text: string): Statement {
  let statements = byHandle.get(handle);
  if (!statements) {
    statements = new Map();
    byHandle.set(handle, statements);
  }
  let statement = statements.get(text);
  if (!statement) {
    statement = handle.prepare(text);
    statements.set(text, statement);
  }
  return statement;
}

/** `sql(text)` prepares once per handle of `db()`. */
export function statementCache(db: () => Database): (text: string) => Statement {
  return (text) => preparedOn(db(), text);
}
