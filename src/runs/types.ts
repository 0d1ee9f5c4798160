/**
 * The run ledger's shapes: a run, its events, the filters its reads take. Shared by the ledger
 * (writes, recovery), its queries (`./queries.ts`) and every domain that reads runs.
 * @module
 */
import type { FailureReport } from '../errors';
import type { PrecedingWrite, TrailingInsert } from '../store/preceding-write';

export type RunStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled' | 'interrupted';
export const RUN_STATUSES: readonly RunStatus[] = [
  'queued',
  'running',
  'completed',
  'failed',
  'cancelled',
  'interrupted',
];
export type FinalRunStatus = Exclude<RunStatus, 'queued' | 'running'>;

export interface RunUsage {
  input_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
  cached_input_tokens: number;
}

/** Per-run options kept with the row (what `svc run` flags or the caller asked for). */
export interface RunOptions {
  max_steps?: number;
  yolo?: boolean;
  /** What a permission prompt does when no surface is attached. */
  unattended?: 'fail' | 'wait';
  /** Extra tool policy of a sub-agent: only these tools (after the funnel). */
  tools?: string[];
}

export interface AgentRun {
  id: string;
  session_id: string;
  parent_run_id: string | null;
  family_session_id: string;
  status: RunStatus;
  agent: string;
  /** Requested selector (`--model`), replaced by the resolved selector once the run starts. */
  model: string | null;
  /** Who started it: cli, http, tui, mcp, agent, queue, subagent, fork. */
  origin: string;
  prompt: string;
  options: RunOptions;
  /** Why it ended (max_steps, loop_detected, cancelled by …), when it did not simply finish. */
  reason: string | null;
  /** Redacted failure message. */
  error: string | null;
  /** The classified failure (src/agent/failure.ts): summary, next step, details; null unless failed. */
  failure: FailureReport | null;
  steps: number;
  usage: RunUsage;
  cost: number;
  result_message_id: string | null;
  pid: number | null;
  host: string | null;
  runner: string | null;
  cancel_requested: boolean;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  updated_at: number;
}

export interface RunEvent {
  id: number;
  run_id: string;
  session_id: string;
  seq: number;
  type: string;
  payload: Record<string, unknown>;
  created_at: number;
}

export interface RunFilter {
  session_id?: string;
  /** Every run of the session family (the root and all descendants' runs). */
  family_session_id?: string;
  parent_run_id?: string;
  status?: RunStatus[];
  limit?: number;
  offset?: number;
}

/**
 * A write of another table of the runs domain (the compat ledger's row,
 * ./compat-request-repository.ts) that a PostgreSQL ledger makes in the same statement as one of
 * its events (`RunLedger.appendAlongside`): its statement text with $1…$n and their values. Opaque
 * to the callers, which pass it from one repository to the other.
 */
export interface AlongsideWrite {
  readonly text: string;
  readonly values: readonly unknown[];
  /**
   * The write skips instead of failing on its data (`ON CONFLICT DO NOTHING`, its target the only
   * constraint its values can break) and answers a row only when it wrote: the event is appended
   * only with its row, and inside a transaction it needs no savepoint (issue 18 item 6, p-pgcompat2).
   */
  readonly gates?: boolean;
}

/**
 * An insert of another domain that a run's claim makes in its own statement, after the claim and
 * only when it claimed (issue 18 item 6, p-pgstart: the compat request's row in its run's claim,
 * one statement of the start fewer). `cte(offset, go)` is one `alongside AS (INSERT … WHERE go …
 * RETURNING …)`, its parameters `values` numbered after `offset`; it answers a row only when it
 * wrote (a skip on its data, `ON CONFLICT DO NOTHING`, answers none: its event is not appended).
 */
export interface GatedInsert {
  readonly values: readonly unknown[];
  cte(offset: number, go: string): string;
  /**
   * SQLite (`FinishAlongside` only, p-syncrepo): the write made at once in the caller's open
   * transaction (the run's finish's), answering whether it wrote a row; `cte` is PostgreSQL's.
   */
  now?(): boolean;
}

/** `RunLedger.appendNow`. */
export interface AppendNow {
  /**
   * SQLite: `append` answering the event itself, no promise (its statement runs at the call either
   * way, after the ledger's first-use recovery): a hot caller that knows it is on SQLite skips a
   * promise and an await (p-syncrepo). Absent on PostgreSQL. `created_at`: an event held since
   * then (p-promptheld), else now.
   */
  appendNow?(runId: string, type: string, payload?: Record<string, unknown>, created_at?: number): RunEvent;
  /**
   * SQLite: `write` runs once, at the call, before the run's next append in this process (any
   * caller's), or never once replaced (undefined: none). A run's held preparation writes
   * (p-promptheld, ../agent/held-writes.ts `heldNow`) keep their seqs this way. Absent on PostgreSQL.
   */
  beforeNextAppend?(runId: string, write: (() => void) | undefined): void;
}

