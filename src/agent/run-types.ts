/**
 * The types of one agent run's execution, shared by the run loop's phases (./run-loop.ts) and
 * its stream (./run-stream.ts).
 * @module
 */
import type { ModelMessage } from 'ai';
import type { Config } from '../config/schema';
import type { Logger } from '../log';
import type { ToolPolicy } from '../permissions/tool-policy';
import type { ResolvedModel } from '../providers/types';
import type { AgentRun, FinalRunStatus, RunUsage, SessionAnnounce } from '../runs/run-ledger';
import type { FinishFirst } from '../runs/types';
import type { Message, Session, Usage } from '../sessions/session-store';
import type { Tx } from '../store/transactions';
import type { HeldCalls } from '../telemetry/cost-ledger';
import type { AgentKind } from './agent-kinds';
import type { AgentHost } from './deps';
import type { Failure } from './failure';
import type { HeldEvent, HeldWrites } from './held-event';
import type { StartAnswer } from './start-answer';
import type { StepRecorder } from './step-recorder';
import type { ExposureLevel } from './tool-exposure';
import type { AgentToolbox } from './toolbox';

/** Who stopped the run, set by whoever aborts its controller first. */
export interface StopState {
  status?: FinalRunStatus;
  reason?: string;
  /** The classified failure when the stopper failed the run (a detected loop). */
  failure?: Failure;
  /** Stopped at a clean stop for another node to adopt (issue 19): the run is not finished here. */
  handedOver?: boolean;
  /**
   * The preparation's writes the run still held when it was stopped, being written (PostgreSQL,
   * ./held-writes.ts): the stopper awaits it before it writes to the run (the compat request's
   * `openai_compat.response` after a disconnect), so they keep their place in the run's events.
   */
  written?: Promise<void>;
  /**
   * What the current step holds for its end, written now (./end-step.ts `releaseOnStop`): a
   * stopper that publishes the session's state calls it first, so the held result's session
   * events take their places in the bus's queue before that `state.changed`.
   */
  release?: () => void;
}

export interface RunExecution {
  app: AgentHost;
  /** The tools, through the agent's port (tools/core/agent-toolbox.ts implements it). */
  toolbox: AgentToolbox;
  run: AgentRun;
  kind: AgentKind;
  controller: AbortController;
  stop: StopState;
  subagent: boolean;
  /** Compaction with the service's state transitions and events around it. */
  compact(options: {
    keepFromMessageId?: string;
    reason?: 'auto' | 'manual' | 'health_followon';
  }): Promise<void>;
  /**
   * The reason once after a compaction was asked for during this run (summarize_session, a
   * health follow-on), else undefined.
   */
  takeCompactionRequest(): 'manual' | 'health_followon' | undefined;
  /**
   * The run is resumed on this node after the node running it died (./run-resume.ts): its prompt
   * is already stored, its finished steps are not asked again, its unfinished calls not re-run.
   */
  resume?: boolean;
  /** The model its sender resolved for the run (SendInput.resolved), bound to the run if it still applies. */
  handed?: ResolvedModel;
  /**
   * The token of the transaction body its sender launched it in (`SendInput.transaction`): its
   * start-up step batch is asked with it, so that body's transaction becomes that batch.
   */
  transaction?: Tx;
  /**
   * The run's finish can carry its last step end in its statement (./last-step-end.ts, p-pglast):
   * the finish is written by this node right after the run's body (not a durable workflow's). The
   * agent service's held ends (`AgentCore.lastEnds`), where the run holds it; undefined: never held.
   */
  lastEnds?: RunLastEnds;
  /** Its `phase` (prompt) event was written with its claim (./run-control.ts `startRun`): not appended again. */
  phased?: boolean;
  /**
   * Told once the run's prompt message is written and its events published, or the run ended
   * before (the compat start waits for it before its COMMIT, so those events are held with the
   * start's: p-pgstart).
   */
  opened?: () => void;
  /**
   * Its prompt message, written with its run's INSERT (p-pgstart2, ./prompt-queue.ts `sendNow`):
   * not appended again; `history`, the session's messages as that statement left them; `session`,
   * its row as that statement inserted it (not read again).
   */
  prompted?: {
    message: Message;
    history: { messages: Message[]; version: number };
    session: Session;
    /** Its events (message.created, message.completed) went in that statement too (p-pgstart4): not published. */
    announced?: boolean;
  };
  /**
   * Launched while its start statement was on its way (p-pgoverlap, ./run-control.ts
   * `launchEarly`): its preparation runs during the round trip; its model request, its ledger's
   * and held writes wait for the answer, and a failed start ends it with nothing written.
   */
  answered?: StartAnswer;
}

export interface RunOutcome {
  status: FinalRunStatus;
  reason: string | null;
  error: string | null;
  /** What failed, with the provider, the model and the next step (./failure.ts); null unless failed. */
  failure: Failure | null;
  steps: number;
  usage: RunUsage;
  cost: number;
  model: string | null;
  result_message_id: string | null;
}

