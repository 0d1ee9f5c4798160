/**
 * A throwaway PostgreSQL cluster for one test file (issue 18): Debian's binaries from
 * /usr/lib/postgresql/<version>/bin, `initdb -A trust` in a temp dir (once per vitest run, then
 * copied), a random free port on 127.0.0.1 with the socket in the same dir, a fresh database per
 * test (a migrated one is a copy of a template migrated once per cluster), `pg_ctl stop -m
 * immediate` after the file. As root the cluster runs as the `postgres` OS user (initdb refuses root).
 *
 * Missing PostgreSQL: under CI=true the file's first test fails naming `apt-get install
 * postgresql` (.ci/run installs it); elsewhere the file is skipped with that message, as
 * test/sandbox does for bubblewrap.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pgDriver from 'pg';
import { afterAll, beforeAll, inject, it } from 'vitest';
import { followOtherNodes } from '../../src/events/pg-notify';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { migratePostgres } from '../../src/store/postgres/migrate';
import { type TableChanges, tableChanges } from '../../src/store/postgres/table-changes';
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
  /**
   * The URL of a new database (as the superuser `postgres`, no password): empty, or a copy of
   * `template` (a database of this cluster nobody is connected to).
   */
  createDatabase(prefix?: string, template?: string): Promise<string>;
  /** The URL of a database by name (it may not exist). */
  urlOf(database: string): string;
  /** A streaming-replication standby of this cluster (pg_basebackup -R), on its own port. */
  startStandby(): Promise<PostgresCluster>;
  /** `pg_ctl restart -m immediate`: a crash and a restart on the same port; resolves once it accepts. */
  restart(): void;
  /** `pg_ctl stop -m immediate`, to be started again with up() (the database lost, then back). */
  down(): void;
  /** Start again on the same port after down(); returns once it accepts connections. */
  up(): void;
  stop(): void;
}

/**
 * A port free now, below the kernel's ephemeral range (32768 and up by default): a port taken from
 * that range (`listen(0)`) can become the source port of any outgoing connection before the server
 * binds it, and the official CI saw a standby's `pg_ctl start` fail that way once.
 */
async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port found between 20000 and 32000 in 100 tries');
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
  /** pg_stat_statements preloaded (`shared_preload_libraries`), for tests counting plans or calls. */
  statements?: boolean;
}

export async function startPostgres(options: StartOptions = {}): Promise<PostgresCluster> {
  const bin = findPostgresBin();
  if (!bin)
    throw new Error(
      `PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin): ${POSTGRES_INSTALL}`,
    );
  const dir = clusterDir();
  const data = join(dir, 'data');
  const initialized = initializedData(bin);
  if (initialized) execFileSync('cp', ['-a', initialized, data], { stdio: 'pipe' });
  else initdb(bin, data);
  return launch(bin, dir, options.durable, options.statements);
}

function initdb(bin: string, data: string): void {
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
}

/**
 * A data directory fresh from initdb, made once per vitest run and copied for each cluster
 * (`cp -a`, owner and modes kept): initdb costs ≈ 1.5 s of CPU a cluster, and every cluster is
 * initialized the same way (the start options differ, not the data). Undefined outside a run
 * with the global setup (each cluster then runs initdb). Workers race to make it: the first
 * rename wins, the others drop theirs.
 */
