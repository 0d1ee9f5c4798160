import { type AppBase, createBase } from './app/base';
import { checkAllowlists } from './app/config-checks';
import { type AppCore, createCore } from './app/core';
import { createOperations, type Late } from './app/operations';
import { createOversight } from './app/oversight';
import { dbStatus, dbStatusChecked, storeUnavailable } from './app/store-status';
import type { App, AppOptions } from './app/types';
import { type AppWork, createWork } from './app/work';
import { loadConfig } from './config/load';
import { hardClaimGuard } from './coordination/claims';
import { SvcError } from './errors';
import type { FunnelContext, SessionStart, ToolPolicy } from './permissions/tool-policy';
import { cloudIdentity } from './providers/reports';
import type { Session } from './sessions/types';
import { runFunnel } from './tools/core/funnel';
import type {
  BackgroundWorker,
  DbStatus,
  MutationRequest,
  PermissionRequest,
  RuntimeState,
  ToolContext,
} from './tools/core/types';
import { VERSION } from './version';

export type { AdaptiveResync } from './adaptive/service';
export type { App, AppOptions } from './app/types';
export type { BackgroundWorker, DbStatus, MutationRequest, RuntimeState };

export async function createApp(options: AppOptions): Promise<App> {
  const base = await createBase(options);
  const late: Late = { app: () => app };
  const core = createCore(base);
  const ops = createOperations(base, core, late);
  const work = createWork(base, core, late);
  const oversight = createOversight(base, core, ops, work, options, late);
  const { registry } = oversight;
  const { agent } = work;

  const app: App = {
    workspace: base.workspace,
    dataDir: base.dataDir,
    env: base.env,
    clock: base.clock,
    ids: base.ids,
    fetch: base.fetch,
    log: base.log,
    redactor: base.redactor,
    get loaded() {
      return base.loaded();
    },
    get config() {
      return base.config();
    },
    checkConfig(contents) {
      checkAllowlists(loadConfig({ ...base.configSources, contents }).config);
    },
    reloadConfig() {
      const loaded = base.reload();
      registry.refresh();
      return loaded;
    },
    get db() {
      return base.openDatabase();
    },
    hasDb: base.hasDb,
    storeUnavailable: () => storeUnavailable(base),
    store: base.store,
    dbStatus: () => dbStatus(base),
    dbStatusChecked: () => dbStatusChecked(base),
    bus: core.bus,
    claims: ops.claims,
    markers: ops.markers,
    recommendations: oversight.recommendations,
    health: oversight.health,
    sandbox: work.sandbox,
    spawner: work.spawner,
    models: core.providers.models,
    providers: core.providers,
    telemetry: core.telemetry,
    tools: registry,
    sessions: core.sessions,
    runs: core.runs,
    compatRequests: core.compatRequests,
    permissions: core.permissions,
    agent,
    engine: work.engine,
    observe: work.observe,
    ws: work.ws,
    recipes: work.recipes,
    workflows: work.workflows,
    quality: work.quality,
    mcpClients: oversight.mcpClients,
    runtime: base.runtime,
    funnel: (context) => runFunnel(registry, base.config(), context),
    toolContext(context) {
      // Defaults last: a caller's explicit `signal: undefined` must not erase them.
      return {
        ...context,
        app,
        signal: context.signal ?? new AbortController().signal,
        // Direct calls from an authenticated surface (CLI, HTTP, MCP) are the operator's own.
        ask: context.ask ?? (async (_request: PermissionRequest) => {}),
      } as ToolContext;
    },
    onClose(fn) {
      base.closers.push(fn);
    },
    close: () => closeApp(),
    statusSections: new Map(),
    policyProviders: oversight.policyProviders,
    mutationGuards: work.mutationGuards,
    promptSections: agent.promptSections,
    async funnelContext(sessionId, overrides = {}, start) {
      // A caller that brings the session's mode, agent and phase (a run's step) spares the read.
      const given = 'mode' in overrides && 'agent' in overrides && 'phase' in overrides;
      const session = sessionId && !given ? await core.sessions.get(sessionId) : undefined;
      const provided = policiesOf(oversight.policyProviders, sessionId, start);
      const policies = [
        ...(Array.isArray(provided) ? provided : await provided),
        ...(overrides.policies ?? []),
      ];
      return funnelContextOf(session, overrides, policies);
    },
    packs: oversight.packs,
    scheduler: ops.scheduler,
    autopilot: ops.autopilot,
    autopilotWorker: ops.autopilot,
    processes: ops.processes,
    daemons: ops.daemons,
    adaptive: oversight.adaptive,
    remote: ops.remote,
    deploy: ops.deploy,
    plugins: ops.plugins,
    contracts: ops.contracts,
  };

  async function closeApp() {
    // Workflows start no more steps; then runs stop (status interrupted), while the services
    // their tools use are still up.
    work.workflows.quiesce();
    try {
      await agent.close();
    } catch (error) {
      base.log.error('agent close failed', { error });
    }
    core.unregisterRunner();
    // The runs are handed over or interrupted: the node's heartbeat row goes now, before the other
    // closers (DBOS's shutdown among them), so a clean stop never leaves it behind (DURABLE-9).
    try {
      await core.runs.close?.();
    } catch (error) {
      base.log.error('run ledger close failed', { error });
    }
    while (base.closers.length) {
      const fn = base.closers.pop()!;
      try {
        await fn();
      } catch (error) {
        base.log.error('close failed', { error });
      }
    }
    // Events still on their way to the log are stored before it closes (at once on SQLite).
    await core.bus.flush();
    core.bus.close();
    base.closeDatabase();
  }

  // AUTH-07: /config-status reports the cloud credential sources.
  app.statusSections.set('cloud_identity', () => cloudIdentity(core.providers));
  work.mutationGuards.push(hardClaimGuard(ops.claims));
  if (options.eagerDb && base.store.kind === 'sqlite') base.openDatabase();
  if (options.durableRuns && base.config().engine.kind === 'dbos') await launchDurableRuns(base, core, work);
  return app;
}

