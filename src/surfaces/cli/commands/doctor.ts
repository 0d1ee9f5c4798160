/**
 * `svc doctor`: is this installation sound? The data directory (there, writable), svc.db (an
 * SQLite database that passes `PRAGMA integrity_check`, opened read-only so nothing is written),
 * the command sandbox (active, fallback or off, why, and the install command) and the Node.js
 * runtime (a supported line, not past its end of life: ./node-runtime.ts). Each check is
 * ok, warn or error with what to do; exit 1 when any is an error. `--json` prints the report.
 * The config is one of the checks: a broken svc.toml is a failed `config` line and the rest still
 * run on what loads (./doctor-config.ts), where every other command ends with the error (exit 2).
 * With a PostgreSQL store the `store` line (reached, schema) replaces svc.db's, which is not used.
 * `--store` checks the store instead (issue 18): SQLite's file and schema version, or PostgreSQL's
 * reachability, round trip, server version, schema version and role (primary, or standby and lag).
 * @module
 */
import { accessSync, constants, existsSync } from 'node:fs';
import type { SandboxStatus } from '../../../sandbox/sandbox';
import { checkDatabase, type DatabaseCheck } from '../../../store/integrity';
import { checkStore, type StoreCheck } from '../../../store/store-check';
import { isPostgresUrl } from '../../../store/store-url';
import type { CliRegistrar } from '../context';
import { type DoctorCheck, doctorHost } from './doctor-config';
import { nodeRuntimeCheck } from './node-runtime';

export interface DoctorReport {
  ok: boolean;
  data_dir: string;
  database: DatabaseCheck;
  sandbox: Pick<SandboxStatus, 'mode' | 'state' | 'reason' | 'install' | 'network'> & {
    bwrap: string | null;
  };
  checks: DoctorCheck[];
}

export const registerDoctor: CliRegistrar = (program, ctx) => {
  program
    .command('doctor')
    .description(
      "check the config, the data directory, svc.db's integrity (read-only), the command sandbox and the Node.js runtime",
    )
    .option('--json', 'print the report as JSON')
    .option('--store', 'check the store instead: SQLite file, or PostgreSQL connectivity, schema and lag')
    .action(async (opts: { json?: boolean; store?: boolean }) => {
      // The App never connects to (or migrates) PostgreSQL here: --store inspects the store itself,
      // and a store that cannot be reached is one of the problems doctor reports, not a reason it
      // cannot run (it ended with the connection error and checked nothing else).
      const { host: app, config } = await doctorHost(ctx, { store: opts.store === true });
      if (opts.store) {
        const store = await checkStore(app.config.store, app.dataDir);
        ctx.exitCode = store.ok ? 0 : 1;
        if (opts.json) ctx.json(app.redactor.value(store));
        else ctx.out(app.redactor.string(storeLines(store).join('\n')));
        return;
      }
      const postgres = isPostgresUrl(app.config.store.url);
      const database = unusedWith(checkDatabase(app.dataDir), postgres);
      const sandbox = app.sandbox.status();
      // With a PostgreSQL store svc.db is not used (nor created): the store's line stands instead.
      const checks = [
        config,
        dataDirCheck(app.dataDir),
        postgres ? postgresCheck(await checkStore(app.config.store, app.dataDir)) : databaseCheck(database),
        sandboxCheck(sandbox),
        nodeRuntimeCheck(process.versions.node, new Date()),
      ];
      const report: DoctorReport = {
        ok: !checks.some((c) => c.status === 'error'),
        data_dir: app.dataDir,
        database,
        sandbox: {
          mode: sandbox.mode,
          state: sandbox.state,
          reason: sandbox.reason,
          install: sandbox.install,
          network: sandbox.network,
          bwrap: sandbox.bwrap.path ? `${sandbox.bwrap.path} ${sandbox.bwrap.version ?? ''}`.trim() : null,
        },
        checks,
      };
      ctx.exitCode = report.ok ? 0 : 1;
      if (opts.json) {
        ctx.json(app.redactor.value(report));
        return;
      }
      const mark = { ok: '✓', warn: '!', error: '✗' } as const;
      ctx.out(
        app.redactor.string(
          [
            `svc doctor: ${report.ok ? 'ok' : 'problems found'}`,
            ...checks.map((c) => `  ${mark[c.status]} ${c.name.padEnd(10)} ${c.detail}`),
            ...database.problems.slice(0, 10).map((p) => `      ${p}`),
          ].join('\n'),
        ),
      );
    });
};

