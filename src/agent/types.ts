/**
 * The one session API (ARCHITECTURE.md, "One session API for every client"): everything a client
 * needs to drive the agent. `svc run` uses it in-process; the HTTP session routes, the compat
 * surface and the TUI use exactly this interface (in-process, or over HTTP + SSE when attached to
 * a running server). Events flow one way: domain → bus → subscribers; see `src/events/types.ts`
 * for the catalog.
 * @module
 */
import type { FailureReport } from '../errors';
import type { SessionEvent } from '../events/bus';
import type {
  PendingPermission,
  PermissionDecision,
  PermissionService,
} from '../permissions/permission-service';
import type { SessionStart } from '../permissions/tool-policy';
import type { ResolvedModel } from '../providers/types';
import type { AgentRun, FinalRunStatus, RunStatus } from '../runs/run-ledger';
import type { ClaimAlongside, FinishAlongside } from '../runs/types';
import type { CreateSessionInput, Session } from '../sessions/session-store';
import type { RidingInsert } from '../store/preceding-write';
import type { Tx } from '../store/transactions';
import type { Workspace } from '../workspace/workspace';
import type { AgentKind } from './agent-kinds';
import type { RefusedCall } from './refused';

/** The agent state machine of one session. */
export type SessionState = 'idle' | 'running' | 'cancelling' | 'compacting';

export interface SendInput {
  /** Existing session to continue; omitted → a new session is created. */
  sessionId?: string;
  /** The user's prompt (plain text). */
  prompt: string;
  /** Agent kind for this run (default: the session's agent). Must be a primary kind. */
  agent?: string;
  /** Model selector for this run only (`<provider>/<model>`); the session's model is unchanged. */
  model?: string;
  /**
   * `model` as the caller already resolved it (the compat surface): the run binds it to its own
   * metering (`ModelResolver.bind`) instead of resolving it again, when it starts on this node
   * and selects the same model; otherwise it resolves as usual.
   */
  resolved?: ResolvedModel;
  /** Step limit for this run (default `[agents.<id>].max_steps`, then `options.max_steps`). */
  maxSteps?: number;
  /** Skip every permission prompt (`--yolo` / `--dangerously-skip-permissions`). */
  yolo?: boolean;
  /** A permission prompt with nobody attached: fail the call (default from config) or wait. */
  unattended?: 'fail' | 'wait';
  /** Who sends it (cli, http, tui, mcp, agent…), kept on the run row. Default `api`. */
  origin?: string;
  /**
   * When the session already has an active run (here or in another process): `queue` (default)
   * puts the prompt in the session's queue; `refuse` throws a `conflict` SvcError instead.
   */
  ifBusy?: 'queue' | 'refuse';
  /** Title of the new session when `sessionId` is omitted (default: from the prompt). */
  title?: string;
  /**
   * `sessionId`'s row as the caller created it inside the transaction this send joins (the compat
   * surface's new session, no run in it yet): the send and its run's launch use it instead of
   * reading the row again (its id, parent, agent and model), and the session's queue is the new
   * run alone.
   */
  session?: Session;
  /**
   * `session`'s INSERT, held by the caller (`SessionStore.createHeld`, PostgreSQL): it goes first
   * in the statement that inserts the run (`RunLedger.create`'s `riding`), in the transaction the
   * send joins. Only with `session`. `stamp`: its `updated_at` set to the prompt message's time
   * when that message rides in the same statement (p-pgstart3).
   */
  sessionInsert?: RidingInsert & { stamp?(at: number): void };
  /**
   * The caller's transaction fails with this send (its error propagates, never caught and the
   * rest committed): the send joins it with no savepoint of its own (`StoreTransactions.join`;
   * PostgreSQL: two statements fewer). Outside a transaction, no difference.
   */
  joinTransaction?: boolean;
  /**
   * The token of the caller's transaction body (SQLite, `StoreTransactions.runWith`: no async scope
   * to find it by): the send joins it through the token, and the run it launches asks its start-up
   * step batch with it (`RunExecution.transaction`). With `joinTransaction`.
   */
  transaction?: Tx;
  /**
   * Another domain's write that goes in the new run's claim where the ledger can (PostgreSQL: the
   * compat request's row and its `openai_compat.request` event, one statement fewer), given the
   * run's id once it is created. Its `written` is told when it was written, then its `opened` once
   * the run's prompt message is (the run ended before: told then); else neither is told and the
   * caller writes it (the run was queued behind another, or claimed some other way).
   */
  claimAlongside?: (runId: string) => ClaimAlongside | undefined;
}

/** What a send asks of its own run's start (`SendInput.claimAlongside`; its `opened`, only once written). */
export interface StartHooks {
  readonly runId: string;
  readonly alongside?: ClaimAlongside;
  /** The sender's transaction body (`SendInput.transaction`). */
  readonly transaction?: Tx;
}

export interface SendResult {
  session_id: string;
  run_id: string;
  /** `running`: started now; `queued`: waits in the session's queue (FIFO). */
  status: 'running' | 'queued';
  /** 0 when running, else the 1-based place in the queue. */
  position: number;
}

