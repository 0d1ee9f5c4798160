/**
 * A throwaway PostgreSQL cluster for one test file (issue 18): Debian's binaries from
 * /usr/lib/postgresql/<version>/bin, `initdb -A trust` in a temp dir, a random free port on
 * 127.0.0.1 with the socket in the same dir, a fresh database per test, `pg_ctl stop -m immediate`
 * after the file. As root the cluster runs as the `postgres` OS user (initdb refuses root).
 *
 * Missing PostgreSQL: under CI=true the file's first test fails naming `apt-get install
 * postgresql` (.ci/run installs it); elsewhere the file is skipped with that message, as
 * test/sandbox does for bubblewrap.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pgDriver from 'pg';
import { afterAll, beforeAll, it } from 'vitest';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { migratePostgres } from '../../src/store/postgres/migrate';
import { until } from './until';

export const POSTGRES_INSTALL = 'apt-get install postgresql';

/** The directory holding initdb and pg_ctl (the newest installed version), if any. */
export function findPostgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')) && existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : undefined;
}

export interface PostgresCluster {
  host: string;
  port: number;
  dir: string;
  /** The URL of a new, empty database (as the superuser `postgres`, no password). */
  createDatabase(prefix?: string): Promise<string>;
  /** The URL of a database by name (it may not exist). */
  urlOf(database: string): string;
  /** A streaming-replication standby of this cluster (pg_basebackup -R), on its own port. */
  startStandby(): Promise<PostgresCluster>;
  /** `pg_ctl restart -m immediate`: a crash and a restart on the same port; resolves once it accepts. */
  restart(): void;
  stop(): void;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function asClusterUser(bin: string, args: string[]): void {
  const root = process.getuid?.() === 0;
  const [command, argv] = root ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  execFileSync(command, argv, { stdio: 'pipe', cwd: '/', timeout: 60_000 });
}

let databases = 0;

/** Start a cluster; throws naming the install command when PostgreSQL is missing. */
export interface StartOptions {
  /**
   * Commits that survive a crash of the server (`pg_ctl restart -m immediate`): synchronous_commit
   * stays on. Otherwise the cluster trades that for speed (a commit returns before its WAL is
   * written), which a test that restarts the server mid-run must not.
   */
  durable?: boolean;
}

export async function startPostgres(options: StartOptions = {}): Promise<PostgresCluster> {
  const bin = findPostgresBin();
  if (!bin)
    throw new Error(
      `PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin): ${POSTGRES_INSTALL}`,
    );
  const dir = clusterDir();
  const data = join(dir, 'data');
  asClusterUser(join(bin, 'initdb'), [
    '-D',
    data,
    '-A',
    'trust',
    '-U',
    'postgres',
    '--no-sync',
    '-E',
    'UTF8',
  ]);
  return launch(bin, dir, options.durable);
}

function clusterDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  return dir;
}

/** Start the cluster in `dir/data` on a free port; stopped (and removed) at stop() or exit. */
async function launch(bin: string, dir: string, durable = false): Promise<PostgresCluster> {
  const data = join(dir, 'data');
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=${durable ? 'on' : 'off'} -c full_page_writes=off`;
  asClusterUser(join(bin, 'pg_ctl'), ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start']);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    process.removeListener('exit', stop);
    try {
      asClusterUser(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // already down
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  const host = '127.0.0.1';
  const urlOf = (database: string) => `postgres://postgres@${host}:${port}/${database}`;
  return {
    host,
    port,
    dir,
    urlOf,
    async createDatabase(prefix = 'svc_test') {
      const name = `${prefix}_${process.pid}_${++databases}`;
      const { default: pg } = await import('pg');
      const client = new pg.Client({ connectionString: urlOf('postgres') });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return urlOf(name);
    },
    async startStandby() {
      const standbyDir = clusterDir();
      const args = [
        '-D',
        join(standbyDir, 'data'),
        '-R',
        '-X',
        'stream',
        // A fast checkpoint: the default spreads it over minutes.
        '--checkpoint=fast',
        '--no-sync',
        '-h',
        host,
        '-p',
        String(port),
        '-U',
        'postgres',
      ];
      asClusterUser(join(bin, 'pg_basebackup'), args);
      return launch(bin, standbyDir);
    },
    restart() {
      asClusterUser(join(bin, 'pg_ctl'), [
        '-D',
        data,
        '-m',
        'immediate',
        '-o',
        options,
        '-l',
        join(dir, 'log'),
        '-w',
        'restart',
      ]);
    },
    stop,
  };
}

