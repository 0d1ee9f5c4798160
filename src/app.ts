/**
 * createApp(): the wiring, and nothing else. Every surface and every test starts from an App.
 * No module-level singletons; no process.env reads outside config/.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type AdaptiveService, createAdaptiveService } from './adaptive/service';
import { createAgentService } from './agent/agent-service';
import type { ConfigSourcesInput, LoadedConfig } from './config/load';
import { globalConfigDir, loadConfig, userCacheDir } from './config/load';
import type { Config } from './config/schema';
import { createContractService } from './contracts/contract-service';
import { createClaimRepository } from './coordination/claim-repository';
import { createClaimService, hardClaimGuard } from './coordination/claims';
import { createMarkerRepository } from './coordination/marker-repository';
import { createMarkerService } from './coordination/markers';
import { createDeployService } from './deploy/deploy-service';
import { SvcError } from './errors';
import { createEventBus } from './events/bus';
import { createHealthFollowons, type HealthFollowons } from './health/followons';
import { createFileLogger, type Logger } from './log';
import { createFileAuthStore, type McpAuthStore } from './mcp-client/auth-store';
import { createMcpClientManager, type McpClientManager } from './mcp-client/manager';
import { createObserveService } from './observe/service';
import { createPackController, type PackController } from './packs/controller';
import { createPermissionService } from './permissions/permission-service';
import { pluginConfigLayers, pluginsDir } from './plugins/config-layer';
import { createPluginService } from './plugins/plugin-service';
import { cloudIdentity } from './providers/reports';
import { createProviderService } from './providers/service';
import { createQuality, type Quality } from './quality/quality';
import {
  createRecommendationLedger,
  type RecommendationLedger,
} from './readouts/cognition/recommendation-store';
import { startRecommendationRecorder } from './readouts/cognition/recorder';
import { createRecipeService } from './recipes/recipe-service';
import { createRedactor, type Redactor } from './redact';
import { createRemoteAgents } from './remote/delegation';
import { createProcessReaper } from './runs/process-reaper';
import { createProcessRepository } from './runs/process-repository';
import { createRunLedger, isLiveRunner, registerRunner } from './runs/run-ledger';
import { createSandbox, type Sandbox } from './sandbox/sandbox';
import { type CommandSpawner, createCommandSpawner } from './sandbox/spawn';
import { createAutopilotWorker } from './scheduler/autopilot-worker';
import { createDaemonRegistry } from './scheduler/daemons';
import { createProcessTracker } from './scheduler/process-tracker';
import { createScheduleStore } from './scheduler/schedule-store';
import { createScheduler, recipeToolAvailable } from './scheduler/scheduler';
import { createSessionStore } from './sessions/session-store';
import { ensureDataDir } from './store/data-dir';
import { DB_FILE, type Db, openDb, schemaVersion } from './store/db';
import { createCostLedger } from './telemetry/cost-ledger';
import { createMetrics } from './telemetry/metrics';
import { createModelCallStore } from './telemetry/model-call-store';
import { createTelemetry } from './telemetry/service';
import { createAgentToolbox, withWorkspace } from './tools/core/agent-toolbox';
import { allowlistProblems, canonicalToolName, isConfigAlias } from './tools/core/aliases';
import { runFunnel } from './tools/core/funnel';
import { createToolRegistry, type ToolRegistry } from './tools/core/registry';
import type {
  AnyTool,
  BackgroundWorker,
  DbStatus,
  MutationRequest,
  PermissionRequest,
  RuntimeState,
  ToolContext,
  ToolHost,
} from './tools/core/types';
import { allTools } from './tools/index';
import { type Clock, createIds, type Ids, systemClock } from './util/ids';
import { VERSION } from './version';
import { createWorkflowService } from './workflows/workflow-service';
import { createWorkspace, type Workspace } from './workspace/workspace';

export interface AppOptions {
  workspace: string;
  dataDir?: string;
  env?: Record<string, string | undefined>;
  configFile?: string;
  overrides?: string[];
  clock?: Clock;
  ids?: Ids;
  fetch?: typeof fetch;
  log?: Logger;
  tools?: readonly AnyTool[];
  /** Open the database at start (servers) instead of on first use (CLI reads). */
  eagerDb?: boolean;
  /**
   * Open an existing database read-only (inspecting a data dir this process must not write).
   * Domains that persist report it; operating packs then have no pack-mutation provider.
   */
  readOnlyDb?: boolean;
  /**
   * Build the session pack controller (default true). A minimal runtime that hosts no sessions
   * passes false: it has no operating-mode parity (routes answer 503, pack tools are absent).
   */
  packs?: boolean;
  /**
   * Build the adaptive orchestration layer (default true). A runtime without it has no
   * coordinator-backed adaptive parity: `get_adaptive_orchestration` is absent.
   */
  adaptive?: boolean;
  /** Where MCP client OAuth credentials live; default `<user config dir>/svc/mcp-auth.json`. */
  mcpAuthStore?: McpAuthStore;
}

