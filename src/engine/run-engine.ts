/**
 * The run engine seam (issue 19, item 1; docs/engine.md): what runs an agent run, behind one
 * port, so a durable engine (DBOS, on the PostgreSQL store) can take the in-process one's place.
 * The shapes are the agent service's and the run ledger's own: a request is a `SendInput`, a run
 * an `AgentRun`, an event a `RunEvent` with its per-run `seq`.
 * @module
 */
import type { SendInput, SendResult } from '../agent/types';
import type { PendingPermission, PermissionDecision } from '../permissions/permission-types';
import type { AgentRun, RunEvent, RunFilter } from '../runs/types';
import type { EngineKind } from './engine-kind';

/** The answer to a pending permission request of a run or session. */
export interface EngineReply {
  decision: PermissionDecision;
  /** Which request, when the run or session has several pending (else the only one). */
  request_id?: string;
  /** Who answered (kept in the ledger). */
  by?: string;
  /** The operator's note: a deny's reason reaches the model with the refusal. */
  message?: string;
}

export interface EngineEventsOptions {
  /** Events with a sequence number above this one (default 0: from the first). */
  after?: number;
  /** Most events to return (default 1000). */
  limit?: number;
}

export interface EngineForkOptions {
  /**
   * Fork after this step of the run (0: its prompt only, before any model step; up to the run's
   * `steps`). Omitted: after the whole run.
   */
  step?: number;
  /** Title of the new session (default "fork of <title>"). */
  title?: string;
}

/** The session a fork made (the shape `fork_agent_run` answers). */
export interface EngineForkResult {
  session_id: string;
  forked_from: { session_id: string; run_id: string; step?: number };
  messages_copied: number;
}

export interface RunEngine {
  readonly kind: EngineKind;
  /** Start a run, or queue it behind the session's active run (the agent's `send`). */
  start(request: SendInput): Promise<SendResult>;
  /** Cancel a queued or running run; `conflict` for one that already ended. */
  cancel(runId: string, reason?: string): Promise<AgentRun>;
  /**
   * Answer the pending permission request of a run, or of a session (and its sub-agents), by id.
   * `not_found` when nothing is pending there; `conflict` when several are and no `request_id`
   * says which.
   */
  reply(runOrSessionId: string, answer: EngineReply): Promise<PendingPermission>;
  /** A run's ledger events after a sequence number, in order (`not_found` for an unknown run). */
  events(runId: string, options?: EngineEventsOptions): Promise<RunEvent[]>;
  /** A new session holding the run's session history up to a step of the run (or its end). */
  fork(runId: string, options?: EngineForkOptions): Promise<EngineForkResult>;
  /** Runs from the ledger, newest first. */
  list(filter?: RunFilter): Promise<AgentRun[]>;
}