/** A run's result without its final text (`AgentService.result(runId, { text: false })`). */
export type ResultWithoutText = Omit<RunResult, 'text'>;

/** `AgentService.finishWith`'s builder: the write for a run that ended so, or undefined. */
export type FinishWrite = (
  ended: Pick<RunResult, 'status' | 'reason'> & { usage: { input_tokens: number; output_tokens: number } },
) => FinishAlongside | undefined;

export interface RunResult {
  run_id: string;
  session_id: string;
  parent_run_id: string | null;
  family_session_id: string;
  status: RunStatus;
  /** Why it ended when it did not simply finish (max_steps, loop_detected, cancelled by …). */
  reason: string | null;
  /** Redacted failure message. */
  error: string | null;
  /** What failed, with the provider, the model and the next step; null unless the run failed. */
  failure: FailureReport | null;
  /**
   * The refused mutating call a completed run ended with (denied, nobody to ask, refused by the
   * command rules), or null: the run finished but that change was not made.
   */
  refused: RefusedCall | null;
  /** The final assistant text of the run. */
  text: string;
  steps: number;
  usage: {
    input_tokens: number;
    output_tokens: number;
    reasoning_tokens: number;
    cached_input_tokens: number;
  };
  cost: number;
  model: string | null;
  agent: string;
  started_at: number | null;
  finished_at: number | null;
  duration_ms: number | null;
}

export interface QueueItem {
  run_id: string;
  /** First line of the prompt, at most 80 characters. */
  preview: string;
  agent: string;
  origin: string;
  created_at: number;
}

export interface QueueStatus {
  session_id: string;
  state: SessionState;
  active_run_id: string | null;
  length: number;
  items: QueueItem[];
}

export interface SessionRuntimeStatus {
  session_id: string;
  state: SessionState;
  /** The active run in this process, if any. */
  run_id: string | null;
  /** A run of this session that another live process is running (then this process must not). */
  busy_elsewhere: {
    run_id: string;
    pid: number | null;
    host: string | null;
    started_at: number | null;
  } | null;
  queue_length: number;
}

export interface CompactionResult {
  session_id: string;
  summary_message_id: string;
  /** Messages folded into the summary. */
  messages_summarized: number;
  tokens_before: number;
  tokens_after: number;
}

export interface SubscribeOptions {
  /** Replay retained events after this id first (SSE `Last-Event-ID`), then stream live ones. */
  afterId?: number;
  /** Also deliver events of the session's sub-agent (child) sessions. */
  family?: boolean;
}

export interface ChildRunInput {
  /** The session the sub-agent works for (its child session is created under it). */
  parentSessionId: string;
  parentRunId?: string;
  prompt: string;
  /** Sub-agent kind (default general). */
  agent?: string;
  /** Short title of the child session. */
  title?: string;
  /** Cancelling the parent cancels the child. */
  signal?: AbortSignal;
  /** Only these tools (after the funnel and the kind's own policy). */
  tools?: string[];
  yolo?: boolean;
  unattended?: 'fail' | 'wait';
  /** Step limit of the child run (default: the kind's, then `options.max_steps`). */
  maxSteps?: number;
  /** Model selector for the child run only. */
  model?: string;
  /**
   * Run the child against another checkout (a git worktree, spawn_worktree_override): its tools,
   * shell and system prompt see `root` and `ws` instead of the app's workspace.
   */
  workspace?: { root: string; ws: Workspace };
  /** Extra metadata of the child session (workflow lineage: recipe step, DAG task, team member). */
  metadata?: Record<string, unknown>;
}

