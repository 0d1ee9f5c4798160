/**
 * The PostgreSQL store foundation (issue 18) on a real, throwaway cluster (test/helpers/postgres.ts):
 * - the client reads BIGINT as numbers, runs transactions on one connection and rolls back on throw;
 * - migrations create every table of the SQLite schema, are recorded, run once when two nodes
 *   migrate a new database at the same moment, and a newer schema is refused naming both versions;
 * - a wrong URL (nothing listening, unknown database, wrong password) is one SvcError naming host,
 *   port and database with the password masked, never a stack trace;
 * - the store check (svc doctor --store) tells a primary from a standby and reports its replay lag.
 */
import { describe, expect, it } from 'vitest';
import { SvcError } from '../../src/errors';
import { migrations as sqliteMigrations } from '../../src/store/migrations/index';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import {
  binarySchemaVersion,
  migratePostgres,
  postgresSchemaVersion,
} from '../../src/store/postgres/migrate';
import { postgresMigrations } from '../../src/store/postgres/migrations/index';
import { checkStore } from '../../src/store/store-check';
import { postgresTransactions } from '../../src/store/transactions';
import { postgresForFile } from '../helpers/postgres';
import { svcFailure } from '../helpers/svc-failure';
import { sqliteColumns, sqliteTables } from './sqlite-tables';

const pg = postgresForFile();
const LATEST = binarySchemaVersion();
const ALL = postgresMigrations.map((m) => m.id);

async function client(url: string, extra: Partial<Parameters<typeof createPostgresClient>[0]> = {}) {
  return createPostgresClient({
    url,
    pool_size: 4,
    statement_timeout_ms: 30_000,
    connect_timeout_ms: 2_000,
    ...extra,
  });
}

