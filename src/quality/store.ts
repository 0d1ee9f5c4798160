/**
 * Database access shared by the quality services. Writers use the app database (opened and
 * migrated on first use). Readers of status readouts use `read`, which answers undefined when
 * there is no database yet, so a read-only projection (`svc config show-finding-lifecycle`)
 * never creates one; a database opened read-only without these tables reads as empty.
 * @module
 */
import type { Db } from '../store/db';

export interface QualityDb {
  /** The database for writing (created and migrated on first use). */
  write(): Db;
  /** The database for reading, or undefined when none exists yet. */
  read(): Db | undefined;
}

/** Run a read; a table missing from an old or read-only database reads as `fallback`. */
export function readOr<T>(db: QualityDb, fallback: T, read: (db: Db) => T): T {
  const handle = db.read();
  if (!handle) return fallback;
  try {
    return read(handle);
  } catch (error) {
    if (/no such table/i.test((error as Error).message ?? '')) return fallback;
    throw error;
  }
}

/** JSON column → value; a damaged value reads as `fallback` rather than failing the readout. */
export function jsonColumn<T>(text: string | null, fallback: T): T {
  if (text === null) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}