/**
 * What a run's finish writes for another domain in its own statement (issue 18 item 6,
 * p-pgcompat6: the compat request's row end in its run's finish, one round trip fewer between the
 * model's last byte and `[DONE]`): `write` (one `alongside AS (UPDATE … WHERE go RETURNING …)`,
 * made only when the run's row is), then `event` appended to the run right after `run.finished`,
 * only when `write` answered a row. `written` is told the event once both are; never told, neither
 * was written: the caller writes them. SQLite: `write.now()` after `run.finished`, in the finish's
 * transaction (one transaction body of a compat request fewer, p-syncrepo).
 */
export interface FinishAlongside {
  readonly write: GatedInsert;
  readonly event: { readonly type: string; readonly payload: Record<string, unknown> };
  written(event: RunEvent): void;
}

/**
 * The run's last step end that its finish writes first, in the finish's own statement (issue 18
 * item 6, p-pglast): `before`, the step's session writes (its messages finished, the session's
 * usage: ../store/preceding-write.ts), gating the whole statement (its rows missing: nothing is
 * written); `event` (its `step.finished`), appended to the run right before the finish's own event;
 * `riding` (the step's model call), made whatever the statement decides. `written` is told
 * `before`'s result and the event once the statement wrote them; never told, nothing of the step
 * end was written: the caller writes it.
 */
export interface FinishFirst {
  readonly before: PrecedingWrite<unknown>;
  readonly event: { readonly type: string; readonly payload: Record<string, unknown> };
  readonly riding?: TrailingInsert;
  written(result: unknown, event: RunEvent): void;
}

/**
 * What a claim writes for another domain with it (`ClaimOptions.alongside`): `write`, and `event`
 * appended to the run after the claim's own events, both only when the run `runId` is claimed in
 * that one statement. `written` is told the event once both are; never told, neither was written
 * (the run was not claimed there, or the backend has no such claim): the caller writes them, and
 * `opened` is not told either.
 */
export interface ClaimAlongside {
  readonly runId: string;
  readonly write: GatedInsert;
  readonly event: { readonly type: string; readonly payload: Record<string, unknown> };
  written(event: RunEvent): void;
  /**
   * Told once the claimed run's prompt message is written and its events published, or the run
   * ended before; only after `written` (a caller that holds its transaction's COMMIT for those
   * events waits only when its write went in the claim).
   */
  opened?(): void;
}

/** Session events a run ledger write announces (`updateAndAppendAfter`'s `announce`). */
export interface SessionAnnounce {
  sessionId: string;
  events: readonly { type: string; payload: Record<string, unknown> }[];
  /**
   * The statement may wait for the bus's append in flight and go as its next write
   * (`EventBus.joinAll`'s `next`, p-finishjoin): for a statement nothing of the caller's is sent
   * behind before it answers (a run's last step end).
   */
  next?: boolean;
  /**
   * Not joinable: reserved in the bus's queue all the same (`EventBus.reserve`), appended once the
   * statement wrote (`updateAndAppendAfter`: a stop's send of a held step end, p-pglast).
   */
  ordered?: boolean;
  /**
   * `updateAndAppend`, `updateAndAppendAfter`: told the bus's stamp on the events (`JoinedEvents.createdAt`) when they were
   * joined to the statement: a caller whose statement's answer is lost and who finds it committed
   * later has the bus deliver them as stored (`EventBus.adopt`), not published again.
   */
  joined?: (createdAt: number) => void;
}

/** `RunLedger.createClaimed`'s claim: the event after run.started, and the sender's insert by run id. */
export interface ClaimedCreate {
  next: { type: string; payload: Record<string, unknown> };
  alongside?: (runId: string) => ClaimAlongside | undefined;
  /**
   * Other domains' inserts by run id, written last in the same statement whatever else it writes
   * (p-pgstart2: the run's prompt message and its search row); each told `wrote` once it answered.
   */
  trailing?: (runId: string) => readonly TrailingInsert[] | undefined;
  /**
   * The session events that follow the start (p-pgstart4: queue.changed, state.changed,
   * queue.changed, run.started, its prompt's message.created and message.completed), by the run
   * as inserted, asked after `trailing`: joined last to the statement when it goes alone and the
   * bus can (`EventBus.joinAll`, the session's held `session.created` first); the answer's
   * `announced` says they were, else the caller publishes them.
   */
  announce?: (run: ClaimedRow) => readonly { type: string; payload: Record<string, unknown> }[] | undefined;
  /**
   * Told once the statement is sent, before its answer, when `announce`'s events went in it (it goes
   * alone): the run as its values make it (p-pgoverlap: the run is prepared during the round trip,
   * ../agent/run-early.ts `launchEarly`). The answer (or the failure) is createClaimed's as ever.
   */
  sent?: (run: AgentRun) => void;
}

/** What `ClaimedCreate.announce` reads of the run it builds the events of. */
export type ClaimedRow = Pick<
  AgentRun,
  'id' | 'session_id' | 'parent_run_id' | 'family_session_id' | 'agent' | 'model' | 'origin' | 'prompt'
>;
