/**
 * Prepared statements, cached per database handle: preparing costs more than running a small
 * statement, and the agent loop runs the same few statements on every step.
 * @module
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './db';

/** `sql(text)` prepares once per handle (a reopened database gets fresh statements). */
export function statementCache(db: () => Db): (text: string) => Statement {
  const byHandle = new WeakMap<Db, Map<string, Statement>>();
  return (text) => {
    const handle = db();
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
  };
}
