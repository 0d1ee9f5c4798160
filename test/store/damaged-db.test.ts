/**
 * A svc.db svc cannot use (issue 15, item 6). Pins:
 * - a corrupt or read-only svc.db is a clear error naming the file and what to do, and nothing
 *   is written to it (same bytes, no -wal file);
 * - `/healthz` answers `ready: false` with that reason while it lasts;
 * - `svc doctor` runs SQLite's integrity check read-only: ok on a sound database, the problems
 *   of a damaged one, unreadable for a file that is no database; exit 1 for those; it reports the
 *   data dir and the sandbox (state, reason).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { probeBwrap } from '../../src/sandbox/bwrap';
import { openDb } from '../../src/store/db';
import { createHttpApp } from '../../src/surfaces/http/index';
import { makeTestApp } from '../helpers/make-test-app';
import { BIN } from '../helpers/run-bin';
import { svc } from '../providers/helpers/cli';

const NOT_A_DB = 'this is not a database at all, not even close '.repeat(100);

async function appWithDb(content: 'corrupt' | 'damaged' | 'sound' | 'read-only') {
  const app = await makeTestApp();
  const file = join(app.dataDir, 'svc.db');
  if (content === 'corrupt') {
    openDb({ dataDir: app.dataDir }).close(); // the data dir as svc makes it
    writeFileSync(file, NOT_A_DB);
  } else {
    const db = openDb({ dataDir: app.dataDir });
    if (content === 'damaged') {
      const insert = db.prepare(
        'INSERT INTO sessions (id, title, created_at, updated_at) VALUES (?, ?, 1, 1)',
      );
      db.transaction(() => {
        for (let i = 0; i < 2000; i++) insert.run(`ses_${i}`, `title ${i} ${'x'.repeat(100)}`);
      })();
    }
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    if (content === 'damaged') {
      // Scribble over one page in the middle of the table: the header stays valid.
      const bytes = readFileSync(file);
      bytes.fill(0x5a, bytes.length - 40 * 4096, bytes.length - 39 * 4096);
      writeFileSync(file, bytes);
    }
    if (content === 'read-only') chmodSync(file, 0o444);
  }
  return { app, file, before: readFileSync(file) };
}

describe('a svc.db svc cannot use', () => {
  it('a corrupt svc.db is a clear error naming the file, and stays untouched', async () => {
    const { app, file, before } = await appWithDb('corrupt');
    const result = await svc(app, ['session', 'list']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `svc: database ${file} is corrupt or not an SQLite database; it was left untouched (run svc doctor for details; move it aside to start fresh, or restore a backup)\n`,
    );
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(existsSync(`${file}-wal`)).toBe(false);
  });

  it('a read-only svc.db is a clear error naming the file, and stays untouched', async () => {
    const { app, file, before } = await appWithDb('read-only');
    const result = await svc(app, ['session', 'list']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`svc: database ${file} is read-only (mode 0444); svc needs to write it`);
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(existsSync(`${file}-wal`)).toBe(false);
  });

  it('a data dir on a read-only file system is the same clear error (the engine says read-only)', async () => {
    const probe = probeBwrap(undefined, process.env, 'none');
    expect(probe.usable, `bubblewrap is needed here: ${probe.error}`).toBe(true);
    const { app, file, before } = await appWithDb('sound');
    // The data dir mounted read-only for the svc process itself (root ignores file modes).
    const run = spawnSync(
      probe.path!,
      [
        '--bind',
        '/',
        '/',
        '--dev',
        '/dev',
        '--ro-bind',
        app.dataDir,
        app.dataDir,
        '--',
        process.execPath,
        BIN,
        'session',
        'list',
      ],
      {
        cwd: app.workspace,
        env: { PATH: process.env.PATH, HOME: app.env.HOME, XDG_CONFIG_HOME: app.env.XDG_CONFIG_HOME },
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(run.stderr).toMatch(
      new RegExp(
        `^svc: (data dir ${app.dataDir} is not writable|database ${file} is read-only or cannot be opened for writing)`,
      ),
    );
    // An unwritable data dir is a setting to change (exit 2); a read-only svc.db in it is not.
    expect(run.status).toBe(run.stderr.startsWith('svc: data dir') ? 2 : 1);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('/healthz says ready: false with the reason (503) while svc.db cannot be opened', async () => {
    const corrupt = await appWithDb('corrupt');
    const health = await createHttpApp(corrupt.app, { allowNoAuth: true }).request('/healthz');
    expect(health.status).toBe(503);
    expect(await health.json()).toEqual({
      ok: true,
      ready: false,
      reason: `database ${corrupt.file} is corrupt or not an SQLite database; it was left untouched (run svc doctor for details; move it aside to start fresh, or restore a backup)`,
      store: { kind: 'sqlite', ok: false },
      version: expect.any(String),
    });
    const readOnly = await appWithDb('read-only');
    const body = await (await createHttpApp(readOnly.app, { allowNoAuth: true }).request('/healthz')).json();
    expect(body).toMatchObject({ ready: false, reason: expect.stringContaining('is read-only (mode 0444)') });
    const sound = await appWithDb('sound');
    expect(await (await createHttpApp(sound.app, { allowNoAuth: true }).request('/healthz')).json()).toEqual({
      ok: true,
      ready: true,
      store: { kind: 'sqlite', ok: true, schema_version: expect.any(Number) },
      version: expect.any(String),
    });
  });

  it('svc doctor: integrity ok on a sound database, and the sandbox state', async () => {
    const { app } = await appWithDb('sound');
    const result = await svc(app, ['doctor', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.json).toMatchObject({
      ok: true,
      data_dir: app.dataDir,
      database: { integrity: 'ok', problems: [], writable: true, journal_mode: 'wal' },
      sandbox: { mode: 'auto', state: 'active', reason: expect.stringMatching(/^bubblewrap /) },
    });
    const text = await svc(app, ['doctor']);
    // The config's check comes first (CLI-FIRST-7), then the data dir.
    expect(text.stdout).toMatch(/^svc doctor: ok\n {2}✓ config {5}.*\n {2}✓ data_dir/);
    expect(text.stdout).toContain('✓ database   ');
    expect(text.stdout).toContain('integrity ok');
    expect(text.stdout).toContain('✓ sandbox    active (mode auto)');
    // The runtime's line: ok or a warning (Node 20 is past its end of life), never an error.
    expect(text.stdout).toMatch(
      new RegExp(`\n {2}[✓!] node {7}Node ${process.versions.node.replaceAll('.', '\\.')}`),
    );
    expect(result.json.checks.at(-1)).toMatchObject({
      name: 'node',
      status: expect.stringMatching(/^(ok|warn)$/),
    });
  });

  it('svc doctor finds a damaged page and a file that is no database, exits 1, writes nothing', async () => {
    const damaged = await appWithDb('damaged');
    const result = await svc(damaged.app, ['doctor', '--json']);
    expect(result.code).toBe(1);
    expect(result.json.database.integrity).toBe('damaged');
    expect(result.json.database.problems.length).toBeGreaterThan(0);
    expect(result.json.database.advice).toContain(`svc left ${damaged.file} untouched`);
    expect(readFileSync(damaged.file).equals(damaged.before)).toBe(true);

    const corrupt = await appWithDb('corrupt');
    const text = await svc(corrupt.app, ['doctor']);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(
      `✗ database   ${corrupt.file} is not a readable SQLite database (file is not a database)`,
    );
    expect(readFileSync(corrupt.file).equals(corrupt.before)).toBe(true);
  });
});
