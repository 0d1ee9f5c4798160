/**
 * The second phase of createApp: what every other domain builds on: the event bus, sessions,
 * the run ledger (with the reaper of processes a killed svc left), permissions, telemetry with the
 * cost ledger, and the providers.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createEventBus, type EventBus } from '../events/bus';
import { createEventStore } from '../events/event-store';
import { createPostgresEventStore } from '../events/pg-event-store';
import { followOtherNodes } from '../events/pg-notify';
import { createPermissionService, type PermissionService } from '../permissions/permission-service';
import { createPostgresPermissionStores, createSqlitePermissionStores } from '../permissions/stores';
import { createProviderService, type ProviderService } from '../providers/service';
import {
  type CompatRequestRepository,
  createCompatRequestRepository,
} from '../runs/compat-request-repository';
import { createPostgresCompatRequestRepository } from '../runs/pg-compat-request-repository';
import { createPostgresProcessRepository } from '../runs/pg-process-repository';
import { createPostgresRunLedger } from '../runs/pg-run-ledger';
import { createProcessReaper } from '../runs/process-reaper';
import { createProcessRepository } from '../runs/process-repository';
import {
  createRunLedger,
  isLiveRunner,
  type RunEvent,
  type RunLedger,
  registerRunner,
} from '../runs/run-ledger';
import { createPostgresSessionStore } from '../sessions/pg-session-store';
import { createSessionStore, type SessionStore } from '../sessions/session-store';
import { DB_FILE } from '../store/db';
import { tableChanges } from '../store/postgres/table-changes';
import { createCostLedger } from '../telemetry/cost-ledger';
import { createMetrics } from '../telemetry/metrics';
import { createModelCallStore } from '../telemetry/model-call-store';
import { createPostgresModelCallStore } from '../telemetry/pg-model-call-store';
import { createTelemetry, type Telemetry } from '../telemetry/service';
import { VERSION } from '../version';
import type { AppBase } from './base';

export interface AppCore {
  bus: EventBus;
  sessions: SessionStore;
  runs: RunLedger;
  compatRequests: CompatRequestRepository;
  /** This process's runner id (the ledger's, and the node named on workspace leases). */
  runner: string;
  /** Drop this process from the live runners (at close). */
  unregisterRunner(): void;
  permissions: PermissionService;
  telemetry: Telemetry;
  providers: ProviderService;
}

export function createCore(base: AppBase): AppCore {
  const { clock, ids, log } = base;
  const pgSql = base.store.kind === 'postgres' ? base.store.sql : undefined;
  const bus = createEventBus({
    store: base.repository(
      (db) => () => createEventStore(db()),
      (sql) => () => createPostgresEventStore({ sql }),
    ),
    clock,
    ringSize: base.config().services.http.event_ring_size,
    // issue 18: other nodes append to the same PostgreSQL log; LISTEN/NOTIFY wakes the bus to read them.
    shared: base.store.kind === 'postgres',
    // p-pgbus: events published in a transaction are appended after it, together.
    transaction: pgSql ? () => pgSql.transactionNow() : undefined,
    onError: (error) => log.error('event listener failed', { error }),
  });
  if (base.store.kind === 'postgres') {
    const following = followOtherNodes(bus, base.store.sql, {
      // The same LISTEN tells the repositories' kept reads of other nodes' writes (migration 35).
      changes: tableChanges(base.store.sql),
      onError: (error) => log.warn('cannot listen for the events of other nodes; retrying', { error }),
    });
    base.closers.push(() => following.stop());
  }
  // Search snippets are cut from stored text: redacted whole first (a highlight splits a secret).
  const redact = (text: string) => base.redactor.string(text);
  const sessions: SessionStore = base.repository(
    (db) => createSessionStore({ db, clock, ids, bus, workspace: base.workspace, redact }),
    (sql) => createPostgresSessionStore({ sql, clock, ids, bus, workspace: base.workspace, redact }),
  );
  const runner = `rnr_${randomBytes(8).toString('hex')}`;
  const unregisterRunner = registerRunner(runner);
  // Processes a killed svc left running (issue 15): reaped once this process first opens the ledger.
  const reaper = createProcessReaper({
    processes: base.repository(createProcessRepository, (sql) => createPostgresProcessRepository({ sql })),
    append: async (runId, type, payload) => {
      await runs.append(runId, type, payload);
    },
    now: () => clock.now(),
    onError: (error) => log.warn('process reaper failed', { error }),
  });
  const ledger = {
    clock,
    ids,
    runner,
    isLiveRunner,
    // A sync hook (inside the ledger's first open): the reap's read runs at once, its kills and
    // events right after; nothing waits on it.
    afterFirstRecovery: () => {
      void reaper
        .reap()
        .then((reaped) => {
          const killed = reaped.filter((p) => p.killed.length > 0);
          if (killed.length) log.warn('reaped processes left by an exited svc', { processes: killed });
        })
        .catch((error) => log.warn('process reaper failed', { error }));
    },
    onListenerError: (error: unknown, event: RunEvent) =>
      log.warn('run ledger listener failed', { type: event.type, error }),
  };
  const runs: RunLedger = base.repository(
    (db) => createRunLedger({ ...ledger, db, dbPath: join(base.dataDir, DB_FILE) }),
    (sql) =>
      createPostgresRunLedger({
        ...ledger,
        sql,
        // A tool's events and a step end's completions join the ledger's statements (issue 18 item 6).
        bus,
        nodes: {
          heartbeatMs: base.config().store.node_heartbeat_ms,
          staleMs: base.config().store.node_stale_ms,
        },
        onJanitorError: (error) => log.warn('node heartbeat or run recovery failed', { error }),
      }),
  );
  base.closers.push(() => runs.close?.());
  const permissions = createPermissionService({
    config: base.config,
    stores: base.repository(createSqlitePermissionStores, (sql) => createPostgresPermissionStores({ sql })),
    bus,
    clock,
    ids,
    sessions,
    runs,
  });
  const telemetry = createTelemetry({
    config: () => base.config().telemetry,
    env: base.env,
    ledger: createCostLedger({
      store: base.repository(createModelCallStore, (sql) => createPostgresModelCallStore({ sql })),
      clock,
      ids,
      budget: () => base.config().budget,
    }),
    metrics: createMetrics(),
    redactor: base.redactor,
    log,
    clock,
    version: VERSION,
  });
  base.closers.push(() => telemetry.shutdown());
  // The queue depth is counted when the gauge is read (a scrape, an OTLP collection), never on a
  // run's events: nothing else reads it.
  telemetry.metrics.gauge('queue_depth', async () => {
    if (!base.hasDb() && base.store.kind === 'sqlite') return 0;
    try {
      return await runs.queries.count({ status: ['queued'] });
    } catch (error) {
      log.debug('queue depth unavailable', { error });
      return 0;
    }
  });
  const providers = createProviderService({
    calls: telemetry.calls,
    config: base.config,
    loaded: base.loaded,
    env: base.env,
    fetch: base.fetch,
    dataDir: base.dataDir,
    workspace: base.workspace,
    log,
    bus,
    redactor: base.redactor,
    clock,
  });
  const compatRequests = base.repository(createCompatRequestRepository, (sql) =>
    createPostgresCompatRequestRepository({ sql }),
  );
  return { bus, sessions, runs, compatRequests, runner, unregisterRunner, permissions, telemetry, providers };
}
