/**
 * A step's end (./run-stream.ts records the stream's parts; this closes a step): the step's
 * messages finished, the session's usage, the run's row with its `step.finished`, the
 * completions and the context gauge (`context.usage`), and what the next step's preparation may
 * take from the rows those writes answered (./step-ends.ts). On PostgreSQL the writes are one
 * statement (./step-close.ts), the completions and `context.usage` appended in it where the bus
 * keeps their order (src/runs/pg-run-announced.ts), else published after it.
 * @module
 */
import { flushCalls, takeCall } from './held-calls';
import type { HeldStepEnd, RunContext, RunLastEnds, RunTurn } from './run-types';
import { startStepClose, stepEndJoined } from './step-close';
import { StepEndSend } from './step-end-send';
import { recordStepEnd } from './step-ends';
import type { StepRecorder } from './step-recorder';
import { storeLost } from './store-lost';

/** Close the current step: its message, usage, cost, the context gauge and the ledger. */
export async function endStep(c: RunContext, t: RunTurn, interrupted: boolean) {
  const { app, run, sessionId, usage } = c;
  const recorder = t.recorder;
  if (!recorder) return;
  // A cut step's last read's deltas published now, before anything of its end (p-pgtail).
  if (interrupted) recorder.publishTail();
  // An assistant message held for its first tool's start that did not start (p-pgride), then a
  // `phase` no message of the step carried (./held-event.ts), before the step's end; not a start
  // held with its result for this statement (p-heldstep: the message, the `phase` go in it).
  const opens = !interrupted && stepEndJoined(app) && recorder.opensAtEnd();
  const releasing = opens ? undefined : recorder.release();
  if (releasing)
    await releasing.catch((error: unknown) => app.log.warn('streamed message write failed', { error }));
  const flushing = opens ? undefined : c.held.flush();
  if (flushing) await flushing;
  // The held result's write a stop started (`releaseOnStop`): failed, the result is held again
  // and the cut step writes it here (a second failure fails the run, as the step's own would).
  if (t.released) await t.released;
  // A result held for the step end's statement (p-pgtoolend) goes alone first where the step end
  // is not that one statement, or the step was cut (its dangling calls' results follow it).
  if (interrupted || !stepEndJoined(app)) await recorder.releaseTool();
  if (interrupted) await recorder.closeDanglingCalls();
  const stepUsage = t.stepUsage;
  const stepCost = stepUsage
    ? (stepUsage.input_tokens * (t.resolved.info.cost_per_1m_in ?? 0) +
        stepUsage.output_tokens * (t.resolved.info.cost_per_1m_out ?? 0)) /
      1e6
    : 0;
  // A stop that came meanwhile (`releaseOnStop`): its message is the step's; failed, the result
  // is held again and goes in this step end's statement.
  if (t.released) await t.released;
  // The messages finished and the session's usage (one statement on PostgreSQL, ./step-close.ts).
  const started = startStepClose(app, recorder, sessionId, stepUsage, stepCost);
  const closing = started instanceof Promise ? await started : started;
  if (stepUsage) {
    usage.input_tokens += stepUsage.input_tokens;
    usage.output_tokens += stepUsage.output_tokens;
    usage.reasoning_tokens += stepUsage.reasoning_tokens ?? 0;
    usage.cached_input_tokens += stepUsage.cached_input_tokens ?? 0;
    c.cost += stepCost;
  }
  const finished = {
    step: c.steps,
    finish_reason: t.finishReason ?? null,
    tool_calls: recorder.toolCalls.length,
    usage: stepUsage,
    cost: stepCost,
  };
  // The run's row with its `step.finished` where the ledger can (one statement on PostgreSQL), sent
  // with the messages' and the session's writes, unawaited: one round trip (src/store/postgres/client.ts);
  // on PostgreSQL those writes go first in the run's own statement (`before`, ./step-close.ts).
  const patch = { steps: c.steps, usage, cost: c.cost };
  const lastContext = stepUsage ? stepUsage.input_tokens + stepUsage.output_tokens : undefined;
  const contextUsage =
    lastContext === undefined
      ? undefined
      : {
          type: 'context.usage',
          payload: {
            session_id: sessionId,
            run_id: run.id,
            input_tokens: lastContext,
            context_window: t.window,
            ratio: t.window > 0 ? round(lastContext / t.window) : 0,
          },
        };
  // The session row comes back with its UPDATE: the next step's funnel takes its mode (./step-ends.ts).
  // On PostgreSQL the step's completions and `context.usage` go last in that statement where the
  // bus keeps their order (`announced`, src/runs/pg-run-announced.ts); else published after it.
  // The step's model call rides in that statement (./held-calls.ts); elsewhere it goes alone first.
  const joined = closing.before !== undefined && app.runs.updateAndAppendAfter !== undefined;
  const call = joined ? takeCall(app, c.calls) : undefined;
  if (!joined) await flushCalls(app, c.calls);
  const before = closing.before;
  // Sent (the parts apart where it carried a held start and failed), or kept for a finish's retry.
  const step = new StepEndSend(
    { app, runId: run.id, sessionId, recorder, patch, finished, stepUsage, stepCost, contextUsage, call },
    closing,
  );
  // The run's last step end, held for its finish's statement (./last-step-end.ts, p-pglast).
  const lastEnds = interrupted ? undefined : lastEndHeld(c, t);
  // Elsewhere (SQLite) the run's last step holds its run row's totals while the transaction lasts:
  // its finish's UPDATE right after writes them with the status (no step reads the cancel flag),
  // else they are written before the COMMIT (src/runs/held-run-totals.ts).
  const holdTotals =
    !interrupted && !app.runs.updateAndAppend && lastStepOfRun(c, t) ? app.runs.holdTotals : undefined;
  if (before && lastEnds) {
    holdForFinish(c, t, lastEnds, recorder, lastContext, {
      first: { before, event: { type: 'step.finished', payload: finished }, riding: call?.insert },
      events: step.events(),
      closed: (announced) => step.closed(announced),
      send: (keep = false) => (step.kept ? step.again(keep) : step.send(true, true, call, keep)),
      stored: () => step.stored(),
      after: () => void call?.after(),
    });
    return;
  }
  const [session, appended, announced] = joined
    ? await step
        .send(recorder.toolCalls.length === 0)
        .then((joined) => [joined.before, joined, joined.announced] as const)
    : app.runs.updateAndAppend
      ? ([
          ...(await Promise.all([
            closing.written,
            app.runs.updateAndAppend(run.id, patch, 'step.finished', finished),
          ])),
          false,
        ] as const)
      : ([await closing.written, undefined, false] as const);
  step.closing.completed(announced);
  if (contextUsage && !announced) app.bus.publish(sessionId, contextUsage.type, contextUsage.payload);
  const runRow =
    appended?.run ??
    (holdTotals
      ? void (await holdTotals(run.id, patch))
      : await (app.runs.updateCancel?.(run.id, patch) ?? app.runs.update(run.id, patch)));
  // SQLite: appended at the call, nothing to await (p-syncrepo).
  const appending = appended ? undefined : c.ledger('step.finished', finished);
  if (appending) await appending;
  ended(c, t, recorder, lastContext);
  recordStepEnd(t, sessionId, session, runRow);
  for (const wake of [...t.stepClosedWaiters]) wake();
}

