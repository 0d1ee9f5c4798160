/**
 * What opening a svc.db refuses, as clear errors (./db.ts `openDb`): a file made read-only on
 * purpose, and the driver's locked, read-only, corrupt or other failures, each naming the file and
 * what to do. Nothing is written to a file svc cannot read as its database.
 * @module
 */
import { statSync } from 'node:fs';
import { SvcError } from '../errors';

/**
 * A svc.db whose mode has no write bit was made read-only on purpose (root would write it anyway,
 * SQLite does not check): refuse it instead of writing.
 */
export function refuseReadOnlyFile(file: string): void {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch {
    return; // missing: it is created
  }
  if ((mode & 0o222) === 0) {
    throw new SvcError(
      'unavailable',
      `database ${file} is read-only (mode ${(mode & 0o777).toString(8).padStart(4, '0')}); svc needs to write it: make it writable (chmod u+w ${file}) or pass --data-dir to use another data dir. Nothing was written`,
      { details: { file, reason: 'read_only' } },
    );
  }
}

export function dbError(error: unknown, file: string): SvcError {
  if (SvcError.is(error)) return error;
  const code = (error as { code?: string }).code ?? '';
  const message = (error as Error).message ?? String(error);
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || /locked/i.test(message)) {
    return new SvcError(
      'unavailable',
      `database ${file} is locked by another process; try again when it finishes`,
      { cause: error },
    );
  }
  if (
    code === 'SQLITE_READONLY' ||
    code === 'SQLITE_CANTOPEN' ||
    /readonly|read-only|unable to open/i.test(message)
  ) {
    return new SvcError(
      'unavailable',
      `database ${file} is read-only or cannot be opened for writing (${code || message}); make the file and its directory writable, or pass --data-dir to use another data dir. Nothing was written`,
      { cause: error, details: { file, reason: 'read_only' } },
    );
  }
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT' || /not a database|malformed/i.test(message)) {
    return new SvcError(
      'unavailable',
      `database ${file} is corrupt or not an SQLite database; it was left untouched (run svc doctor for details; move it aside to start fresh, or restore a backup)`,
      { cause: error, details: { file, reason: 'corrupt' } },
    );
  }
  return new SvcError('unavailable', `database ${file}: ${message}`, { cause: error });
}
