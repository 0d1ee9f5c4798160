/**
 * WAL checkpoints in the store's idle time (issue 17 item 3). SQLite's automatic checkpoint runs
 * in the COMMIT that takes the WAL past `wal_autocheckpoint` (1000 frames): that COMMIT copies the
 * WAL's pages back into svc.db and syncs both files on the main thread, 4–25 ms of which little is
 * CPU (perf: ~0.07 ms of a compat request's ~4.6 ms) and the rest is waiting on the disk, and the
 * request whose write happens to cross the line pays all of it (docs/performance-log.md, p-wal).
 * Here the HTTP service's connection looks at the WAL index (the `-shm` file's header, a 100-byte
 * pread, https://www.sqlite.org/walformat.html) every IDLE_POLL_MS; when no write landed since the
 * previous look, no transaction is open and at least IDLE_MIN_FRAMES frames wait to be copied
 * back, it runs a PASSIVE checkpoint (never waits for, never blocks a reader or another process's
 * writer) there and then, and starts the WAL again from its start (restartWal), so the next
 * request's COMMIT neither copies the WAL back nor syncs a new WAL header. Under a steady load the
 * store is never idle and nothing changes: the automatic checkpoint stays the bound, so the
 * WAL is synced at least as often as before (synchronous=NORMAL syncs it at each checkpoint) and a
 * power loss loses no more than before. No worker thread: p-commit's worker cost CPU in more,
 * smaller checkpoints; this one runs only when the store has nothing else to do. Stands aside for
 * that worker (`SVC_CHECKPOINT_WORKER=1`); `SVC_IDLE_CHECKPOINT=0` turns it off (both read by ./db.ts
 * where group commit is turned on).
 * @module
 */
import { closeSync, openSync, readSync } from 'node:fs';
import type BetterSqlite3 from 'better-sqlite3';

type Db = BetterSqlite3.Database;

/** How often the WAL index is read; the store is idle when two reads in a row see the same WAL. */
export const IDLE_POLL_MS = 200;
/**
 * Frames not yet copied back that are worth an idle checkpoint (about 3–6 compat requests): fewer
 * would sync the files after nearly every request of a quiet service for a few pages each.
 */
export const IDLE_MIN_FRAMES = 256;

export interface IdleCheckpointOptions {
  pollMs?: number;
  minFrames?: number;
}

/** The WAL's frames and how many of them are copied back into the database. */
export interface WalFrames {
  frames: number;
  backfilled: number;
}

interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

const watched = new WeakMap<Db, NodeJS.Timeout>();
/** WalIndexHdr.iVersion (the only WAL index format SQLite has written since 3.7.0). */
const WAL_INDEX_VERSION = 3007000;
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * Starts the handle's idle checkpoints (once; not for in-memory or read-only handles). The timer
 * is unref'd and ends itself when the handle is closed.
 */
export function checkpointWhenIdle(db: Db, options: IdleCheckpointOptions = {}): void {
  if (watched.has(db) || db.memory || db.readonly || !db.open) return;
  const minFrames = options.minFrames ?? IDLE_MIN_FRAMES;
  const index = walIndexReader(`${db.name}-shm`);
  let lastFrames = -1;
  const timer = setInterval(function idleCheckpoint() {
    if (!db.open) {
      clearInterval(timer);
      index.close();
      return;
    }
    const wal = db.inTransaction ? undefined : index.read();
    if (!wal) {
      lastFrames = -1;
      return;
    }
    const idle = wal.frames === lastFrames;
    lastFrames = wal.frames;
    if (!idle || wal.frames - wal.backfilled < minFrames) return;
    try {
      const [result] = db.pragma('wal_checkpoint(PASSIVE)') as CheckpointResult[];
      if (result && result.busy === 0 && result.checkpointed === result.log) restartWal(db);
    } catch {
      // busy or closing: the automatic checkpoint copies the frames back, as before
    }
  }, options.pollMs ?? IDLE_POLL_MS);
  timer.unref();
  watched.set(db, timer);
}

/**
 * The first write after a full checkpoint starts the WAL again from its start and syncs the WAL's
 * new header (SQLite does at every restart of the WAL, whatever `synchronous`): a write of one page
 * that changes nothing (`user_version`, which svc does not use, set to itself) does it here, in
 * the idle time, instead of in the next request's COMMIT. It never waits for the write lock: when
 * another process holds it, the next writer restarts the WAL, as before.
 */
function restartWal(db: Db): void {
  const timeout = db.pragma('busy_timeout', { simple: true }) as number;
  try {
    db.pragma('busy_timeout = 0');
    db.exec('BEGIN IMMEDIATE');
  } catch {
    return;
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
  try {
    const version = db.pragma('user_version', { simple: true }) as number;
    db.pragma(`user_version = ${version}`);
    db.exec('COMMIT');
  } catch {
    if (db.inTransaction) db.exec('ROLLBACK');
  }
}

/** The handle's WAL frames from its WAL index, or undefined when there is none (yet) to read. */
export function walFrames(db: Db): WalFrames | undefined {
  const index = walIndexReader(`${db.name}-shm`);
  try {
    return index.read();
  } finally {
    index.close();
  }
}

/** Reads the WAL index header: mxFrame and WalCkptInfo.nBackfill, in native byte order. */
function walIndexReader(file: string): { read(): WalFrames | undefined; close(): void } {
  let fd: number | undefined;
  const header = Buffer.alloc(100);
  const u32 = (at: number) => (LITTLE_ENDIAN ? header.readUInt32LE(at) : header.readUInt32BE(at));
  return {
    read() {
      try {
        fd ??= openSync(file, 'r');
        if (readSync(fd, header, 0, 100, 0) < 100) return undefined;
      } catch {
        return undefined;
      }
      // An index this code does not know, or one not initialised yet: leave it to SQLite.
      if (u32(0) !== WAL_INDEX_VERSION || header[12] !== 1) return undefined;
      return { frames: u32(16), backfilled: u32(96) };
    },
    close() {
      if (fd === undefined) return;
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
      fd = undefined;
    },
  };
}
