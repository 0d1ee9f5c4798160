import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { SvcError, toSvcError } from '../errors';
import { migrate, openDb } from './db';
import { migrations } from './migrations/index';
import { sqlitePackage } from './sqlite-driver';

describe('database', () => {
  it('opens in WAL mode with foreign keys and applies every migration once', () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    const applied = (
      db.prepare('SELECT id FROM schema_migrations ORDER BY id').all() as { id: number }[]
    ).map((r) => r.id);
    expect(applied).toEqual(migrations.map((m) => m.id).sort((a, b) => a - b));
    expect(migrate(db, migrations)).toEqual([]);
    db.close();
  });

  it('migrates an existing database forward, keeping its rows', () => {
    const dataDir = tmpWorkspace();
    const old = openDb({ dataDir, migrations: migrations.slice(0, 1) });
    old
      .prepare("INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('ses_1', 'kept', 1, 1)")
      .run();
    old.close();
    const db = openDb({ dataDir });
    expect(db.prepare('SELECT title FROM sessions').get()).toEqual({ title: 'kept' });
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'session_events'").get()).toBeDefined();
    db.close();
  });

  it('applies a migration merged late even when higher ids already ran', () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir, migrations: [{ id: 50, name: 'late-high', sql: 'CREATE TABLE a (x)' }] });
    expect(migrate(db, [{ id: 10, name: 'early', sql: 'CREATE TABLE b (x)' }])).toEqual([10]);
    db.close();
  });

  it('rolls back a failing migration as a whole', () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir, migrations: [] });
    expect(() =>
      migrate(db, [
        { id: 1, name: 'ok', sql: 'CREATE TABLE t (x)' },
        { id: 2, name: 'bad', sql: 'NOT SQL' },
      ]),
    ).toThrow();
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 't'").get()).toBeUndefined();
    db.close();
  });

  it('refuses a corrupt database with a clear error and leaves the file untouched', () => {
    const dataDir = tmpWorkspace();
    const file = join(dataDir, 'svc.db');
    writeFileSync(file, 'this is not a database at all, not even close '.repeat(100));
    const before = readFileSync(file);
    let error: unknown;
    try {
      openDb({ dataDir });
    } catch (e) {
      error = e;
    }
    expect(SvcError.is(error)).toBe(true);
    expect((error as Error).message).toMatch(/corrupt or not an SQLite database; it was left untouched/);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it.skipIf(process.getuid?.() === 0)('refuses an unwritable data dir', () => {
    const dataDir = tmpWorkspace();
    chmodSync(dataDir, 0o500);
    expect(() => openDb({ dataDir })).toThrowError(/not writable/);
    chmodSync(dataDir, 0o700);
  });

  it('a write blocked by another process past the busy timeout is a clear unavailable error, not internal', () => {
    const dataDir = tmpWorkspace();
    const holder = openDb({ dataDir });
    const other = openDb({ dataDir, busyTimeoutMs: 20 });
    holder.exec('BEGIN IMMEDIATE');
    let thrown: unknown;
    try {
      other
        .prepare("INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('ses_x', 't', 1, 1)")
        .run();
    } catch (error) {
      thrown = error;
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
      other.close();
    }
    const e = toSvcError(thrown);
    expect(e.code).toBe('unavailable');
    expect(e.message).toMatch(/database .* is locked by another process; try again/);
    expect(e.exitCode).toBe(1);
  });

  it('refuses a read-only svc.db with a clear error naming the file, and writes nothing', () => {
    const dataDir = tmpWorkspace();
    openDb({ dataDir }).close();
    const file = join(dataDir, 'svc.db');
    for (const extra of ['-wal', '-shm']) rmSync(`${file}${extra}`, { force: true });
    chmodSync(file, 0o444);
    const before = readFileSync(file);
    expect(() => openDb({ dataDir })).toThrowError(
      `database ${file} is read-only (mode 0444); svc needs to write it: make it writable (chmod u+w ${file}) or pass --data-dir to use another data dir. Nothing was written`,
    );
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(existsSync(`${file}-wal`)).toBe(false);
    chmodSync(file, 0o644);
  });

  it('starts transactions with BEGIN IMMEDIATE: the write lock is held from the start', () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const other = openDb({ dataDir, busyTimeoutMs: 10 });
    let blocked: unknown;
    db.transaction(() => {
      // Only a read so far: a deferred BEGIN would hold no write lock yet.
      db.prepare('SELECT count(*) FROM sessions').get();
      try {
        other.exec('BEGIN IMMEDIATE');
        other.exec('ROLLBACK');
      } catch (error) {
        blocked = error;
      }
    })();
    other.close();
    db.close();
    expect(toSvcError(blocked).message).toMatch(/is locked by another process/);
  });

  it('retries a transaction whose start outwaits the busy timeout', async () => {
    const dataDir = tmpWorkspace();
    openDb({ dataDir }).close();
    // Another process holds the write lock for a while (longer than the 10 ms busy timeout).
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const db = new (require(${JSON.stringify(sqlitePackage())}))(${JSON.stringify(join(dataDir, 'svc.db'))});
         db.exec('BEGIN IMMEDIATE'); console.log('locked');
         setTimeout(() => { db.exec('COMMIT'); db.close(); }, 300);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'], cwd: process.cwd() },
    );
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    const db = openDb({ dataDir, busyTimeoutMs: 10 });
    const insert = db.transaction(() =>
      db
        .prepare("INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('ses_r', 'r', 1, 1)")
        .run(),
    );
    expect(insert().changes).toBe(1);
    db.close();
    await new Promise((resolve) => holder.once('close', resolve));
  });

  it('refuses a data dir that is a file', () => {
    const root = tmpWorkspace({ files: { blocker: 'x' } });
    // CLI-FIRST-10: a setting to change, so a config error (exit 2); it was `unavailable` (exit 1).
    expect(() => openDb({ dataDir: join(root, 'blocker') })).toThrowError(
      expect.objectContaining({ code: 'config_error', message: expect.stringMatching(/is not a directory/) }),
    );
    expect(() => openDb({ dataDir: join(root, 'blocker', 'data') })).toThrowError(
      /cannot be created \(ENOTDIR\)/,
    );
  });
});
