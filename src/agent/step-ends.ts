/**
 * What a step's end learnt with the writes it makes anyway (issue 18 item 6, issue 17 item 3): the
 * session row as its usage UPDATE left it (mode, workflow phase) and the run row as its UPDATE
 * left it (the cancel flag another process or node sets), both `RETURNING *`. The preparation of
 * the step right after takes them instead of reading the two rows again (./run-stream.ts); any
 * other step (one whose end was not waited for, the first of a stream started after a length cut,
 * a step without usage for the session) reads as before. A write of this process to the session
 * after the step's end (an HTTP update, a compaction) moves the row's read-scope version
 * (../store/read-scope.ts), and the row is read again. Everything committed before the step's end
 * (a tool's mode change, another process's or node's update or cancel) is in those rows; what
 * another node commits after it is seen by the next step's end or by the run's cancel poll
 * (run-control.ts), as it was by a read made a moment earlier.
 * @module
 */
import type { SessionStart } from '../permissions/tool-policy';
import { sessionRowVersion } from '../sessions/session-row-version';
import type { Session } from '../sessions/types';
import type { RunContext, RunTurn } from './run-types';
import type { StartAnswer } from './start-answer';

/** The session's part of the funnel context (`funnelContext` reads it from the row otherwise). */
export interface SessionFunnel {
  mode: string;
  phase: string | undefined;
}

interface StepEnd {
  /** `t.stepsClosed` once the step was closed: the number of the step it may prepare. */
  closed: number;
  session: SessionFunnel | undefined;
  /** The session row's read-scope version once the step's writes ended. */
  version: number;
  cancelRequested: boolean;
}
const stepEnds = new WeakMap<RunTurn, StepEnd>();

/**
 * The session row's read-scope version now: it moves whenever this process writes the row, so a
 * copy taken at one version is as fresh as a read while the version stays.
 */
export function sessionVersion(sessionId: string): number {
  return sessionRowVersion(sessionId);
}

/** At a step's end (`t.stepsClosed` just counted it): the rows its UPDATEs answered. */
export function recordStepEnd(
  t: RunTurn,
  sessionId: string,
  session: Session | undefined,
  run: { cancel_requested: boolean } | undefined,
): void {
  if (!run) {
    stepEnds.delete(t);
    return;
  }
  const phase = session?.metadata.workflow_phase;
  stepEnds.set(t, {
    closed: t.stepsClosed,
    session: session && { mode: session.mode, phase: typeof phase === 'string' ? phase : undefined },
    version: sessionVersion(sessionId),
    cancelRequested: run.cancel_requested,
  });
}

/**
 * The step end's transaction has ended: on PostgreSQL the session row's version moves again at
 * its COMMIT, so the copy is as of now.
 */
export function stampStepEnd(t: RunTurn, sessionId: string): void {
  const end = stepEnds.get(t);
  if (end?.closed === t.stepsClosed) end.version = sessionVersion(sessionId);
}

/**
 * What the preparation of `step` may take from the step before instead of reading: its cancel
 * flag, and its session copy when this process has not written the row since. Undefined: read.
 */
export function stepEndFor(
  t: RunTurn,
  sessionId: string,
  step: number,
): { cancelRequested: boolean; session: SessionFunnel | undefined } | undefined {
  const end = stepEnds.get(t);
  if (!end || end.closed !== step || t.stepsClosed !== step) return undefined;
  const fresh = end.session && sessionVersion(sessionId) === end.version;
  return { cancelRequested: end.cancelRequested, session: fresh ? end.session : undefined };
}

/**
 * The session's mode and phase the run's preparation (`prepareRun`'s funnel) read, for its first
 * step: taken once, when this process has not written the row since. Between the two come only
 * the prompt assembly and the start-up ledger rows (a run with MCP servers, which may wait up to
 * 10 s for them to connect, reads again).
 */
const runStarts = new WeakMap<object, { session: SessionFunnel; version: number }>();

