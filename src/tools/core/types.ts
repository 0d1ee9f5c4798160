/**
 * The tool world's types, in one file so they may refer to each other without an import cycle:
 * the host a handler reaches through `ctx.app` (`ToolHost`), the call context, a tool definition
 * and its surface bindings, the registry and the outcome of one call. `app.ts` builds the
 * registry from the tool families and declares `App extends ToolHost`; nothing under `tools/`
 * imports `app.ts` (dependency inversion: tools see the host they are given, not the wiring).
 * @module
 */
import type { z } from 'zod';
import type { AdaptiveService } from '../../adaptive/service';
import type { AgentService } from '../../agent/types';
import type { ConfigSourcesInput, LoadedConfig } from '../../config/load';
import type { Config } from '../../config/schema';
import type { ContractService } from '../../contracts/contract-service';
import type { ClaimService } from '../../coordination/claims';
import type { MarkerService } from '../../coordination/markers';
import type { DeployService } from '../../deploy/deploy-service';
import type { SvcError } from '../../errors';
import type { EventBus } from '../../events/bus';
import type { HealthFollowons } from '../../health/followons';
import type { Logger } from '../../log';
import type { McpClientManager } from '../../mcp-client/manager';
import type { ObserveService } from '../../observe/service';
import type { PackController } from '../../packs/controller';
import type { PermissionRequest, PermissionService } from '../../permissions/permission-service';
import type {
  FunnelContext,
  FunnelEntry,
  SessionStart,
  ToolPolicy,
  ToolTag,
} from '../../permissions/tool-policy';
import type { PluginService } from '../../plugins/plugin-service';
import type { ProviderService } from '../../providers/service';
import type { ModelResolver } from '../../providers/types';
import type { Quality } from '../../quality/quality';
import type { RecommendationLedger } from '../../readouts/cognition/recommendation-store';
import type { RecipeService } from '../../recipes/recipe-service';
import type { Redactor } from '../../redact';
import type { RemoteAgents } from '../../remote/delegation';
import type { CompatRequestRepository } from '../../runs/compat-request-repository';
import type { RunLedger } from '../../runs/run-ledger';
import type { Sandbox } from '../../sandbox/sandbox';
import type { CommandSpawner } from '../../sandbox/spawn';
import type { AutopilotWorker } from '../../scheduler/autopilot-worker';
import type { DaemonRegistry } from '../../scheduler/daemons';
import type { ProcessTracker } from '../../scheduler/process-tracker';
import type { Scheduler } from '../../scheduler/scheduler';
import type { SessionStore } from '../../sessions/session-store';
import type { Db } from '../../store/db';
import type { StoreView } from '../../store/transactions';
import type { Telemetry } from '../../telemetry/service';
import type { Clock, Ids } from '../../util/ids';
import type { WorkflowService } from '../../workflows/workflow-service';
import type { Workspace } from '../../workspace/workspace';

export type { PermissionRequest, ToolTag };

export type Surface = 'agent' | 'http' | 'mcp' | 'cli' | 'tui' | 'acp';

/** What this process has wired: read by runtime_features and the readouts. */
export interface RuntimeState {
  /** Surfaces serving this app in this process. */
  surfaces: Set<Surface>;
  /** True once the database is open and the registry built (servers answer 503 before). */
  ready: boolean;
  /** A minimal MCP-only runtime (svc service start mcp) rather than the full app. */
  mcpOnly: boolean;
  /** Started as a server process (HTTP/MCP/autopilot) rather than a detached CLI/TUI. */
  server: boolean;
  /** Set when a server process begins its graceful shutdown (refuse new runs, finish up). */
  stopping: boolean;
  /** The HTTP server's base URL once it listens (`svc service start http|autopilot`). */
  httpUrl?: string;
  /**
   * The HTTP service mounted the SSE session route over this app (it publishes session events to
   * clients). Gate of `health_followon.activation` (spec, Events).
   */
  sessionPublisher: boolean;
}

export interface DbStatus {
  /** Where the state lives: the SQLite file (default), or PostgreSQL (issue 18). */
  kind?: 'sqlite' | 'postgres';
  /** The SQLite file, or the PostgreSQL URL with its password masked. */
  path: string;
  exists: boolean;
  open: boolean;
  error?: string;
  schema_version?: number;
}

/** A background worker owned by a server process (the autopilot worker). */
export interface BackgroundWorker {
  readonly name: string;
  /** Runs until `signal` aborts; the promise settles once the worker has stopped. */
  run(signal: AbortSignal): Promise<void>;
}

