/**
 * The first phase of createApp: the workspace, the loaded config (reloadable), the data dir, the
 * redactor, the log, the lazily opened database and the close list that later phases build on.
 * @module
 */
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ConfigSourcesInput, LoadedConfig } from '../config/load';
import { loadConfig, userCacheDir } from '../config/load';
import type { Config } from '../config/schema';
import { checkEngineKind } from '../engine/engine-kind';
import { SvcError } from '../errors';
import { createFileLogger, type Logger } from '../log';
import { pluginConfigLayers, pluginsDir } from '../plugins/config-layer';
import { createRedactor, type Redactor } from '../redact';
import { ensureDataDir } from '../store/data-dir';
import { DB_FILE, type Db, openDb } from '../store/db';
import type { SqlClient } from '../store/postgres/client';
import { createStoreMonitor, type StoreMonitor } from '../store/postgres/monitor';
import { connectPostgres, postgresNotServed } from '../store/postgres-pending';
import { isPostgresUrl } from '../store/store-url';
import { postgresTransactions, type StoreTransactions, sqliteTransactions } from '../store/transactions';
import type { RuntimeState } from '../tools/core/types';
import { type Clock, createIds, type Ids, systemClock } from '../util/ids';
import { checkAllowlists, seedSecrets } from './config-checks';
import type { AppOptions } from './types';

/** Where the App's durable state lives (issue 18). */
export type AppStore =
  | { kind: 'sqlite'; transactions: StoreTransactions }
  | { kind: 'postgres'; sql: SqlClient; transactions: StoreTransactions; monitor: StoreMonitor };

export interface AppBase {
  workspace: string;
  store: AppStore;
  /**
   * A repository on the App's store: the SQLite one over the lazily opened database, or the
   * PostgreSQL one over the client.
   */
  repository<T>(sqlite: (db: () => Db) => T, postgres: (sql: SqlClient) => T): T;
  dataDir: string;
  env: Record<string, string | undefined>;
  clock: Clock;
  ids: Ids;
  fetch: typeof fetch;
  log: Logger;
  redactor: Redactor;
  configSources: ConfigSourcesInput;
  loaded(): LoadedConfig;
  config(): Config;
  /** Load the config files again; the new config replaces the old one once it is valid. */
  reload(): LoadedConfig;
  /** Open the database on first use. */
  openDatabase(): Db;
  hasDb(): boolean;
  /** Whether there is a database, open or on disk (PostgreSQL: always, migrated at start). */
  dbPresent(): boolean;
  closeDatabase(): void;
  /** Teardown steps, run last to first by App.close(). */
  closers: (() => void | Promise<void>)[];
  runtime: RuntimeState;
}

export async function createBase(options: AppOptions): Promise<AppBase> {
  const workspace = resolve(options.workspace);
  if (!existsSync(workspace) || !statSync(workspace).isDirectory()) {
    throw new SvcError('invalid_input', `--cwd: ${workspace} is not a directory`);
  }
  const env = options.env ?? {};
  const clock = options.clock ?? systemClock;
  const configSources: ConfigSourcesInput = {
    workspace,
    env,
    configFile: options.configFile,
    overrides: options.overrides,
    trust: options.workspaceTrust,
  };
  let loaded = loadConfig(configSources);
  checkAllowlists(loaded.config);

  const dataDir = resolve(
    workspace,
    options.dataDir ?? (env.SVC_DATA_DIR || undefined) ?? loaded.config.options.data_directory ?? '.svc',
  );
  // Installed plugins add [mcp.<id>] and [agents.<id>] blocks as a config layer below every file
  // (src/plugins/config-layer.ts); they live in the data dir, so the first load cannot see them.
  const pluginRoot = pluginsDir(dataDir);
  configSources.layers = () => pluginConfigLayers(pluginRoot);
  if (pluginConfigLayers(pluginRoot).length) {
    loaded = loadConfig(configSources);
    checkAllowlists(loaded.config);
  }
  const redactor = createRedactor();
  seedSecrets(redactor, loaded, env);
  const log =
    options.log ??
    createFileLogger(join(dataDir, 'logs', 'svc.log'), {
      level: loaded.config.log.level,
      redactor,
      prepare: () => ensureDataDir(dataDir),
      // A request's `run started` and `run finished` leave its critical path (docs/performance-log.md, p-sqlpath).
      deferInfo: true,
    });

  // issue 18: `[store] url` naming PostgreSQL: connect and migrate it (a wrong URL, a schema newer
  // than this binary: the error at start), serve from it, close it with the App.
  const storeUrl = loaded.config.store.url;
  let postgres = options.postgres;
  // issue 19: a run engine the store cannot carry is refused before anything is opened.
  checkEngineKind(loaded.config.engine.kind, postgres || isPostgresUrl(storeUrl) ? 'postgres' : 'sqlite');
  const closers: (() => void | Promise<void>)[] = [];
  if (!postgres && isPostgresUrl(storeUrl) && options.connectStore !== false) {
    const owned = await connectPostgres({ ...loaded.config.store, url: storeUrl });
    closers.push(() => owned.close());
    postgres = owned;
  }

  let db: Db | undefined;
  const openDatabase = (): Db => {
    if (!db) {
      // With a PostgreSQL store, svc.db is never opened (nor created); a part of svc that still
      // reaches for it fails with this error instead.
      if (postgres || isPostgresUrl(storeUrl))
        throw postgresNotServed(postgres?.redactedUrl ?? storeUrl ?? '');
      db = openDb({
        dataDir,
        readonly: options.readOnlyDb,
        templateDir: userCacheDir(env),
        warn: (message) => log.warn(message),
      });
      log.debug('database open', { path: join(dataDir, DB_FILE) });
    }
    return db;
  };

  const store: AppStore = postgres
    ? {
        kind: 'postgres',
        sql: postgres,
        transactions: postgresTransactions(postgres),
        monitor: createStoreMonitor(postgres, {
          onChange: (status) =>
            status.ok
              ? log.info('store reachable again', { store: postgres?.redactedUrl })
              : log.warn('store unreachable', {
                  store: postgres?.redactedUrl,
                  reason: status.reason,
                }),
        }),
      }
    : { kind: 'sqlite', transactions: sqliteTransactions(openDatabase) };
  if (store.kind === 'postgres') closers.push(() => store.monitor.stop());

  return {
    workspace,
    store,
    repository: (sqlite, postgres) =>
      store.kind === 'postgres' ? postgres(store.sql) : sqlite(openDatabase),
    dataDir,
    env,
    clock,
    ids: options.ids ?? createIds(clock),
    fetch: options.fetch ?? globalThis.fetch,
    log,
    redactor,
    configSources,
    loaded: () => loaded,
    config: () => loaded.config,
    reload() {
      const next = loadConfig(configSources);
      checkAllowlists(next.config);
      loaded = next;
      seedSecrets(redactor, loaded, env);
      return loaded;
    },
    openDatabase,
    hasDb: () => db !== undefined,
    dbPresent: () => store.kind === 'postgres' || db !== undefined || existsSync(join(dataDir, DB_FILE)),
    closeDatabase() {
      if (db?.open) db.close();
      db = undefined;
    },
    closers,
    runtime: {
      surfaces: new Set(),
      ready: false,
      mcpOnly: false,
      server: false,
      stopping: false,
      sessionPublisher: false,
    },
  };
}