export type { AdaptiveResync } from './adaptive/service';
export type { BackgroundWorker, DbStatus, MutationRequest, RuntimeState };

/**
 * The App: the tool host (every domain service, under the names tool handlers use) as createApp
 * wires it. Surfaces see the App; tool handlers see the ToolHost (src/tools/core/types.ts).
 */
export interface App extends ToolHost {}

export async function createApp(options: AppOptions): Promise<App> {
  const workspace = resolve(options.workspace);
  if (!existsSync(workspace) || !statSync(workspace).isDirectory()) {
    throw new SvcError('invalid_input', `--cwd: ${workspace} is not a directory`);
  }
  const env = options.env ?? {};
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? createIds(clock);
  const configSources: ConfigSourcesInput = {
    workspace,
    env,
    configFile: options.configFile,
    overrides: options.overrides,
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
    });

  let db: Db | undefined;
  const openDatabase = (): Db => {
    if (!db) {
      db = openDb({ dataDir, readonly: options.readOnlyDb, templateDir: userCacheDir(env) });
      log.debug('database open', { path: join(dataDir, DB_FILE) });
    }
    return db;
  };

  const closers: (() => void | Promise<void>)[] = [];
  const runtime: RuntimeState = {
    surfaces: new Set(),
    ready: false,
    mcpOnly: false,
    server: false,
    stopping: false,
    sessionPublisher: false,
  };
  const bus = createEventBus({
    db: openDatabase,
    clock,
    ringSize: loaded.config.services.http.event_ring_size,
    onError: (error) => log.error('event listener failed', { error }),
  });
  const sessions = createSessionStore({ db: openDatabase, clock, ids, bus, workspace });
  const runner = `rnr_${randomBytes(8).toString('hex')}`;
  const unregisterRunner = registerRunner(runner);
  // Processes a killed svc left running (issue 15): reaped once this process first opens the ledger.
  const reaper = createProcessReaper({
    processes: createProcessRepository(openDatabase),
    append: (runId, type, payload) => runs.append(runId, type, payload),
    now: () => clock.now(),
    onError: (error) => log.warn('process reaper failed', { error }),
  });
  const runs = createRunLedger({
    db: openDatabase,
    dbPath: join(dataDir, DB_FILE),
    clock,
    ids,
    runner,
    isLiveRunner,
    afterFirstRecovery: () => {
      const killed = reaper.reap().filter((p) => p.killed.length > 0);
      if (killed.length) log.warn('reaped processes left by an exited svc', { processes: killed });
    },
    onListenerError: (error, event) => log.warn('run ledger listener failed', { type: event.type, error }),
  });
  const permissions = createPermissionService({
    config: () => loaded.config,
    db: openDatabase,
    bus,
    clock,
    ids,
    sessions,
    runs,
  });
  const telemetry = createTelemetry({
    config: () => loaded.config.telemetry,
    env,
    ledger: createCostLedger({
      store: createModelCallStore(openDatabase),
      clock,
      ids,
      budget: () => loaded.config.budget,
    }),
    metrics: createMetrics(),
    redactor,
    log,
    clock,
    version: VERSION,
  });
  closers.push(() => telemetry.shutdown());
  telemetry.metrics.gauge('queue_depth', () => (db ? runs.count({ status: ['queued'] }) : 0));
  const providers = createProviderService({
    calls: telemetry.calls,
    config: () => loaded.config,
    loaded: () => loaded,
    env,
    fetch: options.fetch ?? globalThis.fetch,
    dataDir,
    workspace,
    log,
    bus,
    redactor,
    clock,
  });

  // Scheduler, coordination, remote agents, deployments, plugins and contracts. The agent, the
  // recipes and the tool registry are built later: the scheduler reads them when a job fires.
  const scheduler = createScheduler({
    store: createScheduleStore({ db: openDatabase, clock, ids }),
    clock,
    log,
    redactor,
    config: () => loaded.config,
    sessions,
    permissions,
    agent: () => app.agent,
    recipes: () => app.recipes,
    recipeToolAvailable: () => recipeToolAvailable(app),
  });
  const autopilot = createAutopilotWorker({
    runs,
    agent: () => app.agent,
    scheduler,
    config: () => loaded.config,
    clock,
    log,
    redactor,
  });
  const claims = createClaimService({
    claims: createClaimRepository(openDatabase),
    workspace,
    clock,
    ids,
    bus,
  });
  const markers = createMarkerService({
    markers: createMarkerRepository(openDatabase),
    workspace,
    clock,
    ids,
  });
  const deploy = createDeployService({
    db: openDatabase,
    clock,
    config: () => loaded.config,
    workspace,
    dataDir,
    env,
    credentials: providers.store,
    fetch: options.fetch ?? globalThis.fetch,
    redactor,
    log,
  });
  const remote = createRemoteAgents({
    db: openDatabase,
    clock,
    ids,
    fetch: options.fetch ?? globalThis.fetch,
    config: () => loaded.config,
    redactor,
    log,
    deployed: () => deploy.endpoints(),
  });
  const plugins = createPluginService({
    db: openDatabase,
    clock,
    dataDir,
    workspace,
    env,
    config: () => loaded.config,
    provenance: () => loaded.provenance,
    reload: () => app.reloadConfig(),
    log,
  });
  const contracts = createContractService({
    db: openDatabase,
    clock,
    config: () => loaded.config,
    workspace,
    markers: () => markers,
    session: (id) => sessions.get(id),
    redactor,
  });

  const observe = createObserveService({
    db: openDatabase,
    clock,
    ids,
    config: () => loaded.config,
    workspace,
    // Built below; read only when describe_context computes a summary.
    ws: () => ws,
  });

  const workflows = createWorkflowService({
    db: openDatabase,
    clock,
    ids,
    log,
    bus,
    redactor,
    config: () => loaded.config,
    sessions,
    runs,
    agent: () => app.agent,
    tools: () => app.tools,
  });
  const recipes = createRecipeService({
    workspace,
    env,
    config: () => loaded.config,
    tools: () => app.tools,
    // Built below; read when a recipe is validated by path or runs an expect command.
    ws: () => ws,
    redactor,
    workflows: () => workflows,
  });

  const agent = createAgentService({
    workspace,
    dataDir,
    env,
    clock,
    ids,
    log,
    redactor,
    config: () => loaded.config,
    db: openDatabase,
    bus,
    sessions,
    runs,
    permissions,
    models: providers.models,
    providers,
    telemetry,
    observe,
    // Built below: the adaptive layer, the MCP clients, the funnel and the tool registry.
    adaptive: () => app.adaptive,
    mcpClients: () => app.mcpClients,
    funnelContext: (sessionId, overrides) => app.funnelContext(sessionId, overrides),
    onClose: (fn) => closers.push(fn),
    toolbox: (workspace) => createAgentToolbox(workspace ? withWorkspace(app, workspace) : app),
  });

  const app: App = {
    workspace,
    dataDir,
    env,
    clock,
    ids,
    fetch: options.fetch ?? globalThis.fetch,
    log,
    redactor,
    get loaded() {
      return loaded;
    },
    get config() {
      return loaded.config;
    },
    checkConfig(contents) {
      checkAllowlists(loadConfig({ ...configSources, contents }).config);
    },
    reloadConfig() {
      const next = loadConfig(configSources);
      checkAllowlists(next.config);
      loaded = next;
      seedSecrets(redactor, loaded, env);
      registry.refresh();
      return loaded;
    },
    get db() {
      return openDatabase();
    },
    hasDb: () => db !== undefined,
    dbStatus() {
      const path = join(dataDir, DB_FILE);
      const status: DbStatus = { path, exists: existsSync(path), open: db !== undefined };
      try {
        const handle = db ?? (status.exists ? openDatabase() : undefined);
        if (handle) {
          status.open = true;
          status.schema_version = schemaVersion(handle);
        }
      } catch (error) {
        status.error = SvcError.is(error) ? error.message : String(error);
      }
      return status;
    },
    bus,
    claims,
    markers,
    recommendations: undefined as unknown as RecommendationLedger,
    health: undefined as unknown as HealthFollowons,
    sandbox: undefined as unknown as Sandbox,
    spawner: undefined as unknown as CommandSpawner,
    models: providers.models,
    providers,
    telemetry,
    tools: undefined as unknown as ToolRegistry,
    sessions,
    runs,
    permissions,
    agent,
    observe,
    ws: undefined as unknown as Workspace,
    recipes,
    workflows,
    quality: undefined as unknown as Quality,
    mcpClients: undefined as unknown as McpClientManager,
    runtime,
    funnel: (context) => runFunnel(registry, loaded.config, context),
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
      closers.push(fn);
    },
    async close() {
      // Workflows start no more steps; then runs stop (status interrupted), while the services
      // their tools use are still up.
      app.workflows.quiesce();
      try {
        await app.agent.close();
      } catch (error) {
        log.error('agent close failed', { error });
      }
      unregisterRunner();
      while (closers.length) {
        const fn = closers.pop()!;
        try {
          await fn();
        } catch (error) {
          log.error('close failed', { error });
        }
      }
      bus.close();
      if (db?.open) db.close();
      db = undefined;
    },
    statusSections: new Map(),
    policyProviders: [],
    mutationGuards: [],
    promptSections: agent.promptSections,
    funnelContext(sessionId, overrides = {}) {
      const session = sessionId ? app.sessions.get(sessionId) : undefined;
      const phase = session?.metadata.workflow_phase;
      return {
        mode: session?.mode,
        agent: session?.agent,
        phase: typeof phase === 'string' ? phase : undefined,
        ...overrides,
        policies: [
          ...app.policyProviders.flatMap((provider) => provider(sessionId)),
          ...(overrides.policies ?? []),
        ],
      };
    },
    packs: undefined,
    scheduler,
    autopilot,
    autopilotWorker: autopilot,
    processes: createProcessTracker({ now: () => clock.now() }),
    daemons: createDaemonRegistry({ db: openDatabase, clock, ids }),
    adaptive: undefined,
    remote,
    deploy,
    plugins,
    contracts,
  };
  const sandbox = createSandbox({
    config: () => loaded.config,
    workspace,
    dataDir,
    env,
    credentialEnv: () => providers.entries().flatMap((e) => e.api_key_env),
  });
  (app as { sandbox: Sandbox }).sandbox = sandbox;
  // Every command svc starts goes through it: the OS sandbox when active, a scrubbed environment.
  const spawner = createCommandSpawner({
    sandbox,
    env,
    isSecretValue: (value) => redactor.string(value) !== value,
    record: (runId, type, payload) => runs.append(runId, type, payload),
  });
  (app as { spawner: CommandSpawner }).spawner = spawner;
  const ws = createWorkspace({
    root: workspace,
    dataDir,
    env,
    config: () => loaded.config,
    db: openDatabase,
    bus,
    clock,
    ids,
    redactor,
    fetch: options.fetch ?? globalThis.fetch,
    guards: () => app.mutationGuards,
    spawner,
    sandbox,
  });
  (app as { ws: Workspace }).ws = ws;
  closers.push(() => ws.close());
  closers.push(() => workflows.close());
  const quality = createQuality({
    dataDir,
    db: openDatabase,
    hasDb: () => db !== undefined,
    config: () => loaded.config,
    clock,
    ids,
    bus,
    log,
    redactor,
    runs,
    ws,
  });
  (app as { quality: Quality }).quality = quality;
  closers.push(() => quality.close());

  // AUTH-07: /config-status reports the cloud credential sources.
  app.statusSections.set('cloud_identity', () => cloudIdentity(providers));
  const recommendations = createRecommendationLedger({ db: openDatabase, clock, ids });
  Object.assign(app, { recommendations });
  app.mutationGuards.push(hardClaimGuard(claims));
  app.onClose(startRecommendationRecorder({ bus, clock, config: () => loaded.config, log }, recommendations));
  // After the recorder: a signal's recommendation is recorded once (followons.ts checks).
  const health = createHealthFollowons({
    db: openDatabase,
    bus,
    clock,
    ids,
    log,
    config: () => loaded.config,
    agent: app.agent,
    recommendations,
    sessionPublisher: () => runtime.sessionPublisher,
  });
  (app as { health: HealthFollowons }).health = health;
  app.onClose(() => health.close());

  // The cached codebase summary (describe_context) joins the prompt when there is one: one
  // indexed read, never a workspace walk.
  agent.addPromptSection(() => observe.promptSection());

  if (options.packs !== false) {
    const packs = createPackController({
      workspace,
      env,
      config: () => loaded.config,
      db: openDatabase,
      dbPresent: () => db !== undefined || existsSync(join(dataDir, DB_FILE)),
      sessions: app.sessions,
      bus,
      clock,
      log,
      redactor,
      pluginPackDirs: () => plugins.packDirs(),
      spawner,
      toolNames: () => ({
        known: app.tools.gates().map((g) => g.tool.name),
        canonical: canonicalToolName,
        rejectedInAllowlist: isConfigAlias,
      }),
    });
    (app as { packs: PackController }).packs = packs;
    agent.addPromptSection((sessionId) => packs.promptSection(sessionId));
    app.policyProviders.push((sessionId) => packs.policies(sessionId));
    closers.push(() => packs.close());
  }

  // Before the registry: the adaptive tool's gate needs the layer.
  if (options.adaptive !== false) {
    const adaptive = createAdaptiveService({
      db: openDatabase,
      dbPresent: () => db !== undefined || existsSync(join(dataDir, DB_FILE)),
      bus,
      clock,
      ids,
      log,
      redactor,
      config: () => loaded.config,
      sessions,
      runs,
      agent: app.agent,
      packs: app.packs,
      // The registry is built below; the funnel is read when a reshape is checked.
      toolFunnel: (sessionId) => app.funnel(app.funnelContext(sessionId)),
    });
    (app as { adaptive: AdaptiveService }).adaptive = adaptive;
    agent.addPromptSection((sessionId) => adaptive.promptSection(sessionId));
    closers.push(() => adaptive.close());
  }

  const registry = createToolRegistry(options.tools ?? allTools, () => ({ app }));
  (app as { tools: ToolRegistry }).tools = registry;
  const mcpClients = createMcpClientManager({
    config: () => loaded.config,
    workspace,
    env,
    log,
    clock,
    fetch: app.fetch,
    tools: registry,
    authStore: options.mcpAuthStore ?? createFileAuthStore(join(globalConfigDir(env), 'mcp-auth.json')),
    onSecret: (value) => redactor.add(value),
  });
  (app as { mcpClients: McpClientManager }).mcpClients = mcpClients;
  closers.push(() => mcpClients.close());
  // MCP servers connect lazily: the first prompt assembly of a turn starts them (never blocking).
  agent.addPromptSection(() => {
    mcpClients.start();
    return undefined;
  });
  if (options.eagerDb) openDatabase();
  return app;
}