/**
 * The run's last step end held for its finish's statement (./last-step-end.ts, p-pglast), and
 * the step ended here: `send` writes it alone (a stop, a run event, a failed merged finish).
 */
function holdForFinish(
  c: RunContext,
  t: RunTurn,
  lastEnds: RunLastEnds,
  recorder: StepRecorder,
  lastContext: number | undefined,
  end: {
    first: HeldStepEnd['first'];
    events: HeldStepEnd['events'];
    closed(announced: boolean): void;
    send(keep?: boolean): Promise<{ announced: boolean }>;
    /** A kept send alone found stored: its effects (false: none kept). */
    stored(): boolean;
    after(): void;
  },
): void {
  const result = c.resultMessageId;
  lastEnds.hold(c.run.id, {
    first: end.first,
    events: end.events,
    written(_result, announced) {
      // A send alone kept after a lost store, found stored (./finish-retry.ts `stepEndStored`).
      if (end.stored()) return;
      end.closed(announced);
      end.after();
    },
    alone: async (keep = false) => {
      // Its events keep their place even behind a busy bus (a stopper's `cancelling` follows).
      const sent = await end.send(keep).catch((error: unknown) => {
        // Failed: the step is no result of the run's, as when its step end failed in place; kept
        // for the finish's retry (the store lost), still its result.
        if (!(keep && storeLost(error))) c.resultMessageId = result;
        throw error;
      });
      end.closed(sent.announced);
    },
  });
  ended(c, t, recorder, lastContext);
  recordStepEnd(t, c.sessionId, undefined, undefined);
  for (const wake of [...t.stepClosedWaiters]) wake();
}