/**
 * One cluster for the calling test file: started in beforeAll, stopped in afterAll. `available`
 * says whether the file's PostgreSQL tests run; when PostgreSQL is missing a test named after the
 * install command fails under CI=true (and is skipped elsewhere), so the reason is always shown.
 */
export function postgresForFile(options: StartOptions = {}): {
  available: boolean;
  cluster: () => PostgresCluster;
} {
  const available = findPostgresBin() !== undefined;
  const ci = process.env.CI === 'true';
  let cluster: PostgresCluster | undefined;
  if (!available) {
    it.skipIf(!ci)(`PostgreSQL is installed (else: ${POSTGRES_INSTALL})`, () => {
      throw new Error(`PostgreSQL is not installed: ${POSTGRES_INSTALL}`);
    });
    return {
      available,
      cluster: () => {
        throw new Error(`PostgreSQL is not installed: ${POSTGRES_INSTALL}`);
      },
    };
  }
  beforeAll(async () => {
    cluster = await startPostgres(options);
  }, 60_000);
  afterAll(() => cluster?.stop());
  return {
    available,
    cluster: () => {
      if (!cluster)
        throw new Error('the PostgreSQL cluster has not started (postgresForFile() runs in beforeAll)');
      return cluster;
    },
  };
}

/** A fresh database on the cluster, migrated, and a client of 4 connections to it. */
export async function migratedDatabase(cluster: PostgresCluster): Promise<SqlClient> {
  const sql = await createPostgresClient({
    url: await cluster.createDatabase(),
    pool_size: 4,
    statement_timeout_ms: 30_000,
    connect_timeout_ms: 5_000,
  });
  await migratePostgres(sql);
  return sql;
}

/** Two nodes on one fresh database, migrated by the first: two pools of 4 connections each. */
export async function twoNodes(
  cluster: PostgresCluster,
): Promise<{ sql: SqlClient; other: SqlClient; close(): Promise<void> }> {
  const url = await cluster.createDatabase();
  const node = () =>
    createPostgresClient({ url, pool_size: 4, statement_timeout_ms: 30_000, connect_timeout_ms: 5_000 });
  const sql = await node();
  await migratePostgres(sql);
  const other = await node();
  return {
    sql,
    other,
    close: async () => {
      await other.close();
      await sql.close();
    },
  };
}

/** The client, adding the text of every statement it sends to `sent`. */
export function recordingClient(sql: SqlClient, sent: string[]): SqlClient {
  return {
    ...sql,
    one: (text, params) => {
      sent.push(text);
      return sql.one(text, params);
    },
    query: (text, params) => {
      sent.push(text);
      return sql.query(text, params);
    },
    run: (text, params) => {
      sent.push(text);
      return sql.run(text, params);
    },
  };
}

/** Every statement text any pg client of this process sends from now on (until `restore`), control statements included. */
export function driverStatements(): { sent: string[]; restore(): void } {
  const prototype = pgDriver.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = prototype.query;
  const sent: string[] = [];
  prototype.query = function query(this: unknown, config: unknown, ...rest: unknown[]) {
    sent.push(typeof config === 'string' ? config : String((config as { text?: string }).text));
    return original.call(this, config, ...rest);
  };
  return {
    sent,
    restore: () => {
      prototype.query = original;
    },
  };
}

/**
 * `read` called until a call sends no statement (`reads` counts them): answered from memory once
 * the notifications of the writes before have arrived. Answers that call's value.
 */
export async function untilKept<T>(reads: () => number, read: () => Promise<T>): Promise<T> {
  let value: T | undefined;
  await until(async () => {
    const at = reads();
    value = await read();
    return reads() === at;
  }, 'a read answered from memory');
  return value as T;
}