/** One run's running totals, shared by its phases. */
export interface RunContext {
  readonly x: RunExecution;
  readonly app: AgentHost;
  readonly run: AgentRun;
  readonly kind: AgentKind;
  readonly signal: AbortSignal;
  readonly sessionId: string;
  readonly usage: RunUsage;
  cost: number;
  steps: number;
  model: ResolvedModel | undefined;
  resultMessageId: string | null;
  /**
   * Append to the run's ledger (what `held` holds first); a failed append is logged, never thrown.
   * Undefined: appended (or failed) at the call, nothing to wait for (SQLite, p-syncrepo).
   */
  ledger(type: string, payload?: Record<string, unknown>): Promise<void> | undefined;
  /** The step's `phase` held for its assistant message's statement (./held-event.ts). */
  readonly held: HeldEvent;
  /** PostgreSQL: the step's `model_calls` row held for its step end's statement (./held-calls.ts). */
  readonly calls?: HeldCalls;
  /**
   * PostgreSQL: the preparation's writes, still held after it (./held-writes.ts): `ledger`'s next
   * event is appended in their statement, and the run writes them at its end if none came. While
   * they are held, the first step's `phase` goes with them (not in its assistant message's INSERT).
   */
  preparation?: HeldWrites;
}

/** What the run prepared before its first step, and the state of its steps as they stream. */
export interface RunTurn {
  readonly session: Session;
  readonly resolved: ResolvedModel;
  readonly config: Config;
  readonly window: number;
  readonly threshold: number;
  readonly autoCompact: boolean;
  readonly policies: ToolPolicy[];
  readonly level: ExposureLevel;
  readonly defer: boolean;
  readonly system: string;
  readonly maxSteps: number;
  /** Tools called in this run: sent in full from the next step. */
  readonly called: Set<string>;
  /** The effective tool names of the current step. */
  active: ReadonlySet<string>;
  /**
   * After a compaction inside a stream, every later step sends the summary instead of the
   * messages before `cut` (the SDK keeps accumulating its own list).
   */
  compacted: { prefix: ModelMessage[]; cut: number } | undefined;
  lastContext: number;
  /** Steps closed in this run (their usage and lastContext recorded), and who waits for the next. */
  stepsClosed: number;
  stepClosedWaiters: Set<() => void>;
  /** Auto-compactions that failed in this run: after MAX_FAILED_COMPACTIONS it stops trying. */
  failedCompactions: number;
  recorder: StepRecorder | undefined;
  /**
   * The deltas of the step that wait for its assistant message (./run-stream.ts `deltaWaits`): the
   * stream's next part that is no delta waits for them.
   */
  deltas?: Promise<void>;
  /** A waiting delta's failure, thrown at the stream's next part (./run-stream.ts `recordPart`). */
  deltaFailed?: { error: unknown };
  /** The held result's write a stop started (`StopState.release`): the step's end awaits it. */
  released?: Promise<void>;
  stepUsage: Usage | null;
  finishReason: string | undefined;
  streamError: unknown;
  lastToolCalls: number;
}

export type { HeldWrites };

/** The held step end: what the finish writes first, and its effects once written. */
export interface HeldStepEnd {
  /** `FinishFirst` but its `written`. */
  readonly first: Omit<FinishFirst, 'written'>;
  /** Its session events, before the finish's own in the finish's statement. */
  readonly events: SessionAnnounce['events'];
  /** The finish's statement wrote it: the step's effects (`announced`: its events were in it too). */
  written(result: unknown, announced: boolean): void;
  /**
   * Sends it alone, as the step end was: its session events joined or published in this call.
   * `keep` (a finish that cannot carry it, ./run-finish.ts): a store lost in that send (`storeLost`)
   * keeps it as sent, neither restored nor written in parts, for the finish's retry: `written` once
   * its `step.finished` is found stored (the send committed, its answer lost), else `alone` again.
   */
  alone(keep?: boolean): Promise<void>;
  /** Its step end failed alone: the run's failure recorded, its outcome (./run-loop.ts). */
  fail?: (error: unknown) => Promise<RunOutcome>;
}

/**
 * The agent service's held last step ends (./last-step-end.ts `LastEnds`, `AgentCore.lastEnds`), as
 * a run holds, sends and reads them (`RunExecution.lastEnds`).
 */
export interface RunLastEnds {
  /** Runs with a held step end or its send in flight (none: a run event is appended at once). */
  readonly size: number;
  hold(runId: string, end: HeldStepEnd): void;
  held(runId: string): HeldStepEnd | undefined;
  send(runId: string, log: Logger): Promise<void> | undefined;
  after(runId: string, log: Logger, append: () => Promise<void>): Promise<void>;
}