export interface MutationRequest {
  tool: string;
  sessionId?: string;
  /** Workspace-relative paths the mutation touches; empty when unknown (e.g. a shell command). */
  paths: string[];
}

/**
 * What a tool handler reaches through `ctx.app`: the domain services, under the member names the
 * App has always had (so handler bodies read `ctx.app.sessions`, `ctx.app.agent`, …). The App is
 * a ToolHost plus its lifecycle (close, teardown hooks) and the wiring hooks of later layers.
 */
export interface ToolHost {
  readonly workspace: string;
  readonly dataDir: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly fetch: typeof fetch;
  readonly log: Logger;
  readonly redactor: Redactor;
  /** The current loaded config (replaced by reloadConfig). */
  readonly loaded: LoadedConfig;
  readonly config: Config;
  reloadConfig(): LoadedConfig;
  /**
   * Load the config as it would be with these file texts (absolute path → text) in place of the
   * files on disk, with every check a load or reload makes; throws the config_error it would give.
   */
  checkConfig(contents: Record<string, string>): void;
  /** The database, opened (and migrated) on first use. Throws a clear SvcError when it cannot open. */
  readonly db: Db;
  hasDb(): boolean;
  dbStatus(): DbStatus;
  /** `dbStatus` with the PostgreSQL store's schema version read first when not known yet. */
  dbStatusChecked?(): Promise<DbStatus>;
  /**
   * Why the store cannot be used right now, without waiting (the PostgreSQL store monitor's last
   * probe); undefined when it can, and always on SQLite.
   */
  storeUnavailable(): string | undefined;
  /** The App's store (issue 18): its backend, and transactions over its repositories. */
  readonly store: StoreView;
  readonly bus: EventBus;
  /** Workspace claims (soft: advisory; hard: block other sessions' mutations). */
  readonly claims: ClaimService;
  readonly markers: MarkerService;
  /** The recommendation outcome ledger behind the operator cognition readout. */
  readonly recommendations: RecommendationLedger;
  /**
   * Health follow-ons: the `health.token_pressure` signal, its activation rules (compaction),
   * caps, stored activations and the `health_followon.activation` event (src/health/followons.ts).
   */
  readonly health: HealthFollowons;
  /** The command sandbox (`options.sandbox`: auto, bwrap or off) and its status. */
  readonly sandbox: Sandbox;
  /** Starts every command svc runs (bash, jobs, hooks): sandboxed when active, environment scrubbed. */
  readonly spawner: CommandSpawner;
  /** Resolves model selectors to AI SDK models (providers domain). */
  readonly models: ModelResolver;
  /** The providers domain: catalog, credential store, readiness, selection, status read models. */
  readonly providers: ProviderService;
  /** The cost ledger of every model call, metrics (Prometheus text, OTLP) and traces (OTLP). */
  readonly telemetry: Telemetry;
  readonly tools: ToolRegistry;
  readonly sessions: SessionStore;
  /** The durable run ledger (runs, their events, the prompt queue). */
  readonly runs: RunLedger;
  /** The compat surface's request ledger (`openai_compat_requests`), on the App's store. */
  readonly compatRequests: CompatRequestRepository;
  /** `ctx.ask` of agent runs: policy, session grants, pending requests, attached surfaces. */
  readonly permissions: PermissionService;
  /** The one session API: drive the agent (send, queue, cancel, subscribe, answer permissions). */
  readonly agent: AgentService;
  /**
   * Observability and context readouts: the prompt stack ledger (every system-prompt assembly,
   * metadata only) and the cached codebase summary of describe_context.
   */
  readonly observe: ObserveService;
  /**
   * Workspace files, processes and git (coding tools): path containment, file history, read
   * tracking, shell and background jobs, search, web, checkpoints, todos.
   */
  readonly ws: Workspace;
  /** Recipes: list, validate and run reusable multi-step pipelines (`run_recipe`, the scheduler). */
  readonly recipes: RecipeService;
  /**
   * Workflows: the pipeline frame of multi-step workflows (DAGs, templates, CSV fan-outs, team
   * tasks), teams, workflow templates and worktree overrides.
   */
  readonly workflows: WorkflowService;
  /**
   * apply_patch (multi-file patches), edit capsules (each run's changes as a revertible unit) and
   * the finding lifecycle (failing checks and diagnostics errors until fixed, waived or stale).
   */
  readonly quality: Quality;
  /**
   * Connections to the `[mcp.<id>]` servers, whose tools join `tools` as `mcp_<id>_<tool>`.
   * Lazy: call `start()` (never blocks) where tools are about to be used; `settled()` waits.
   */
  readonly mcpClients: McpClientManager;
  readonly runtime: RuntimeState;
  funnel(context?: FunnelContext): FunnelEntry[];
  /**
   * The funnel context of a session: its mode, phase, agent and policy layers. `start`: what a
   * run's start knows of the session, handed to the policy providers.
   */
  funnelContext(sessionId?: string, overrides?: FunnelContext, start?: SessionStart): Promise<FunnelContext>;
  /** Extra sections of config-status, contributed by domains (e.g. cloud identity). */
  readonly statusSections: Map<string, () => unknown>;
  /**
   * The session pack controller (operating packs): the operating-mode parity read model and,
   * unless the database is read-only, the pack-mutation provider. Undefined in a runtime built
   * without it (`packs: false`): that runtime has no operating-mode parity.
   */
  readonly packs: PackController | undefined;
  /**
   * Adaptive orchestration: per-session genomes, the monitor that reshapes them, and the hooks
   * through which a genome shapes runs (prompt section, plan gate, sub-agent slots, compaction
   * threshold, reviewer pass). Undefined in a runtime built with `adaptive: false`.
   */
  readonly adaptive: AdaptiveService | undefined;
  /** Delegation to remote A2A agents (a2a_delegate, delete_a2a_task) and the cards it knows. */
  readonly remote: RemoteAgents;
  /** Named agents deployed as long-running svc HTTP services (deploy_agent, deploy_fleet). */
  readonly deploy: DeployService;
  /**
   * Installed plugins (`<dataDir>/plugins`). Their MCP servers and agent kinds join the config
   * through a config layer; packs, recipes and commands are found through `packDirs()` and
   * `contributions(kind)`.
   */
  readonly plugins: PluginService;
  /** Contracts: workspace (`[contracts]`) and session obligations, results and waivers. */
  readonly contracts: ContractService;
  /** Scheduled jobs (prompts or recipes on cron or once) and their firings. */
  readonly scheduler: Scheduler;
  /** The autopilot worker with its counters. */
  readonly autopilot: AutopilotWorker;
  /** Child processes of this svc process, for daemon_status's spawn_isolation_audit. */
  readonly processes: ProcessTracker;
  /** Service processes (`svc service start http|autopilot`) of this data dir. */
  readonly daemons: DaemonRegistry;