function storeLines(store: StoreCheck): string[] {
  const schema = `${store.schema_version ?? 'none'} applied, this svc knows ${store.binary_schema_version}`;
  const lines = [`svc doctor --store: ${store.ok ? 'ok' : 'problems found'}`, `  kind     ${store.kind}`];
  if (store.kind === 'sqlite') {
    lines.push(`  file     ${store.location}`, `  schema   ${schema}`);
  } else {
    lines.push(`  url      ${store.location}`);
    lines.push(
      store.round_trip_ms === undefined
        ? '  reached  no'
        : `  reached  yes, round trip ${store.round_trip_ms} ms, PostgreSQL ${store.server_version ?? '?'}`,
    );
    if (store.round_trip_ms !== undefined) {
      lines.push(`  schema   ${schema}`);
      lines.push(
        store.role === 'standby'
          ? `  role     standby, replay lag ${store.replication_lag_ms === null || store.replication_lag_ms === undefined ? 'unknown' : `${store.replication_lag_ms} ms`}`
          : '  role     primary',
      );
    }
  }
  if (store.detail) lines.push(`  ${(store.ok ? 'note' : 'problem').padEnd(8)} ${store.detail}`);
  return lines;
}

/** The PostgreSQL store in one line: reached and its schema, or why not (`--store` says more). */
function postgresCheck(store: StoreCheck): DoctorCheck {
  if (!store.ok)
    return {
      name: 'store',
      status: 'error',
      detail: store.detail ?? 'not usable: svc doctor --store says more',
    };
  const schema = `schema ${store.schema_version ?? 'none'} of ${store.binary_schema_version}`;
  return {
    name: 'store',
    status: 'ok',
    detail: `${store.location}: reached, ${schema}, ${store.role ?? 'primary'}`,
  };
}

/** svc.db's check as the JSON report shows it: with a PostgreSQL store, said to be unused. */
function unusedWith(db: DatabaseCheck, postgres: boolean): DatabaseCheck {
  return postgres ? { ...db, advice: 'not used: the store is PostgreSQL ([store] url)' } : db;
}

function dataDirCheck(dir: string): DoctorCheck {
  if (!existsSync(dir)) return { name: 'data_dir', status: 'ok', detail: `${dir} (created on first use)` };
  try {
    accessSync(dir, constants.W_OK);
    return { name: 'data_dir', status: 'ok', detail: `${dir}, writable` };
  } catch {
    return {
      name: 'data_dir',
      status: 'error',
      detail: `${dir} is not writable: make it writable or pass --data-dir`,
    };
  }
}

function databaseCheck(db: DatabaseCheck): DoctorCheck {
  switch (db.integrity) {
    case 'missing':
      return { name: 'database', status: 'ok', detail: `${db.path}: ${db.advice}` };
    case 'ok':
      return db.writable
        ? {
            name: 'database',
            status: 'ok',
            detail: `${db.path}: integrity ok, schema ${db.schema_version ?? '?'}, ${db.journal_mode} journal, ${db.size_bytes} bytes`,
          }
        : {
            name: 'database',
            status: 'error',
            detail: `${db.path}: integrity ok, but read-only; ${db.advice}`,
          };
    case 'damaged':
      return {
        name: 'database',
        status: 'error',
        detail: `${db.path}: the integrity check found ${db.problems.length}${db.problems.length >= 20 ? '+' : ''} problem(s); ${db.advice}`,
      };
    case 'unreadable':
      return {
        name: 'database',
        status: 'error',
        detail: `${db.path} is not a readable SQLite database (${db.problems[0]}); ${db.advice}`,
      };
    default: {
      const never: never = db.integrity;
      return never;
    }
  }
}

function sandboxCheck(s: SandboxStatus): DoctorCheck {
  const detail = `${s.state} (mode ${s.mode}): ${s.reason}${s.install ? `; install it: ${s.install}` : ''}`;
  switch (s.state) {
    case 'active':
      return { name: 'sandbox', status: 'ok', detail: `${detail}; network ${s.network}` };
    case 'off':
    case 'fallback':
      return {
        name: 'sandbox',
        status: 'warn',
        detail: `${detail}; commands run under the parse-based rules only`,
      };
    case 'unavailable':
      return { name: 'sandbox', status: 'error', detail: `${detail}; bash commands fail until it can run` };
    default: {
      const never: never = s.state;
      return never;
    }
  }
}
