/**
 * A SQLite run ledger over a fresh database for the store tests, and a counter of the statements
 * run on a handle.
 */
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { afterEach, vi } from 'vitest';
import { createRunLedger, type RunLedger } from '../../src/runs/run-ledger';
import { DB_FILE, type Db, openDb } from '../../src/store/db';
import { createIds, systemClock } from '../../src/util/ids';
import { tmpWorkspace } from './tmp-workspace';

/**
 * The handles a test file opens, closed after each test (mocks restored first): `opened` svc's
 * (./openTestDb), `others` plain better-sqlite3 handles standing in for another connection.
 */
export function closedAfterEach(): { opened: Db[]; others: Database.Database[] } {
  const opened: Db[] = [];
  const others: Database.Database[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    for (const db of others.splice(0)) db.close();
    for (const db of opened.splice(0)) db.close();
  });
  return { opened, others };
}

/** A fresh database in a new workspace; the handle is pushed on `opened` for the test to close. */
export function openTestDb(opened: Db[]): { db: Db; dataDir: string } {
  const dataDir = tmpWorkspace();
  const db = openDb({ dataDir });
  opened.push(db);
  return { db, dataDir };
}

/** A run ledger (runner `rnr_test`) over a fresh database holding the session `ses_1`. */
export function openTestLedger(opened: Db[]): { db: Db; ledger: RunLedger } {
  const { db, dataDir } = openTestDb(opened);
  db.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, 1, 1)').run('ses_1');
  const ledger = createRunLedger({
    clock: systemClock,
    ids: createIds(),
    runner: 'rnr_test',
    db: () => db,
    dbPath: join(dataDir, DB_FILE),
  });
  return { db, ledger };
}

/** A run's create input in the session of `openTestLedger` (queued unless a status is added). */
export const RUN_INPUT = {
  session_id: 'ses_1',
  family_session_id: 'ses_1',
  agent: 'build',
  origin: 'cli',
  prompt: 'p',
  options: { max_steps: 3 },
} as const;

/**
 * Records the statements run on the handle from now on, by text with the white space folded
 * (every Statement shares one prototype); `vi.restoreAllMocks()` stops it.
 */
export function countStatements(db: Db): { texts: string[] } {
  const proto = Object.getPrototypeOf(db.prepare('SELECT 1')) as Statement;
  const texts: string[] = [];
  for (const method of ['run', 'get', 'all', 'iterate'] as const) {
    const original = proto[method] as (...args: unknown[]) => unknown;
    vi.spyOn(proto, method).mockImplementation(function (this: Statement, ...args: unknown[]) {
      texts.push(this.source.replace(/\s+/g, ' ').trim());
      return original.apply(this, args);
    } as never);
  }
  return { texts };
}