  // TODO(#14): the members below are the App's lifecycle and the wiring hooks of later layers.
  // They leave ToolHost (for App, or for the service that owns each hook) once every domain
  // function a handler calls takes named dependencies instead of the whole App: until then a
  // handler passes `ctx.app` where an App is expected, so the two must have the same members.

  /** A tool context for a surface; permission asks default to the surface's policy. */
  toolContext(context: CallContext): ToolContext;
  /** Register teardown; run in reverse order by close(). */
  onClose(fn: () => void | Promise<void>): void;
  close(): Promise<void>;
  /**
   * Checks run before any workspace mutation (write, edit, bash…). A guard throws an SvcError to
   * refuse (hard workspace claims of other sessions).
   */
  readonly mutationGuards: ((request: MutationRequest) => void | Promise<void>)[];
  /**
   * Sections added to the system prompt of a session's turns (active pack preamble, adaptive
   * genome guidance…). Each returns text or undefined; order is registration order.
   */
  readonly promptSections: ((
    sessionId: string,
    start?: SessionStart,
  ) =>
    | { source: string; text: string }
    | undefined
    | Promise<{ source: string; text: string } | undefined>)[];
  /** Extra agent-policy layers for a session's funnel (active pack rules…). */
  readonly policyProviders: ((
    sessionId: string | undefined,
    start?: SessionStart,
  ) => ToolPolicy[] | Promise<ToolPolicy[]>)[];
  /**
   * The autopilot worker (due schedules, queued prompts). Filled by the scheduler layer;
   * `svc service start autopilot` runs it once the HTTP server is ready and stops it before close.
   */
  autopilotWorker?: BackgroundWorker;
}