export interface AgentService {
  /** Create a session (a child when `parent_id` is set). Publishes `session.created`. */
  createSession(input?: CreateSessionInput): Promise<Session>;
  /**
   * Send a prompt. Starts a run when the session is idle; otherwise the prompt joins the
   * session's queue (or, with `ifBusy: 'refuse'`, a `conflict` error). Returns at once; follow
   * the run with `wait` or `subscribe`.
   */
  send(input: SendInput): Promise<SendResult>;
  /** `send`, then wait for that run to end. Aborting `signal` cancels the run. */
  run(input: SendInput & { signal?: AbortSignal }): Promise<RunResult>;
  /**
   * Add a prompt to the session's queue (TUI ctrl+enter, `/enqueue`, `queue_enqueue`). It runs
   * after the active run and the prompts queued before it. When the session is idle it starts at
   * once, unless `start` is false (then it waits for the next send or `drain`).
   */
  enqueue(input: SendInput & { sessionId: string; start?: boolean }): Promise<SendResult>;
  /** Start the oldest queued prompt when the session is idle. Returns the run started, if any. */
  drain(sessionId: string): Promise<string | undefined>;
  /** The session's queue. */
  queue(sessionId: string): Promise<QueueStatus>;
  /** Remove one queued prompt (its run becomes `cancelled`). */
  removeQueued(runId: string): Promise<AgentRun>;
  /** The session's state here, and whether another process runs it. */
  state(sessionId: string): Promise<SessionRuntimeStatus>;
  /**
   * Cancel the session's active run (and, with `clearQueue`, its queued prompts). The session
   * stays consistent: partial output is kept, unfinished tool calls get a "cancelled" result.
   */
  cancel(
    sessionId: string,
    options?: { clearQueue?: boolean; reason?: string },
  ): Promise<{
    cancelled_run_id: string | null;
    cleared: string[];
  }>;
  /**
   * Cancel one run: a queued one leaves the queue, a running one here is aborted, one running in
   * another process is asked to stop at its next check (about a second). Throws `conflict` for a
   * run that already ended.
   */
  cancelRun(runId: string, reason?: string): Promise<AgentRun>;
  /**
   * What the run's finish writes for the caller in its own statement where the store can
   * (PostgreSQL; p-pgcompat6: a streamed compat request's row end): `build` is asked once, at the
   * finish on this node, with how the run ended; undefined: nothing. Answers the release (the
   * caller no longer wants it written: a client gone, the request ended otherwise).
   */
  finishWith(runId: string, build: FinishWrite): () => void;
  /** Wait for a run to end (in this or another process). */
  wait(runId: string, options?: { signal?: AbortSignal }): Promise<RunResult>;
  /** Wait until the session is idle here with an empty queue (or stopped draining after a failure). */
  waitIdle(sessionId: string, options?: { signal?: AbortSignal }): Promise<void>;
  /** The result view of a run row (text from its final message). */
  result(runId: string): Promise<RunResult>;
  /**
   * The same without the final text, whose message is then not read: for a caller that has the
   * text already (the streamed compat answer sent it as it came).
   */
  result(runId: string, options: { text: false }): Promise<ResultWithoutText>;
  /**
   * Subscribe to a session's events (see `src/events/types.ts`). With `afterId`, retained events
   * after it are replayed first, without gaps or duplicates. Returns the unsubscribe function.
   */
  subscribe(
    sessionId: string,
    listener: (event: SessionEvent) => void,
    options?: SubscribeOptions,
  ): Promise<() => void>;
  /** Pending permission requests (of one session family, or all). */
  pendingPermissions(sessionId?: string): PendingPermission[];
  /**
   * Answer a permission request: allow once, allow for the session, or deny. First answer wins.
   * `message` is the operator's note: a deny's reason reaches the model with the refusal.
   */
  answerPermission(
    requestId: string,
    decision: PermissionDecision,
    by?: string,
    message?: string,
  ): Promise<PendingPermission>;
  /**
   * Say that a client is attached to a session ('*' for all) and answers its permission
   * requests. Without one, prompts follow `permissions.unattended`. Returns detach.
   */
  attach(sessionId: string, client: string): () => void;
  /** The permission service itself (checks, grants, attachments). */
  readonly permissions: PermissionService;
  /**
   * Summarize the session's older turns with the small model (the auto-compaction pipeline, on
   * demand). Refused with `conflict` while a run is active.
   */
  summarize(
    sessionId: string,
    options?: { signal?: AbortSignal; reason?: 'manual' | 'health_followon' },
  ): Promise<CompactionResult>;
  /**
   * Ask for a compaction of a session that has an active run here: it happens before the run's
   * next step (`compaction.started` carries `reason`, default manual). A request the run ends
   * without using is dropped with the run. False when the session has no active run in this
   * process (call `summarize`).
   */
  requestCompaction(sessionId: string, options?: { reason?: 'manual' | 'health_followon' }): boolean;
  /** Run a sub-agent task in a child session and return its result (the `agent` tool). */
  runChild(input: ChildRunInput): Promise<RunResult>;
  /**
   * Resume here a running run whose node died (the durable engine calls it): it goes on from its
   * first unfinished step and finishes here. Its outcome, or undefined when it was not running.
   */
  resume(runId: string): Promise<{ status: FinalRunStatus; steps: number } | undefined>;
  /** Agent kinds (built in + `[agents.<id>]`). */
  kinds(): AgentKind[];
  /** Sessions with an active run in this process. */
  active(): { session_id: string; run_id: string; state: SessionState }[];
  /** The client's current session (set by `switch_session`, `svc run`), if any. */
  currentSession(): Promise<string | null>;
  setCurrentSession(sessionId: string | null): Promise<void>;
  /**
   * The sections other domains add to the system prompt of a session's turns, in registration
   * order (the live list `addPromptSection` appends to; the App's `promptSections` is this list).
   */
  readonly promptSections: PromptSection[];
  /** Add a section to the system prompt of every turn (pack preamble, adaptive guidance…). */
  addPromptSection(section: PromptSection): void;
  /** Stop every run of this process (status `interrupted`) and wait for them to settle. */
  close(): Promise<void>;
}

/** A section of the system prompt contributed by another domain: text, or undefined for none. */
export type PromptSection = (
  sessionId: string,
  start?: SessionStart,
) => PromptSectionText | undefined | Promise<PromptSectionText | undefined>;
type PromptSectionText = { source: string; text: string };

export type { FinalRunStatus };