/** The step closed, its rows written or held for the finish: what the run keeps of it. */
function ended(c: RunContext, t: RunTurn, recorder: StepRecorder, lastContext: number | undefined): void {
  if (recorder.text.trim()) c.resultMessageId = recorder.assistantId ?? c.resultMessageId;
  if (lastContext !== undefined) t.lastContext = lastContext;
  t.lastToolCalls = recorder.toolCalls.length;
  t.recorder = undefined;
  t.stepsClosed++;
}

/**
 * Where this step's end waits for the run's finish and goes in its statement (p-pglast), the held
 * ends it goes to: the run's finish can carry it (`RunExecution.lastEnds`: PostgreSQL, not a
 * durable workflow), the step has no call (the loop ends), it was not cut by the output limit (a
 * recovery step may follow), the stream did not fail and the run was not stopped.
 */
function lastEndHeld(c: RunContext, t: RunTurn): RunLastEnds | undefined {
  return c.app.runs.updateAndAppend !== undefined && lastStepOfRun(c, t) ? c.x.lastEnds : undefined;
}

/**
 * The run's finish follows this step's end here and writes the run's totals: the step has no call
 * (the loop ends), it was not cut by the output limit (a recovery step may follow), the stream did
 * not fail, the run was not stopped, and the finish is this node's right after the body
 * (`RunExecution.lastEnds` set: not a durable workflow's). A step that follows all the same reads
 * the run's cancel flag in its preparation, as after any end that recorded no run row, and its own
 * end writes the totals (they are the run's, not the step's).
 */
function lastStepOfRun(c: RunContext, t: RunTurn): boolean {
  return (
    c.x.lastEnds !== undefined &&
    t.recorder?.toolCalls.length === 0 &&
    t.finishReason !== 'length' &&
    t.streamError === undefined &&
    !c.signal.aborted
  );
}

/**
 * The run is stopped (a cancel, the ledger's cancel flag, a shut-down) before its step's end: a
 * result held for the step end's statement (p-pgtoolend) is written now, alone. Its message's
 * INSERT joins its session events (`tool.finished`, `message.created`) to the bus's queue in this
 * call (src/sessions/pg-message-store.ts `append`, no await before the join), so they come before
 * the stopper's `state.changed`, as on SQLite, where they were published at the tool's end. Where
 * the bus cannot join them (it is busy), they are reserved in its queue in this call all the same
 * (`ordered`, `EventBus.reserve`) and appended there once the INSERT answered. The step's end
 * awaits the write (`t.released`). A failure is logged and the result is held again
 * (`releaseTool`): the cut step writes it (its events then after the stop's `state.changed`).
 */
export function releaseOnStop(c: RunContext, t: RunTurn): void {
  // The run's last step end held for its finish (./last-step-end.ts): sent now, its events
  // before the stopper's `cancelling`, as on SQLite where it was written before the stop.
  c.x.lastEnds?.send(c.run.id, c.app.log);
  const releasing = t.recorder?.releaseTool(true);
  if (!releasing) return;
  t.released = releasing.then(
    () => undefined,
    (error: unknown) => c.app.log.warn('tool result write failed', { run_id: c.run.id, error }),
  );
}

const round = (n: number) => Math.round(n * 10_000) / 10_000;