function initializedData(bin: string): string | undefined {
  let runCache: string | undefined;
  try {
    runCache = inject('svcRunCache');
  } catch {
    return undefined;
  }
  if (!runCache) return undefined;
  const shared = join(runCache, `pg-initdb-${bin.replaceAll('/', '_')}`);
  if (existsSync(shared)) return shared;
  const stage = clusterDir();
  try {
    initdb(bin, join(stage, 'data'));
    try {
      renameSync(join(stage, 'data'), shared);
    } catch (error) {
      if (!existsSync(shared)) throw error;
    }
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  return shared;
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
async function launch(
  bin: string,
  dir: string,
  durable = false,
  statements = false,
): Promise<PostgresCluster> {
  const data = join(dir, 'data');
  const log = join(dir, 'log');
  let port = 0;
  let options = '';
  // A port another process took between the check and the bind: again on another (the server's
  // log says why a start failed; it is in the error).
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=${durable ? 'on' : 'off'} -c full_page_writes=off${statements ? ' -c shared_preload_libraries=pg_stat_statements' : ''}`;
    try {
      asClusterUser(join(bin, 'pg_ctl'), ['-D', data, '-o', options, '-l', log, '-w', 'start']);
      break;
    } catch (error) {
      const tail = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-15).join('\n') : '(no log)';
      if (attempt < 3 && /could not bind|already in use/i.test(tail)) continue;
      throw new Error(`${(error as Error).message}\nthe server's log (${log}), last lines:\n${tail}`);
    }
  }
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
    async createDatabase(prefix = 'svc_test', template?: string) {
      const name = `${prefix}_${process.pid}_${++databases}`;
      const { default: pg } = await import('pg');
      const client = new pg.Client({ connectionString: urlOf('postgres') });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
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
    down() {
      asClusterUser(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
    },
    up() {
      asClusterUser(join(bin, 'pg_ctl'), ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start']);
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
  }, 120_000); // copying the data directory and `pg_ctl -w start` (its own wait: 60 s) on a loaded box
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

/** A client of the tests' databases: `poolSize` connections, generous timeouts. */
const clientOf = (url: string, poolSize = 4) =>
  createPostgresClient({ url, pool_size: poolSize, statement_timeout_ms: 30_000, connect_timeout_ms: 5_000 });

const templates = new WeakMap<PostgresCluster, Promise<string>>();

/**
 * The name of a database of `cluster` holding every migration, made once per cluster and closed:
 * a migrated database is a copy of it (CREATE DATABASE … TEMPLATE, ≈ 0.2 s), not a migration run
 * of its own (≈ 1 s a database, for every test of every PostgreSQL file).
 */
function migratedTemplate(cluster: PostgresCluster): Promise<string> {
  let template = templates.get(cluster);
  if (!template) {
    template = (async () => {
      const url = await cluster.createDatabase('svc_template');
      const sql = await clientOf(url, 1);
      try {
        await migratePostgres(sql);
      } finally {
        await sql.close();
      }
      return new URL(url).pathname.slice(1);
    })();
    template.catch(() => templates.delete(cluster));
    templates.set(cluster, template);
  }
  return template;
}

/**
 * A fresh database on the cluster, migrated (a copy of the cluster's migrated template; the
 * migration's check runs on it as a node's start does), and a client of 4 connections to it.
 */
export async function migratedDatabase(cluster: PostgresCluster): Promise<SqlClient> {
  const sql = await clientOf(await cluster.createDatabase('svc_test', await migratedTemplate(cluster)));
  await migratePostgres(sql);
  return sql;
}

/**
 * A new database of `cluster` migrated in place (not a template's copy: a `pg_stat_statements`
 * count sees its statements from the start), svc's client of `poolSize` connections on it and a
 * plain driver client (for `pg_stat_statements`, LISTEN, a second connection's locks); `close`
 * ends the driver client, then svc's.
 */
export async function migratedInPlace(
  cluster: PostgresCluster,
  poolSize = 1,
): Promise<{ url: string; sql: SqlClient; client: pgDriver.Client; close(): Promise<void> }> {
  const url = await cluster.createDatabase();
  const sql = await clientOf(url, poolSize);
  await migratePostgres(sql);
  const client = new pgDriver.Client({ connectionString: url });
  await client.connect();
  return {
    url,
    sql,
    client,
    close: async () => {
      await client.end();
      await sql.close();
    },
  };
}

/** Two nodes on one fresh migrated database (as migratedDatabase): two pools of 4 connections each. */
export async function twoNodes(
  cluster: PostgresCluster,
): Promise<{ sql: SqlClient; other: SqlClient; url: string; close(): Promise<void> }> {
  const url = await cluster.createDatabase('svc_test', await migratedTemplate(cluster));
  const sql = await clientOf(url);
  await migratePostgres(sql);
  const other = await clientOf(url);
  return {
    sql,
    url,
    other,
    close: async () => {
      await other.close();
      await sql.close();
    },
  };
}

/**
 * The frame of the tests of what a PostgreSQL node keeps in memory: two nodes on one migrated
 * database of `cluster` (`twoNodes`). Node A's client `a` records every statement it sends in
 * `sent`, and its `changes` follow the other nodes' table-change notifications from `follow()` on,
 * as an App's LISTEN does (a test that pins what A does before it listens calls it later). Node B
 * (`b`) does not listen. What is opened is pushed onto `closers`, for the file's `afterEach` to
 * close in reverse.
 */
export async function followingNodes(
  cluster: PostgresCluster,
  closers: (() => Promise<void> | void)[],
  reconnectDelayMs = 50,
): Promise<{
  both: Awaited<ReturnType<typeof twoNodes>>;
  a: SqlClient;
  b: SqlClient;
  sent: string[];
  changes: TableChanges;
  follow(): ReturnType<typeof followOtherNodes>;
}> {
  const both = await twoNodes(cluster);
  closers.push(() => both.close());
  const sent: string[] = [];
  const a = recordingClient(both.sql, sent);
  const changes = tableChanges(a);
  const follow = () => {
    const following = followOtherNodes({ follow: () => () => {} }, a, { changes, reconnectDelayMs });
    closers.push(() => following.stop());
    return following;
  };
  return { both, a, b: both.other, sent, changes, follow };
}

/** The client, adding the text of every statement it sends to `sent` (the timers', `TIMER_STATEMENTS`, left out). */
export function recordingClient(sql: SqlClient, sent: string[]): SqlClient {
  const record = (text: string) => {
    if (!TIMER_STATEMENTS.test(text)) sent.push(text);
  };
  return {
    ...sql,
    one: (text, params) => {
      record(text);
      return sql.one(text, params);
    },
    query: (text, params) => {
      record(text);
      return sql.query(text, params);
    },
    run: (text, params) => {
      record(text);
      return sql.run(text, params);
    },
    ...(sql.alone ? { alone: recordingClient(sql.alone as SqlClient, sent) } : {}),
  };
}

/**
 * The statements an App sends on a timer, not for what a test does: the run's cancel poll (every
 * second of a run), the store monitor's probe (every 2 s), a workspace lease's renewal. On a loaded
 * box a run takes long enough for one of them to land between two statements a test counts.
 */
export const TIMER_STATEMENTS =
  /^(SELECT cancel_requested FROM agent_runs WHERE id = \$1|SELECT max\(id\) AS version FROM schema_migrations|UPDATE workspace_leases SET expires_at = )/;

/**
 * Every statement text any pg client of this process sends from now on (until `restore`), control
 * statements included; the timers' (`TIMER_STATEMENTS`) only with `timers: true`.
 */
export function driverStatements(options: { timers?: boolean } = {}): {
  sent: string[];
  /** The same statements with their parameters (none for a text alone). */
  calls: { text: string; values?: unknown[] }[];
  /** The connection (pg `Client`) each call went out on, by the call's index. */
  clients: unknown[];
  restore(): void;
} {
  const prototype = pgDriver.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = prototype.query;
  const sent: string[] = [];
  const calls: { text: string; values?: unknown[] }[] = [];
  const clients: unknown[] = [];
  prototype.query = function query(this: unknown, config: unknown, ...rest: unknown[]) {
    const text = typeof config === 'string' ? config : String((config as { text?: string }).text);
    if (!options.timers && TIMER_STATEMENTS.test(text)) return original.call(this, config, ...rest);
    sent.push(text);
    clients.push(this);
    calls.push({
      text,
      values: typeof config === 'string' ? undefined : (config as { values?: unknown[] }).values,
    });
    return original.call(this, config, ...rest);
  };
  return {
    sent,
    calls,
    clients,
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

/** A session's events in the log, in id order (the PostgreSQL session-event tests' read). */
export async function loggedEvents(sql: SqlClient, sessionId: string) {
  return await sql.query<{ id: number; type: string; payload: string }>(
    'SELECT id, type, payload FROM session_events WHERE session_id = $1 ORDER BY id',
    [sessionId],
  );
}

/**
 * `listener` connected and listening on `channel` (its `end` pushed on `closers`): the payloads of
 * the NOTIFYs it receives, in order, in the array answered.
 */
export async function noticesOn(
  listener: pgDriver.Client,
  channel: string,
  closers: (() => unknown)[],
): Promise<string[]> {
  await listener.connect();
  closers.push(() => listener.end());
  const notices: string[] = [];
  listener.on('notification', (n) => notices.push(n.payload ?? ''));
  await listener.query(`LISTEN ${channel}`);
  return notices;
}