/** `[engine] kind = "dbos"` on a serving node: DBOS launched, runs durable, dead nodes' runs taken over. */
async function launchDurableRuns(base: AppBase, core: AppCore, work: AppWork): Promise<void> {
  const url = base.config().store.url;
  if (!url || base.store.kind !== 'postgres')
    throw new SvcError(
      'config_error',
      '[engine] kind = "dbos" needs the PostgreSQL store: set [store] url (or SVC_STORE_URL) to a postgres:// URL',
    );
  const { createDbosRuns } = await import('./engine/dbos-runs');
  const dbos = await createDbosRuns({
    url,
    node: core.runner,
    version: VERSION,
    log: base.log,
    runs: core.runs,
    resume: (runId) => work.agent.resume(runId),
    limits: base.config().engine,
  });
  await dbos.launch();
  base.log.info('durable runs: DBOS launched', { node: core.runner });
  base.closers.push(() => dbos.close());
  work.attachDurable(dbos);
  core.runs.onOrphan?.((run) => dbos.adoptOrphan(run));
  core.runs.onStranded?.((gone) => dbos.requeueStranded(gone));
  // The node heartbeats and adopts from now on, not from its first request.
  await core.runs.recover();
}

/**
 * The policy providers' layers for a session. Every provider answering at once (the compat
 * layer's), they are taken as they are: Promise.all would cost two promises a provider on every
 * step's funnel, and one more to wait.
 */
function policiesOf(
  providers: App['policyProviders'],
  sessionId: string | undefined,
  start: SessionStart | undefined,
): ToolPolicy[] | Promise<ToolPolicy[]> {
  const answers: (ToolPolicy[] | Promise<ToolPolicy[]>)[] = [];
  let waiting = false;
  for (const provider of providers) {
    const answer = provider(sessionId, start);
    if (!Array.isArray(answer)) waiting = true;
    answers.push(answer);
  }
  return waiting ? Promise.all(answers).then((lists) => lists.flat()) : (answers as ToolPolicy[][]).flat();
}

/**
 * `{ mode, agent, phase, ...overrides, policies }` from the session row (an override wins, even
 * undefined; `yolo` only when given) in literals: on Node 20 a property after a spread goes
 * through V8's runtime, every call (p-sqlprofile).
 */
function funnelContextOf(
  session: Session | undefined,
  overrides: FunnelContext,
  policies: ToolPolicy[],
): FunnelContext {
  const phase = session?.metadata.workflow_phase;
  const mode = 'mode' in overrides ? overrides.mode : session?.mode;
  const agent = 'agent' in overrides ? overrides.agent : session?.agent;
  const ownPhase = 'phase' in overrides ? overrides.phase : typeof phase === 'string' ? phase : undefined;
  return 'yolo' in overrides
    ? { mode, agent, phase: ownPhase, yolo: overrides.yolo, policies }
    : { mode, agent, phase: ownPhase, policies };
}