function checkAllowlists(config: Config) {
  const problems = [
    ...allowlistProblems(config.permissions.allowed_tools, 'permissions.allowed_tools'),
    ...Object.entries(config.agents).flatMap(([id, agent]) =>
      agent.tools?.allow ? allowlistProblems(agent.tools.allow, `agents.${id}.tools.allow`) : [],
    ),
    ...allowlistProblems(config.services.mcp.exposed_tools ?? [], 'services.mcp.exposed_tools'),
  ];
  if (problems.length)
    throw new SvcError('config_error', `config: ${problems[0]}`, { details: { problems } });
}

const SECRET_ENV = /(_API_KEY|_TOKEN|_SECRET|_SECRET_ACCESS_KEY|_PASSWORD|_SESSION_TOKEN)$/;

function seedSecrets(redactor: Redactor, loaded: LoadedConfig, env: Record<string, string | undefined>) {
  for (const value of loaded.interpolated) redactor.add(value);
  for (const [name, value] of Object.entries(env)) if (SECRET_ENV.test(name)) redactor.add(value);
  for (const provider of Object.values(loaded.config.providers)) {
    if (provider.api_key && !provider.api_key.startsWith('keychain:')) redactor.add(provider.api_key);
    for (const v of Object.values(provider.headers ?? {})) redactor.add(v);
  }
  for (const server of Object.values(loaded.config.mcp)) {
    for (const v of Object.values(server.headers ?? {})) redactor.add(v);
    for (const [k, v] of Object.entries(server.env ?? {})) if (SECRET_ENV.test(k)) redactor.add(v);
    redactor.add(server.oauth?.client_secret);
  }
  redactor.add(loaded.config.services.http.token);
  redactor.add(loaded.config.services.mcp.token);
}
