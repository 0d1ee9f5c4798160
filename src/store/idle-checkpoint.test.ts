import { existsSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { type Db, enableGroupCommit, groupCommit, openDb } from './db';
import { IDLE_MIN_FRAMES, IDLE_POLL_MS, walFrames } from './idle-checkpoint';

// The flags are read where group commit is turned on (./db.ts): cleared first.
delete process.env.SVC_CHECKPOINT_WORKER;
delete process.env.SVC_IDLE_CHECKPOINT;
enableGroupCommit();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const turn = () => new Promise((resolve) => setImmediate(resolve));
const blob = 'x'.repeat(3000); // about one page a row

/** Writes `rows` sessions as one group commit (about a frame a row). */
async function writeBatch(db: Db, first: number, rows: number): Promise<void> {
  const insert = db.prepare('INSERT INTO sessions (id, title, created_at, updated_at) VALUES (?, ?, 1, 1)');
  groupCommit(db);
  for (let i = first; i < first + rows; i++) insert.run(`ses_${i}`, blob);
  await turn();
}

/** The WAL was copied back and started again from its start. */
const restarted = (db: Db) => () => (walFrames(db)?.frames ?? Number.POSITIVE_INFINITY) <= 2;

/** Waits (bounded) until `done` holds; the idle checkpoint needs two polls without a write. */
async function until(done: () => boolean): Promise<void> {
  for (let wait = 0; wait < 400 && !done(); wait++) await sleep(IDLE_POLL_MS / 4);
}

describe('idle checkpoint', () => {
  it('ENGINE-CPU-1: the service copies its WAL back into svc.db and restarts it once its store is idle, before any COMMIT would', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const rows = IDLE_MIN_FRAMES + 50;
    await writeBatch(db, 0, rows);
    const written = walFrames(db);
    // Below the automatic checkpoint (1000 frames): nothing is copied back by a COMMIT.
    expect(written?.frames).toBeGreaterThanOrEqual(IDLE_MIN_FRAMES);
    expect(written?.frames).toBeLessThan(1000);
    expect(written?.backfilled).toBe(0);
    const before = statSync(db.name).size;
    await until(restarted(db));
    // The rows' pages are in svc.db, and the WAL starts again from its start (its new header
    // written and synced by the idle write of one page), so the next COMMIT does neither.
    expect(statSync(db.name).size).toBeGreaterThan(before + rows * 3000);
    expect(walFrames(db)?.frames).toBeLessThanOrEqual(2);
    expect(db.pragma('user_version', { simple: true })).toBe(0);
    await writeBatch(db, 10_000, 1);
    expect(walFrames(db)?.frames).toBeLessThan(10);
    expect((db.prepare('SELECT count(*) AS n FROM sessions').get() as { n: number }).n).toBe(rows + 1);
    db.close();
    // The last close still checkpoints and removes the WAL.
    expect(existsSync(`${db.name}-wal`)).toBe(false);
  });

  it('ENGINE-CPU-2: no idle checkpoint while writes keep landing, nor for a few frames', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    // A write every half poll: the store is never idle for a whole poll.
    for (let batch = 0; batch < 12; batch++) {
      await writeBatch(db, batch * 40, 40);
      await sleep(IDLE_POLL_MS / 2);
    }
    expect(walFrames(db)?.frames).toBeGreaterThan(IDLE_MIN_FRAMES);
    expect(walFrames(db)?.frames).toBeLessThan(1000);
    expect(walFrames(db)?.backfilled).toBe(0);
    db.close();

    const quiet = openDb({ dataDir: tmpWorkspace() });
    await writeBatch(quiet, 0, 3);
    await sleep(IDLE_POLL_MS * 3);
    expect(walFrames(quiet)?.backfilled).toBe(0);
    quiet.close();
  });

  it('ENGINE-CPU-3: an idle checkpoint leaves a reader on another connection its snapshot and loses no row', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const reader = openDb({ dataDir });
    await writeBatch(db, 0, 10);
    const count = reader.prepare('SELECT count(*) AS n FROM sessions');
    // A read transaction held open across the checkpoint (PASSIVE never waits for it).
    reader.exec('BEGIN');
    expect((count.get() as { n: number }).n).toBe(10);
    await writeBatch(db, 10, IDLE_MIN_FRAMES + 50);
    await sleep(IDLE_POLL_MS * 4);
    // The frames after the reader's snapshot stay in the WAL for it; its view is unchanged.
    expect((count.get() as { n: number }).n).toBe(10);
    expect(walFrames(db)?.frames).toBeGreaterThan(IDLE_MIN_FRAMES);
    reader.exec('COMMIT');
    await until(restarted(db));
    expect(walFrames(db)?.frames).toBeLessThanOrEqual(2);
    expect((count.get() as { n: number }).n).toBe(IDLE_MIN_FRAMES + 60);
    reader.close();
    db.close();
  });

  it('ENGINE-CPU-4: with another connection holding the write lock, the idle checkpoint still copies the WAL back and does not wait for the lock to restart it', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const other = openDb({ dataDir });
    await writeBatch(db, 0, IDLE_MIN_FRAMES + 50);
    // Another writer (a `svc run` on the same svc.db) holds the write lock across the idle time.
    other.exec('BEGIN IMMEDIATE');
    await until(() => walFrames(db)?.backfilled === walFrames(db)?.frames);
    await sleep(IDLE_POLL_MS * 2);
    const wal = walFrames(db);
    expect(wal?.backfilled).toBe(wal?.frames);
    expect(wal?.frames).toBeGreaterThan(IDLE_MIN_FRAMES);
    // The restart did not take the lock (busy timeout 0 for its attempt, restored after it).
    expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
    other
      .prepare("INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('other', 't', 1, 1)")
      .run();
    other.exec('COMMIT');
    // The other writer's commit went on top of the copied-back WAL; nothing was lost.
    await writeBatch(db, 10_000, 1);
    expect((db.prepare('SELECT count(*) AS n FROM sessions').get() as { n: number }).n).toBe(
      IDLE_MIN_FRAMES + 52,
    );
    other.close();
    db.close();
  });
});
