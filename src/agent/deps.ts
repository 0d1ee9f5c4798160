/**
 * What the agent needs, named: the factory's dependencies (`AgentDeps`, given by createApp) and
 * the host its modules read (`AgentHost`: the run loop, the prompt, compaction, the step recorder,
 * the tool bridge, the reports). The agent never sees the App: `createAgentService` builds its
 * host from its deps (./host.ts). A ToolHost has every member of `AgentHost` under the same name,
 * so a tool handler (or a test) may pass `ctx.app` where a host is expected.
 * @module
 */
import type { AdaptiveService } from '../adaptive/service';
import type { Config } from '../config/schema';
import type { EventBus } from '../events/bus';
import type { Logger } from '../log';
import type { McpClientManager } from '../mcp-client/manager';
import type { ObserveService } from '../observe/service';
import type { PermissionService } from '../permissions/permission-service';
import type { FunnelContext, SessionStart } from '../permissions/tool-policy';
import type { ProviderService } from '../providers/service';
import type { ModelResolver } from '../providers/types';
import type { Redactor } from '../redact';
import type { RunLedger } from '../runs/run-ledger';
import type { SessionStore } from '../sessions/session-store';
import type { StoreTransactions, StoreView } from '../store/transactions';
import type { Telemetry } from '../telemetry/service';
import type { Clock, Ids } from '../util/ids';
import type { AgentStateStore } from './agent-state-store';
import type { RunLeases } from './run-leases';
import type { AgentToolbox } from './toolbox';
import type { ChildRunInput, PromptSection } from './types';

export type { PromptSection };

/**
 * The adaptive layer as the run loop reads it (the compaction threshold of a session's genome), and
 * waits for it at a run's boundaries.
 */
export type AgentAdaptive = Pick<AdaptiveService, 'compactionThreshold' | 'settled' | 'quiet'>;

/** The MCP client connections as the run loop waits for them. */
export type AgentMcpClients = Pick<McpClientManager, 'settled'>;

/** The sessions as the agent uses them: conversations, their messages and usage. */
export type AgentSessions = Pick<
  SessionStore,
  | 'addUsage'
  | 'appendAnnounced'
  | 'appendMessage'
  | 'appendWithMessages'
  | 'closeStep'
  | 'closeStepWrite'
  | 'create'
  | 'family'
  | 'get'
  | 'getMessage'
  | 'messages'
  | 'messagesVersion'
  | 'promptInsert'
  | 'require'
  | 'root'
  | 'update'
  | 'updateMessage'
>;

/** The run ledger as the agent uses it: the runs, the queue, claims, cancels and events. */
export type AgentRuns = Pick<
  RunLedger,
  | 'append'
  | 'appendAnnounced'
  | 'appendNow'
  | 'beforeNextAppend'
  | 'appendList'
  | 'followingEvent'
  | 'followingEvents'
  | 'available'
  | 'cancelRequested'
  | 'claim'
  | 'create'
  | 'createClaimed'
  | 'events'
  | 'list'
  | 'owner'
  | 'ownerAlive'
  | 'queries'
  | 'queued'
  | 'recover'
  | 'requestCancel'
  | 'require'
  | 'running'
  | 'takeAppended'
  | 'takeOver'
  | 'update'
  | 'updateAndAppend'
  | 'updateAndAppendAfter'
  | 'updateCancel'
  | 'holdTotals'
  | 'updateQueued'
>;

/** The funnel context of a session (mode, phase, agent and policy layers). */
export type FunnelContextOf = (
  sessionId?: string,
  overrides?: FunnelContext,
  start?: SessionStart,
) => Promise<FunnelContext>;

/** What the agent's modules read. Same member names as the ToolHost, narrower types. */
export interface AgentHost {
  readonly workspace: string;
  readonly dataDir: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly clock: Clock;
  /** The App's ids (a held text's message id, made before its row: ./step-recorder.ts). */
  readonly ids: Ids;
  readonly log: Logger;
  readonly redactor: Redactor;
  /** The current config (replaced by a reload). */
  readonly config: Config;
  /** The store's transactions, that group the run's writes (SQLite or PostgreSQL). */
  readonly store: Pick<StoreView, 'transactions'>;
  readonly bus: EventBus;
  readonly sessions: AgentSessions;
  readonly runs: AgentRuns;
  readonly permissions: PermissionService;
  readonly models: ModelResolver;
  readonly providers: Pick<ProviderService, 'entry' | 'authHint'>;
  readonly telemetry: Telemetry;
  readonly observe: Pick<ObserveService, 'promptStack' | 'queries'>;
  readonly adaptive: AgentAdaptive | undefined;
  readonly mcpClients: AgentMcpClients;
  readonly promptSections: readonly PromptSection[];
  funnelContext: FunnelContextOf;
  onClose(fn: () => void | Promise<void>): void;
}