export function rememberRunStart(run: object, session: SessionFunnel, version: number): void {
  runStarts.set(run, { session, version });
}

/**
 * A run launched before its start's answer (p-pgoverlap): the session row its preparation had in
 * hand is the one that statement wrote, whose answer moved the row's version; nothing else can
 * have written the new session meanwhile. Its remembered start holds at the version now.
 */
export function restampRunStart(run: object, sessionId: string): void {
  const start = runStarts.get(run);
  if (start) start.version = sessionVersion(sessionId);
}

export function runStartFor(run: object, sessionId: string): SessionFunnel | undefined {
  const start = runStarts.get(run);
  runStarts.delete(run);
  return start && sessionVersion(sessionId) === start.version ? start.session : undefined;
}

const INSERTED: SessionStart = { inserted: true };

/**
 * What the run's start knows of its session for its preparation and first step: its row went in
 * with the run's own start statement (`x.prompted`, p-pgstart2: a new compat session's lone start
 * on PostgreSQL), so the policy providers and prompt sections answer without a read of what
 * references the session (an operating pack's row, p-packstart). Later steps read as before: a
 * pack activated once the run started applies from the next step on.
 */
export function sessionStartOf(c: RunContext): SessionStart | undefined {
  return c.x.prompted ? INSERTED : undefined;
}

/**
 * The gate of the first model request of a run prepared during its start's round trip
 * (p-pgoverlap): `opens` answers true once the start answered ok and the run goes on; false when
 * the start failed (nothing of the run written, no model asked; its outcome is dropped:
 * ./run-control.ts `launchRun`) or a stop asked in the window aborted it. That stop ran in the
 * answer's `settle` (./start-answer.ts), before the answer's promise resolved: the check here, in
 * the answer's continuation, sees it whatever order the continuations run in. The step driver
 * (./step-driver.ts `opens`) sends the first model request before it answered (p-pgmodel: unless
 * `shut` already) and reads the model's stream only once it opened, aborting the request when it
 * stays shut; with `SVC_STEP_DRIVER=sdk` `streamText` is called only once it opened. Asked again
 * (`executeRun` after the stream: a shut gate ends the run `stopped`) it answers the same. Made by
 * `executeRun` once the run's preparation ended and handed to its stream (`streamStarter`): from
 * then on the answer restamps the run's remembered start (`restampRunStart`) when it comes, so the
 * first step takes that row whether it is prepared before the answer or after.
 */
export function startGate(c: RunContext, start: StartAnswer): StartGate {
  start.whenAnswered((ok) => {
    if (ok) restampRunStart(c, c.sessionId);
  });
  let opened: Promise<boolean> | undefined;
  const opens = async () => (await start.answer) && !c.signal.aborted;
  return {
    opens: () => (opened ??= opens()),
    shut: () => start.ok === false || c.signal.aborted,
    open: () => start.ok === true && !c.signal.aborted,
  };
}

/** A run's first model request's gate (`startGate`). */
export interface StartGate {
  /** True once the run's model stream may be read (its writes made), the same answer each call. */
  opens(): Promise<boolean>;
  /** The start failed already, or the run stopped: no model request is sent now. */
  shut(): boolean;
  /** The start answered ok already and the run goes on: the model request as any other. */
  open(): boolean;
}

/**
 * Resolves once `count` steps of the run are closed, or after STEP_CLOSE_WAIT_MS (a stream that
 * never delivers the step's end must not hang the run; the step is then judged without it).
 */
export function stepsClosed(t: RunTurn, count: number): Promise<void> {
  if (t.stepsClosed >= count) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      if (t.stepsClosed < count && !timedOut) return;
      t.stepClosedWaiters.delete(done);
      clearTimeout(timer);
      resolve();
    };
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      done();
    }, STEP_CLOSE_WAIT_MS);
    timer.unref();
    t.stepClosedWaiters.add(done);
  });
}
const STEP_CLOSE_WAIT_MS = 5_000;