export interface ToolContext {
  app: ToolHost;
  surface: Surface;
  signal: AbortSignal;
  sessionId?: string;
  runId?: string;
  /** The agent kind running the tool (build, plan, …) when called by an agent. */
  agent?: string;
  toolCallId?: string;
  /** Ask the attached operator (or policy) for approval; throws a `forbidden` SvcError on deny. */
  ask(request: PermissionRequest): Promise<void>;
  /** Progress for the UI (metadata only). */
  progress?(update: Record<string, unknown>): void;
  /**
   * Append an event to the current run's ledger (e.g. `local_shell_started`,
   * `background_job_started`, `sandbox_exec_started`); a no-op outside a run.
   */
  event?(type: string, payload: Record<string, unknown>): void;
  /**
   * The call runs while its step's first statement (this promise) is in flight (PostgreSQL, a
   * `readsOnly` tool, src/agent/tool-bridge.ts): a write to svc's store the call still makes
   * (`view`'s read mark) waits for it and fails with it, so nothing of the call is stored before
   * its start is, nor when its start failed (its result is dropped then too).
   */
  ahead?: Promise<void>;
}

/** What a caller says about one call: the surface, and optionally who calls and how to ask. */
export type CallContext = Partial<Omit<ToolContext, 'app'>> & Pick<ToolContext, 'surface'>;

export interface GateEnv {
  app: ToolHost;
}

/** Where a value of the input comes from on an HTTP route. */
export interface HttpBinding {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Hono path, always under /v1/ (e.g. `/v1/sessions/:id/observability`). */
  path: string;
  /** Path parameter → input field (e.g. `{ id: 'session_id' }`). */
  params?: Record<string, string>;
  /** Constant input fields for this route (e.g. `{ action: 'list' }`). */
  fixed?: Record<string, unknown>;
  /** Success status (default 200). */
  status?: number;
  /** Error body shape; default canonical `{error:{message,type}}`. */
  errors?: 'canonical' | 'flat' | 'text';
  /** Answer 503 `App not ready` until the app is ready (default true). */
  requiresReady?: boolean;
  /** Status code overrides by error code, e.g. `{ not_found: 200 }`. */
  statusFor?: Partial<Record<string, number>>;
  /**
   * The answer when the tool is not registered (its gate is closed). Default: 404 plain text.
   * Return an error to answer with it instead (e.g. 503 when the gate is on but a service the
   * tool needs is missing), or undefined for the default.
   */
  unregistered?: (app: ToolHost) => SvcError | undefined;
  /**
   * Adjust the assembled input (path params, query or body, fixed fields) before validation, e.g.
   * accept a client's spelling of a field (`prompt` for `text`).
   */
  prepare?: (input: Record<string, unknown>) => Record<string, unknown>;
}

export interface CliBinding {
  /** Space-separated command path: `config show-config-status`. */
  command: string;
  /** Input fields taken as positional arguments, in order. `name?` marks one optional. */
  args?: string[];
  /** Human output when `--json` is not given. Default: an indented key/value rendering. */
  text?: (result: any, input: any) => string;
  description?: string;
  /** Constant input fields for this command (e.g. `{ action: 'set' }`). */
  fixed?: Record<string, unknown>;
  /** Adjust the assembled input before validation (e.g. parse a TOML value). */
  prepare?: (input: Record<string, unknown>) => Record<string, unknown>;
  /** Run even when the tool's gate is closed (the command reports the closed state itself). */
  ungated?: boolean;
  /** Exit code when the result says so (e.g. strict checks). */
  exitCode?: (result: any) => number;
  /** A line for stderr before the tool runs (e.g. a workspace file replacing a built-in), or none. */
  notice?: (input: any, context: { app: ToolHost }) => string | undefined;
  /** Wrap the payload with command-local fields before printing (json, text); it stays unchanged inside. */
  envelope?: (result: any, context: { app: ToolHost; input: any }) => unknown;
  /** Answer without the App (no store): `config validate`; the context has the CLI's --config and -c. */
  standalone?: (
    input: any,
    context: Pick<ConfigSourcesInput, 'workspace' | 'env' | 'configFile' | 'overrides'>,
  ) => unknown;
}

export interface ToolSurfaces {
  http?: HttpBinding | HttpBinding[];
  /** MCP tool name (still needs `services.mcp.exposed_tools`). */
  mcp?: string;
  /** Offered over MCP only when this says so (e.g. stigmergy read tools enabled in config). */
  mcpGate?: (app: ToolHost) => true | string;
  cli?: CliBinding | CliBinding[];
}