/** The dependencies of `createAgentService`, wired by createApp. */
export interface AgentDeps {
  workspace: string;
  dataDir: string;
  env: Readonly<Record<string, string | undefined>>;
  clock: Clock;
  ids: Ids;
  log: Logger;
  redactor: Redactor;
  config(): Config;
  /** The App store's transactions (src/store/transactions.ts). */
  transactions: StoreTransactions;
  /** The agent's own table (the current session): ./agent-state-store.ts or its PostgreSQL twin. */
  agentState: AgentStateStore;
  bus: EventBus;
  sessions: AgentSessions;
  runs: AgentRuns;
  permissions: PermissionService;
  models: ModelResolver;
  providers: Pick<ProviderService, 'entry' | 'authHint'>;
  telemetry: Telemetry;
  observe: Pick<ObserveService, 'promptStack' | 'queries'>;
  /** Built after the agent; undefined in a runtime without the adaptive layer. */
  adaptive(): AgentAdaptive | undefined;
  /** Built after the agent (they register their tools in the registry). */
  mcpClients(): AgentMcpClients;
  funnelContext: FunnelContextOf;
  onClose(fn: () => void | Promise<void>): void;
  /**
   * The tools of a run (tools/core/agent-toolbox.ts implements the port): over the workspace, or
   * over another checkout for a child run with `workspace` (spawn_worktree_override).
   */
  toolbox(workspace?: ChildRunInput['workspace']): AgentToolbox;
  /**
   * One writer per workspace (issue 18, cluster mode): runs take the workspace lease before their
   * first change. Absent on SQLite, where one process owns the store.
   */
  runLeases?: RunLeases;
  /**
   * Durable runs (issue 19, `[engine] kind = "dbos"`): a root run's execution runs as the engine's
   * workflow, so another node resumes it when this one dies. Absent: runs live in this process.
   */
  durable?: DurableRuns;
  /**
   * The workspace a queued run of another workspace runs in on this node (the durable engine's
   * queue gives any node any workspace's run; a shared volume): undefined for this node's own.
   */
  workspaceAt?(root: string): ChildRunInput['workspace'];
}

/** The durable engine's side of a run (src/engine/dbos-engine.ts implements it). */
export interface DurableRuns {
  /** Runs `body` (the run's execution) as the run's workflow; resolves with its outcome. */
  execute<T>(runId: string, body: () => Promise<T>): Promise<T>;
  /**
   * At a clean stop: the runs whose execution stops here unfinished, left to a live node to adopt
   * (empty when no other node is alive: they are interrupted as before).
   */
  handOver?(): Promise<ReadonlySet<string>>;
  /**
   * Queue a root run (still `queued` in the ledger) on its workspace's slot instead of running it
   * here: the engine runs it on whichever node its queue gives it to (`resume` there). `done`
   * settles when it ended; `already`: it was queued before (by this or another node). `workspace`
   * is read only when it is queued (the run's session's).
   * Undefined: not queued; claim and run it here.
   */
  enqueue?(
    runId: string,
    workspace: () => Promise<string>,
  ): Promise<{ done: Promise<void>; already: boolean } | undefined>;
  /**
   * Whether `enqueue` can queue a run now (an engine with a queue is attached). Absent, with
   * `enqueue`: assumed it can (a send then never inserts its run already claimed, p-pgclaimed).
   */
  queues?(): boolean;
  /**
   * Runs `fn` outside any run's workflow (a run the engine gave this node, when it ends, starts
   * its session's next queued prompt: that one is queued, not run inside the ended run's workflow).
   */
  outside?<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Whether a run's body is a workflow of an engine now (`execute` is not just the body). Absent:
   * assumed it is.
   */
  workflows?(): boolean;
}
