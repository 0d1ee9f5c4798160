/**
 * WAL checkpoints off the request path (issue 17 item 3). SQLite's automatic checkpoint runs in
 * the COMMIT that takes the WAL past `wal_autocheckpoint` (1000 frames): in the HTTP service that
 * COMMIT, every ~24 compat requests, copied ~1000 pages back into svc.db and synced both files on
 * the main thread (5–20 ms, half of all COMMIT time). Here a worker thread with its own connection
 * watches the WAL index (the `-shm` file's header, https://www.sqlite.org/walformat.html) and runs
 * a PASSIVE checkpoint (never waits for, never blocks a writer or reader) once the WAL holds
 * CHECKPOINT_FRAMES frames not yet copied back, before the main connection's automatic checkpoint
 * would: the WAL is synced at least as often as before (synchronous=NORMAL syncs it at each
 * checkpoint), so a power loss loses no more than before, and the main connection keeps its
 * automatic checkpoint as the bound when the worker is behind, has failed or cannot read the index.
 * Other processes on the same svc.db (`svc run`) keep their own automatic checkpoints. Off unless
 * `SVC_CHECKPOINT_WORKER=1` (read by ./db.ts where group commit is turned on): then started by the
 * first group commit of a handle (the HTTP service).
 * It moves the checkpoint off the request path (COMMIT p95 ~6 ms → ~2 ms) but does not save CPU
 * over all threads (about +0.5 ms a compat request in alternating pairs: more, smaller
 * checkpoints), and "svc CPU per request, all threads" is the figure issue 17 holds
 * (docs/performance-log.md, p-commit).
 * @module
 */
import { Worker } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';
import { sqliteModulePath } from './sqlite-driver';

type Db = BetterSqlite3.Database;

/** Frames the WAL may hold beyond the last checkpoint before the worker copies them back. */
export const CHECKPOINT_FRAMES = 800;
/**
 * The main connection's automatic checkpoint while the worker runs (SQLite's default is 1000): the
 * WAL restarts from its start only when a write begins with every frame copied back, and under a
 * steady load that takes the worker a few tries; the WAL is still synced every ~CHECKPOINT_FRAMES.
 */
export const AUTOCHECKPOINT_BOUND = 2000;
/** How often the worker reads the WAL index (a 100-byte pread). */
export const POLL_MS = 10;
const STOP = 0;
const DONE = 1;
const CHECKPOINTS = 2;

interface Checkpointer {
  worker: Worker;
  control: Int32Array;
}
const running = new WeakMap<Db, Checkpointer>();

// CommonJS, run with `eval`: the worker loads the same better-sqlite3 build as this process.
const WORKER = `
const { workerData } = require('node:worker_threads');
const { openSync, readSync, closeSync } = require('node:fs');
const { file, driver, frames, pollMs, control } = workerData;
const ctl = new Int32Array(control);
let db;
let fd;
try {
  db = new (require(driver))(file, { fileMustExist: true });
  db.pragma('wal_autocheckpoint = 0');
  const header = Buffer.alloc(100);
  // WalIndexHdr: iVersion 3007000, isInit, mxFrame; WalCkptInfo.nBackfill (native byte order).
  const le = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
  const u32 = (at) => (le ? header.readUInt32LE(at) : header.readUInt32BE(at));
  while (Atomics.load(ctl, ${STOP}) === 0) {
    Atomics.wait(ctl, ${STOP}, 0, pollMs);
    if (Atomics.load(ctl, ${STOP}) !== 0) break;
    if (fd === undefined) {
      try { fd = openSync(file + '-shm', 'r'); } catch { continue; }
    }
    if (readSync(fd, header, 0, 100, 0) < 100) continue;
    if (u32(0) !== 3007000) break; // an index this code does not know: leave it to SQLite
    if (header[12] !== 1) continue;
    const mxFrame = u32(16);
    const nBackfill = u32(96);
    if (mxFrame < frames || nBackfill >= mxFrame) continue;
    // Again at once while commits landed during the copy: the WAL restarts from its start only
    // when a write transaction begins with every frame copied back.
    for (let round = 0; round < 8; round++) {
      const [result] = db.pragma('wal_checkpoint(PASSIVE)');
      Atomics.add(ctl, ${CHECKPOINTS}, 1);
      if (result.busy !== 0 || result.checkpointed >= result.log) break;
    }
  }
} catch {
  // the main connection's automatic checkpoint goes on as before
} finally {
  try { if (fd !== undefined) closeSync(fd); } catch {}
  try { db?.close(); } catch {}
  Atomics.store(ctl, ${DONE}, 1);
  Atomics.notify(ctl, ${DONE});
}
`;

/** Starts the handle's checkpoint worker (once; not for in-memory or read-only handles). */
export function startCheckpointer(db: Db): void {
  if (running.has(db)) return;
  if (db.memory || db.readonly || !db.open) return;
  const control = new Int32Array(new SharedArrayBuffer(4 * 3));
  let worker: Worker;
  try {
    worker = new Worker(WORKER, {
      eval: true,
      workerData: {
        file: db.name,
        driver: sqliteModulePath(),
        frames: CHECKPOINT_FRAMES,
        pollMs: POLL_MS,
        control: control.buffer,
      },
    });
  } catch {
    return; // no worker: the automatic checkpoint as before
  }
  worker.unref();
  // While the worker runs, the main connection's automatic checkpoint is only the bound for a
  // worker that fell behind; it is back at SQLite's default when the worker has ended.
  const bound = db.pragma('wal_autocheckpoint', { simple: true }) as number;
  db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_BOUND}`);
  const restore = () => {
    if (db.open) db.pragma(`wal_autocheckpoint = ${bound}`);
  };
  worker.on('error', restore); // the worker's failure is not the service's
  worker.on('exit', restore);
  running.set(db, { worker, control });
}

/**
 * Stops the handle's checkpoint worker and waits (up to a second) for it to close its connection,
 * so that the main connection is the last one and its close checkpoints and removes the WAL.
 */
export function stopCheckpointer(db: Db): void {
  const checkpointer = running.get(db);
  if (!checkpointer) return;
  running.delete(db);
  const { control, worker } = checkpointer;
  Atomics.store(control, STOP, 1);
  Atomics.notify(control, STOP);
  // Started but not yet running its loop: it stops at its first check.
  Atomics.wait(control, DONE, 0, 1000);
  worker.removeAllListeners('exit');
  void worker.terminate();
}

/** Checkpoints the handle's worker has run (tests). */
export function workerCheckpoints(db: Db): number {
  const checkpointer = running.get(db);
  return checkpointer ? Atomics.load(checkpointer.control, CHECKPOINTS) : 0;
}