export interface ToolDef<I extends z.ZodType = z.ZodType, O = unknown> {
  /** The native tool name, exact as the spec writes it. */
  name: string;
  /** Family from native-tools.tsv (core-files, runs, status, …). */
  family: string;
  tag: ToolTag;
  description: string;
  input: I;
  /**
   * Touches the workspace, processes or the outside world: asks permission, is withheld in
   * read-only modes and the planning phase, and honours hard workspace claims.
   */
  mutates: boolean;
  /**
   * Changes nothing another node, a resume or the user could observe, before its step's first
   * statement answered: not the workspace, not the outside world, no network, no event, no
   * permission ask (`ctx.ask`/`event` wait for the statement), no write to svc's store but through
   * `ctx.ahead` (which waits for it). A read-only child process killed on abort qualifies (ripgrep),
   * and so does a content-addressed cache file in svc's data dir written whole (the search ignore
   * file); `mutates: false` alone does not (`todos` writes the store). On PostgreSQL such a call
   * may run while its `tool.started` statement is in flight (src/agent/tool-bridge.ts, issue 18
   * item 6): its result is recorded only once that statement answered, and dropped when it failed.
   * Set only on audited tools: the list is pinned by test/tools/reads-only.test.ts
   * (docs/performance-log.md, p-readonly and p-readsmore).
   */
  readsOnly?: true;
  /**
   * The tool calls `ctx.ask` itself (with a precise title, scope, `safe` hint and details). When
   * absent, the agent loop asks once, centrally, before running a mutating tool whose permission
   * is not already allowed (allowed_tools, --yolo, a session grant).
   */
  asksPermission?: boolean;
  /**
   * Calls of this tool made in one model step may run side by side instead of one at a time
   * (the `agent` tool under a fan_out genome). Asked per call; default one at a time.
   */
  concurrent?: (env: { app: ToolHost; sessionId: string }) => Promise<boolean>;
  /** Registered at all? `true`, or a string saying why not (shown by the funnel report). */
  gate?: (env: GateEnv) => true | string;
  surfaces?: ToolSurfaces;
  run(ctx: ToolContext, input: z.output<I>): Promise<O> | O;
  /**
   * Sample inputs for read tools. The parity test calls every surface with each and compares
   * the JSON; a read tool with surfaces whose empty input is invalid must give one.
   */
  examples?: z.input<I>[];
  /**
   * false: calls change state or depend on process-local state (ids created per call, in-memory
   * jobs, the network), so the parity walker does not compare surfaces for this tool.
   */
  parity?: boolean;
  /** Text the model reads; default is the JSON of the result. */
  toModelOutput?(result: O): string;
}

export type AnyTool = ToolDef<z.ZodType, any>;

export interface GateResult {
  tool: AnyTool;
  registered: boolean;
  reason?: string;
}

export interface ToolRegistry {
  /**
   * Every defined tool, registered or not, with its gate result: the same array until the gates
   * are evaluated again (add, remove, refresh), so a caller may key what it derives on it.
   */
  gates(): GateResult[];
  /** Tools that passed their gates. */
  registered(): AnyTool[];
  /** A registered tool by native name or migration alias. */
  get(name: string): AnyTool | undefined;
  /** Like `get`, but throws a not_found SvcError naming the tool. */
  require(name: string): AnyTool;
  byMcpName(name: string): AnyTool | undefined;
  /** Add tools after start (MCP client servers); replaces same-named ones. */
  add(tools: AnyTool[]): void;
  remove(predicate: (tool: AnyTool) => boolean): void;
  /** Re-evaluate gates (config reload). */
  refresh(): void;
}

/** One problem of an input, as every surface reports it (`details.issues[]`). */
export interface InputIssue {
  /** Dotted path of the field (`edits.0.old_text`); empty for the input as a whole. */
  path: string;
  /** What the schema wanted: `string`, `one of build, plan`, `at least 1 character`… */
  expected: string;
  /** What came: `number 3`, `nothing`, `string "x"`… (empty for an unknown field). */
  received: string;
  /** The issue as one line: `path: expected string, received number 3`. */
  message: string;
}

/** Where a call stopped when it failed. */
export type CallStage = 'unknown' | 'gate' | 'input' | 'run';

/**
 * The outcome of one call through `callTool`: the value (redacted) or the failure as an SvcError
 * (message redacted), with the stage it stopped at. `tool` is absent only when no tool answered
 * to the name (stage `unknown`).
 */
export type CallOutcome =
  | {
      ok: true;
      tool: AnyTool /** The validated input (defaults filled in). */;
      input: unknown;
      value: unknown;
    }
  | {
      ok: false;
      tool?: AnyTool;
      stage: CallStage;
      error: SvcError;
      /** Stage run: the tool threw something other than an SvcError (a bug, not an expected failure). */
      crashed?: boolean;
    };
