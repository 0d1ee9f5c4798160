/**
 * The PostgreSQL store from the command line (issue 18, first stage), with the built binary:
 * - `svc doctor --store` reports the kind, the redacted URL, the round trip, the server version,
 *   the schema version against the binary's and the role (primary); exit 1 when unreachable;
 *   for SQLite the file and its schema version;
 * - `svc service start http` with a postgres URL connects, migrates and serves from it;
 *   a wrong URL is one line naming host, port and database, password masked, no stack trace;
 * - with a postgres URL a command reads from PostgreSQL and nothing is written to SQLite (no svc.db);
 * - the password given through ${ENV} interpolation is never printed.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { binarySchemaVersion } from '../../src/store/postgres/migrate';
import { postgresForFile } from '../helpers/postgres';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { spawnServer } from '../http/spawn-server';

const pg = postgresForFile();
const LATEST = binarySchemaVersion();
const PASSWORD = 'hunter2-secret-pw';

function env(workspace: string, extra: Record<string, string> = {}) {
  return { SVC_DATA_DIR: join(workspace, 'data'), XDG_CONFIG_HOME: join(workspace, '.config'), ...extra };
}

const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at .+:\d+:\d+/);

describe.skipIf(!pg.available)('PostgreSQL store from the CLI', () => {
  it('STORE-PG-30: doctor --store on PostgreSQL; service start connects, migrates and serves from it; svc.db untouched', async () => {
    const cluster = pg.cluster();
    const url = await cluster.createDatabase();
    const withPassword = url.replace('postgres@', `postgres:${PASSWORD}@`);
    const workspace = tmpWorkspace();
    const vars = env(workspace, { SVC_STORE_URL: withPassword });

    const before = await runBin(['doctor', '--store', '--json'], { cwd: workspace, env: vars });
    expect(before.code, before.stderr).toBe(0);
    const report = JSON.parse(before.stdout);
    expect(report).toMatchObject({
      kind: 'postgres',
      ok: true,
      location: url.replace('postgres@', 'postgres:***@'),
      schema_version: 0,
      binary_schema_version: LATEST,
      server_version: expect.stringMatching(/^\d+/),
      role: 'primary',
      detail: expect.stringContaining(`${LATEST} migration(s) pending`),
    });
    expect(report.round_trip_ms).toBeGreaterThan(0);

    // The server connects, migrates and serves from PostgreSQL.
    const server = spawnServer(['service', 'start', 'http', '--port', '0', '--auth', 'none'], {
      cwd: workspace,
      env: { ...vars, HOME: join(workspace, '.home') },
      timeoutMs: 60_000,
    });
    const served = await server.ready;
    const health = (await (await fetch(`${served}/healthz`)).json()) as any;
    expect(health).toMatchObject({ ok: true, store: { kind: 'postgres', ok: true, schema_version: LATEST } });
    const created = await fetch(`${served}/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'on postgres' }),
    });
    expect(created.status).toBe(201);
    server.child.kill('SIGTERM');
    expect(await server.exit).toBe(0);
    const start = { stdout: server.stdout(), stderr: server.stderr() };
    noStack(start.stderr);

    const after = await runBin(['doctor', '--store'], { cwd: workspace, env: vars });
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toContain('kind     postgres');
    expect(after.stdout).toContain(`schema   ${LATEST} applied, this svc knows ${LATEST}`);
    expect(after.stdout).toContain('role     primary');

    // A command reads its state from PostgreSQL (sessions are served from it).
    const list = await runBin(['session', 'list', '--json'], { cwd: workspace, env: vars });
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).sessions.map((x: any) => x.title)).toEqual(['on postgres']);

    for (const output of [before, start, after, list])
      expect(output.stdout + output.stderr).not.toContain(PASSWORD);
    expect(existsSync(join(workspace, 'data', 'svc.db'))).toBe(false);
  });

  it('STORE-PG-31, STORE-PG-919: a wrong URL is a clear error at start (host, port, database; password masked; no stack); plain doctor names it as one problem', async () => {
    const cluster = pg.cluster();
    const workspace = tmpWorkspace();
    const unreachable = env(workspace, { SVC_STORE_URL: `postgres://svc:${PASSWORD}@127.0.0.1:1/svc_prod` });
    const start = await runBin(['service', 'start', 'http', '--port', '0'], {
      cwd: workspace,
      env: unreachable,
    });
    expect(start.code).toBe(1);
    expect(start.stderr).toBe(
      'svc: cannot reach PostgreSQL at 127.0.0.1:1 (database "svc_prod", user "svc", postgres://svc:***@127.0.0.1:1/svc_prod): connection refused; start the server or check [store] url or SVC_STORE_URL, then run svc doctor --store\n',
    );
    const doctor = await runBin(['doctor', '--store'], { cwd: workspace, env: unreachable });
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toContain('reached  no');
    expect(doctor.stdout).toContain('problem  cannot reach PostgreSQL at 127.0.0.1:1');
    // Plain doctor checks everything else and names the store as one problem (STORE-PG-919).
    const plain = await runBin(['doctor'], { cwd: workspace, env: unreachable });
    expect(plain.code).toBe(1);
    expect(plain.stdout).toMatch(
      /^ {2}✗ store {6}cannot reach PostgreSQL at 127\.0\.0\.1:1 \(database "svc_prod"/m,
    );
    expect(plain.stdout).toMatch(/^ {2}✓ sandbox|^ {2}! sandbox|^ {2}✗ sandbox/m);
    expect(plain.stdout).toMatch(/^ {2}[✓!] node /m);
    // svc.db is not used on PostgreSQL: no line says svc would create it.
    expect(plain.stdout).not.toMatch(/^ {2}. database |svc\.db|svc creates it/m);
    const plainJson = JSON.parse(
      (await runBin(['doctor', '--json'], { cwd: workspace, env: unreachable })).stdout,
    );
    expect(plainJson.database.advice).toBe('not used: the store is PostgreSQL ([store] url)');

    const missing = env(workspace, { SVC_STORE_URL: cluster.urlOf('no_such_db') });
    const noDb = await runBin(['service', 'start', 'http', '--port', '0'], { cwd: workspace, env: missing });
    expect(noDb.code).toBe(2);
    expect(noDb.stderr).toMatch(
      new RegExp(
        `^svc: PostgreSQL at 127\\.0\\.0\\.1:${cluster.port} \\(database "no_such_db".*does not exist; create it`,
      ),
    );
    for (const output of [start, doctor, plain, noDb]) {
      noStack(output.stderr);
      expect(output.stdout + output.stderr).not.toContain(PASSWORD);
    }
    expect(existsSync(join(workspace, 'data', 'svc.db'))).toBe(false);
  });

  it('STORE-PG-32: [store] url with ${ENV} interpolation; the password never printed; SQLite doctor --store', async () => {
    const cluster = pg.cluster();
    const url = await cluster.createDatabase();
    const workspace = tmpWorkspace({
      files: {
        'svc.toml': `[store]\nurl = "${url.replace('postgres@', 'postgres:${PG_PASSWORD}@')}"\npool_size = 2\n`,
      },
    });
    const vars = env(workspace, { PG_PASSWORD: PASSWORD });
    const doctor = await runBin(['doctor', '--store', '--json'], { cwd: workspace, env: vars });
    expect(doctor.code, doctor.stderr).toBe(0);
    expect(JSON.parse(doctor.stdout)).toMatchObject({ kind: 'postgres', ok: true });
    const shown = await runBin(['config', 'show-config'], { cwd: workspace, env: vars });
    expect(shown.stdout + shown.stderr + doctor.stdout).not.toContain(PASSWORD);

    const plain = tmpWorkspace();
    const sqlite = await runBin(['doctor', '--store'], { cwd: plain, env: env(plain) });
    expect(sqlite.code, sqlite.stderr).toBe(0);
    expect(sqlite.stdout).toContain('kind     sqlite');
    expect(sqlite.stdout).toContain(`file     ${join(plain, 'data', 'svc.db')}`);
  });
});
