/**
 * A tool step's end overlapping the next model request (PostgreSQL, issue 18 item 6, p-pgpipe).
 * The step end is one statement there (./step-close.ts); the step driver sends the next model
 * request while it is in flight (./step-driver.ts `overlapsStepEnd`) and hands on none of the next
 * step's parts before it answered, so the next step's writes, the run's finish, a cancel's cut
 * step and the handed-over path all come after it, as before. What the next step's preparation
 * (./run-stream.ts) took from the step end's answer (./step-ends.ts) it takes here instead:
 *
 * - the session's mode and workflow phase: the session row as read right before the step end was
 *   sent (`takeAhead`; the row this process keeps, ../sessions/pg-kept-sessions.ts, so no read in
 *   the steady step). The step end writes only the row's usage, never its mode or phase; a write
 *   of this process to the row meanwhile moves its version and the preparation waits for the step
 *   end and takes its row, as before. Another node's change, committed before the step end but
 *   not yet notified here, is in the row the step end answers: the step's settings are checked
 *   against it (`aheadHeld`), and the request is aborted and the step prepared again if they differ.
 * - the run's cancel flag: checked when the step end answers (`aheadEnded`, its `RETURNING`); a
 *   cancel aborts the run, so the model request in flight is aborted and none of its parts is
 *   recorded (the driver's gate), where before the request was not sent.
 *
 * A compaction (asked for, or due by the context) waits for the step end, as everything that
 * reads or writes what it wrote. A failed step end aborts the request in flight and fails the run
 * as before (`heldCloseFailed`, the cut step's end).
 * @module
 */
import type { RunContext, RunTurn } from './run-types';
import { type SessionFunnel, sessionVersion, stepEndFor } from './step-ends';

interface Ahead {
  /** The session row's version when it was read: the copy holds while it has not moved. */
  version: number;
  session: Promise<SessionFunnel | undefined>;
}
const aheads = new WeakMap<RunTurn, Ahead>();

/** Before the step end is sent: the session's mode and phase for the next step's preparation. */
export function takeAhead(c: RunContext, t: RunTurn): void {
  const version = sessionVersion(c.sessionId);
  const session = c.app.sessions.get(c.sessionId).then(
    (row): SessionFunnel | undefined => {
      if (!row) return undefined;
      const phase = row.metadata.workflow_phase;
      return { mode: row.mode, phase: typeof phase === 'string' ? phase : undefined };
    },
    () => undefined,
  );
  aheads.set(t, { version, session });
}

/**
 * The session copy `takeAhead` took for this preparation, while this process has not written the
 * row since (undefined: the preparation waits for the step end and takes its row).
 */
export function aheadSession(t: RunTurn, sessionId: string): Promise<SessionFunnel | undefined> | undefined {
  const ahead = aheads.get(t);
  aheads.delete(t);
  return ahead && ahead.version === sessionVersion(sessionId) ? ahead.session : undefined;
}

/**
 * Once the step end answered: whether the session's mode and phase the step's tools were chosen
 * by (`taken`) are those of the row it answered (another node may have changed them since this
 * node kept its copy); false: the step is prepared and asked again.
 */
export function aheadHeld(
  t: RunTurn,
  sessionId: string,
  step: number,
  taken: SessionFunnel | undefined,
): boolean {
  const end = stepEndFor(t, sessionId, step)?.session;
  if (!end) return true;
  return taken !== undefined && end.mode === taken.mode && end.phase === taken.phase;
}

/** The context of the step whose end is in flight (its usage is known before it is written). */
export function lastContextOf(t: RunTurn): number {
  return t.stepUsage ? t.stepUsage.input_tokens + t.stepUsage.output_tokens : t.lastContext;
}

/** The run stopped as cancelled through the ledger (the flag another process or node set). */
export function cancelRequested(c: RunContext): void {
  c.x.stop.status ??= 'cancelled';
  c.x.stop.reason ??= 'cancelled (requested through the run ledger)';
  c.x.controller.abort(new Error('cancelled'));
}

/** Once the overlapped step end answered: its cancel flag, before any part of the next step. */
export function aheadEnded(c: RunContext, t: RunTurn): Promise<void> | undefined {
  const end = stepEndFor(t, c.sessionId, t.stepsClosed);
  if (end) {
    if (end.cancelRequested) cancelRequested(c);
    return undefined;
  }
  return c.app.runs.cancelRequested(c.run.id).then((requested) => {
    if (requested) cancelRequested(c);
  });
}