describe.skipIf(!pg.available)('PostgreSQL store', () => {
  it('STORE-PG-10: the client reads BIGINT as numbers; a transaction commits, or rolls back when it throws', async () => {
    const db = await client(await pg.cluster().createDatabase());
    try {
      expect(
        await db.one('SELECT 1700000000123::bigint AS at, count(*) AS n FROM pg_class WHERE false'),
      ).toEqual({ at: 1700000000123, n: 0 });
      await db.run('CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)');
      await db.transaction(async (tx) => {
        await tx.run('INSERT INTO t VALUES ($1, $2)', [1, 'a']);
      });
      const error = await svcFailure(
        db.transaction(async (tx) => {
          await tx.run('INSERT INTO t VALUES ($1, $2)', [2, 'b']);
          throw new SvcError('conflict', 'stop');
        }),
      );
      expect(error.message).toBe('stop');
      expect(await db.query('SELECT id, v FROM t ORDER BY id')).toEqual([{ id: 1, v: 'a' }]);
      expect(await db.run('UPDATE t SET v = $1', ['z'])).toBe(1);
      // A transaction holds one connection throughout.
      const pids = await db.transaction(async (tx) => [
        await tx.one<{ pid: number }>('SELECT pg_backend_pid() AS pid'),
        await tx.one<{ pid: number }>('SELECT pg_backend_pid() AS pid'),
      ]);
      expect(pids[0]).toEqual(pids[1]);
    } finally {
      await db.close();
    }
  });

  it("STORE-PG-18: a transaction is ambient: the client's own statements inside it join it, a nested one is a savepoint", async () => {
    const url = await pg.cluster().createDatabase();
    const db = await client(url);
    const other = await client(url);
    try {
      await db.run('CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)');
      // Two "repositories" that only hold the client, written in one transaction: nothing is seen
      // from another connection before the commit, and a throw rolls both back.
      const repoA = { put: (id: number) => db.run('INSERT INTO t VALUES ($1, $2)', [id, 'a']) };
      const repoB = { put: (id: number) => db.run('INSERT INTO t VALUES ($1, $2)', [id, 'b']) };
      const transactions = postgresTransactions(db);
      let seenInside = -1;
      await transactions.run(async () => {
        expect(db.inTransaction()).toBe(true);
        await repoA.put(1);
        await repoB.put(2);
        seenInside = (await other.one<{ n: number }>('SELECT count(*) AS n FROM t'))?.n ?? -1;
      });
      expect(seenInside).toBe(0);
      expect(db.inTransaction()).toBe(false);
      expect(await other.query('SELECT id, v FROM t ORDER BY id')).toEqual([
        { id: 1, v: 'a' },
        { id: 2, v: 'b' },
      ]);
      await svcFailure(
        transactions.run(async () => {
          await repoA.put(3);
          await repoB.put(4);
          throw new SvcError('conflict', 'stop');
        }),
      );
      expect((await db.one<{ n: number }>('SELECT count(*) AS n FROM t'))?.n).toBe(2);
      // A nested transaction that fails rolls back to its savepoint; the outer one commits.
      await transactions.run(async () => {
        await repoA.put(5);
        await svcFailure(
          db.transaction(async () => {
            await repoB.put(6);
            await repoB.put(5); // duplicate key
          }),
        );
        await repoB.put(7);
      });
      expect((await db.query<{ id: number }>('SELECT id FROM t ORDER BY id')).map((r) => r.id)).toEqual([
        1, 2, 5, 7,
      ]);
    } finally {
      await other.close();
      await db.close();
    }
  });

  it('STORE-PG-16: statement_timeout_ms is set on every connection; a slow statement is a timeout error', async () => {
    const db = await client(await pg.cluster().createDatabase(), { statement_timeout_ms: 150 });
    try {
      expect(await db.one('SHOW statement_timeout')).toEqual({ statement_timeout: '150ms' });
      const error = await svcFailure(db.query('SELECT pg_sleep(2)'));
      expect(error.code).toBe('timeout');
      expect(error.message).toContain('statement_timeout_ms');
      expect(await db.one('SELECT 1 AS ok')).toEqual({ ok: 1 });
    } finally {
      await db.close();
    }
  });

  it('STORE-PG-11: migration 1 creates every table of the SQLite schema and records its version', async () => {
    const db = await client(await pg.cluster().createDatabase());
    try {
      expect(await migratePostgres(db)).toEqual({ applied: ALL, version: LATEST });
      expect(await migratePostgres(db)).toEqual({ applied: [], version: LATEST });
      const tables = (
        await db.query<{ name: string }>(
          "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'",
        )
      ).map((r) => r.name);
      const expected = sqliteTables(sqliteMigrations);
      expect(expected.length).toBeGreaterThanOrEqual(45);
      expect(tables.sort()).toEqual([...expected, 'schema_migrations'].sort());
      expect(await postgresSchemaVersion(db)).toBe(binarySchemaVersion());
      // Column by column: INTEGER → bigint, REAL → double precision, TEXT → text; PostgreSQL adds
      // only row_seq (SQLite's rowid order) and message_search_docs.terms (the tsvector index).
      const columns = await db.query<{ table_name: string; column_name: string; data_type: string }>(
        "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = 'public'",
      );
      const translate: Record<string, string> = { INTEGER: 'bigint', REAL: 'double precision', TEXT: 'text' };
      for (const [table, sqlite] of sqliteColumns(sqliteMigrations)) {
        const pgColumns = new Map(
          columns.filter((c) => c.table_name === table).map((c) => [c.column_name, c.data_type]),
        );
        const expectedColumns = new Map([...sqlite].map(([name, type]) => [name, translate[type] ?? type]));
        if (pgColumns.has('row_seq')) expectedColumns.set('row_seq', 'bigint');
        if (table === 'message_search_docs') expectedColumns.set('terms', 'tsvector');
        // Fractions of a millisecond, which SQLite's INTEGER column keeps as REAL (migration 10).
        if (table === 'model_calls')
          for (const name of ['ttft_ms', 'duration_ms']) expectedColumns.set(name, 'double precision');
        expect(Object.fromEntries(pgColumns), table).toEqual(Object.fromEntries(expectedColumns));
      }
    } finally {
      await db.close();
    }
  });

  it('STORE-PG-12: two nodes migrating a new database at once: applied once, both succeed', async () => {
    const url = await pg.cluster().createDatabase();
    const a = await client(url);
    const b = await client(url);
    try {
      const [ra, rb] = await Promise.all([migratePostgres(a), migratePostgres(b)]);
      expect([ra.applied, rb.applied].sort()).toEqual([[], ALL]);
      expect(ra.version).toBe(LATEST);
      expect(rb.version).toBe(LATEST);
      expect(await a.query('SELECT id FROM schema_migrations')).toEqual(ALL.map((id) => ({ id })));
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('STORE-PG-13: a database migrated by a newer svc is refused with both version numbers, untouched', async () => {
    const db = await client(await pg.cluster().createDatabase());
    try {
      await migratePostgres(db);
      const future = LATEST + 1;
      await db.run("INSERT INTO schema_migrations (id, name, applied_at) VALUES ($1, 'future', 0)", [future]);
      const error = await svcFailure(migratePostgres(db));
      expect(error.message).toMatch(
        new RegExp(`has schema version ${future}, newer than this svc knows \\(${LATEST}\\)`),
      );
      expect(error.details).toMatchObject({ schema_version: future, binary_schema_version: LATEST });
    } finally {
      await db.close();
    }
  });

  it('STORE-PG-17: the store check reports the primary, and a standby with its replay lag', async () => {
    const cluster = pg.cluster();
    const url = await cluster.createDatabase();
    const primary = await client(url);
    const standby = await cluster.startStandby();
    try {
      await migratePostgres(primary);
      const store = {
        pool_size: 2,
        statement_timeout_ms: 5_000,
        connect_timeout_ms: 5_000,
        node_heartbeat_ms: 3_000,
        node_stale_ms: 10_000,
      };
      expect(await checkStore({ ...store, url }, '/nonexistent')).toMatchObject({
        kind: 'postgres',
        ok: true,
        role: 'primary',
        schema_version: LATEST,
        binary_schema_version: LATEST,
      });
      const standbyUrl = url.replace(`:${cluster.port}/`, `:${standby.port}/`);
      let report = await checkStore({ ...store, url: standbyUrl }, '/nonexistent');
      for (let i = 0; i < 200 && report.schema_version !== LATEST; i++) {
        await new Promise((r) => setTimeout(r, 100));
        report = await checkStore({ ...store, url: standbyUrl }, '/nonexistent');
      }
      expect(report).toMatchObject({ kind: 'postgres', ok: true, role: 'standby', schema_version: LATEST });
      expect(report.replication_lag_ms === null || typeof report.replication_lag_ms === 'number').toBe(true);
    } finally {
      await primary.close();
      standby.stop();
    }
  });

  it('STORE-PG-14: a wrong URL is one clear error naming host, port and database, password masked', async () => {
    const cluster = pg.cluster();
    // Nothing listens on port 1.
    let db: SqlClient = await client('postgres://svc:hunter2-secret@127.0.0.1:1/svc_prod');
    let error = await svcFailure(db.query('SELECT 1'));
    await db.close();
    expect(error.code).toBe('unavailable');
    expect(error.message).toContain('cannot reach PostgreSQL at 127.0.0.1:1 (database "svc_prod"');
    expect(error.message).toContain('postgres://svc:***@127.0.0.1:1/svc_prod');
    expect(error.message).toContain('connection refused');
    expect(error.message).not.toContain('hunter2-secret');
    expect(error.stack ?? '').not.toContain('hunter2-secret');

    db = await client(cluster.urlOf('no_such_db'));
    error = await svcFailure(db.query('SELECT 1'));
    await db.close();
    expect(error.code).toBe('config_error');
    expect(error.message).toContain(`database "no_such_db" does not exist`);
    expect(error.message).toContain(`${cluster.host}:${cluster.port}`);

    db = await client(`postgres://svc:pw@no-such-host.invalid:5432/x`);
    error = await svcFailure(db.query('SELECT 1'));
    await db.close();
    expect(error.message).toMatch(
      /cannot reach PostgreSQL at no-such-host\.invalid:5432.*host "no-such-host\.invalid" not found/,
    );
  });
});
