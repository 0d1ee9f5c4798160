// A throwaway PostgreSQL cluster for benches (issue 18): the few lines of test/helpers/postgres.ts
// that start one, without vitest. Debian's binaries from /usr/lib/postgresql/<version>/bin,
// `initdb -A trust` in a temp dir, a random free port on 127.0.0.1 (socket in the same dir), fsync
// and synchronous_commit off (as the tests run it), `pg_ctl stop -m immediate` at stop() or exit.
// As root the cluster runs as the `postgres` OS user (initdb refuses root).
// Not a bench itself: bench/run.mjs only runs `*.bench.mjs`.
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const POSTGRES_INSTALL = 'apt-get install postgresql';

/** The directory holding initdb and pg_ctl (the newest installed version), if any. */
export function findPostgresBin() {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')) && existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : undefined;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function asClusterUser(bin, args) {
  const root = process.getuid?.() === 0;
  const [command, argv] = root ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  execFileSync(command, argv, { stdio: 'pipe', cwd: '/', timeout: 60_000 });
}

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** utime + stime (+ reaped children's with `children`) of a live process in ms, or undefined. */
function procCpuMs(pid, children = false) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    const own = Number(fields[11]) + Number(fields[12]);
    return (own + (children ? Number(fields[13]) + Number(fields[14]) : 0)) * TICK_MS;
  } catch {
    return undefined;
  }
}

/**
 * Start a cluster; throws naming the install command when PostgreSQL is missing.
 * Returns { port, createDatabase(prefix), cpuMs(), stop() }.
 */
export async function startPostgres() {
  const bin = findPostgresBin();
  if (!bin)
    throw new Error(
      `PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin): ${POSTGRES_INSTALL}`,
    );
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-pg-'));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
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
  const port = await freePort();
  // pg_stat_statements (in Debian's server package) counts the statements svc sends, when present.
  const statements = existsSync(join(bin, '..', 'lib', 'pg_stat_statements.so'));
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off${statements ? ' -c shared_preload_libraries=pg_stat_statements' : ''}`;
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
  const urlOf = (database) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  let databases = 0;
  const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const query = async (sql, params = []) => {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: urlOf('postgres') });
    await client.connect();
    try {
      return (await client.query(sql, params)).rows;
    } finally {
      await client.end();
    }
  };
  if (statements) await query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  return {
    port,
    urlOf,
    /** The URL of a new, empty database. */
    async createDatabase(prefix = 'svc_bench') {
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
    /**
     * CPU time of the server so far in ms: the postmaster with its reaped children, plus its live
     * children (the backends serving svc's pools, the WAL writer, the checkpointer, …).
     */
    /**
     * Statements executed (pg_stat_statements, undefined without it) and transactions committed or
     * rolled back so far in the database of `url`. The transaction counters reach the statistics
     * up to a second late: wait a little before reading them after work.
     */
    async counters(url) {
      const name = new URL(url).pathname.slice(1);
      const [xacts] = await query(
        'SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1',
        [name],
      );
      const calls = statements
        ? (
            await query(
              'SELECT coalesce(sum(calls), 0) AS n FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)',
              [name],
            )
          )[0]
        : undefined;
      return { statements: calls ? Number(calls.n) : undefined, transactions: Number(xacts?.n ?? 0) };
    },
    cpuMs() {
      let total = procCpuMs(postmaster, true) ?? 0;
      for (const entry of readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        try {
          const stat = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ');
          if (Number(stat[1]) === postmaster) total += (Number(stat[11]) + Number(stat[12])) * TICK_MS;
        } catch {
          // gone
        }
      }
      return total;
    },
    stop,
  };
}
