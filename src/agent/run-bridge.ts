/**
 * The tool bridge of a run (./tool-bridge.ts) wired to its step: the step recorder that holds the
 * call's message (PostgreSQL, p-pgride), the loop detector that stops a run repeating itself, and
 * which calls may run ahead of their start's statement (p-readonly).
 * @module
 */
import { runFailure } from './failure';
import { takeCall } from './held-calls';
import { createLoopDetector } from './loop-detector';
import type { RunContext, RunTurn } from './run-types';
import type { CallStart, StepRecorder } from './step-recorder';
import { createToolBridge } from './tool-bridge';
import type { AgentToolbox } from './toolbox';

/** Whether a step's assistant message that opens with a call waits for the call's start (PostgreSQL). */
export const holdsCall = (app: RunContext['app']) =>
  app.runs.followingEvents !== undefined && app.sessions.appendAnnounced !== undefined;

/** p-heldstep's switch: `SVC_STEP_ONCE=0` writes a held start or text as it comes, as before. */
export const stepOnce = () => process.env.SVC_STEP_ONCE !== '0';

/** The tool bridge of the run, with the loop detector that stops a run repeating itself. */
export function bridgeFor(c: RunContext, t: RunTurn) {
  const { app, run, x, sessionId, signal } = c;
  const loop = createLoopDetector(t.config.options.loop_detection.max_repeats);
  return createToolBridge({
    app,
    toolbox: x.toolbox,
    sessionId,
    runId: run.id,
    agent: c.kind.id,
    signal,
    permission: { yolo: run.options.yolo, unattended: run.options.unattended },
    isActive: (name) => t.active.has(name),
    takeCall: () => takeCall(app, c.calls),
    // On PostgreSQL a message that opens with a call waits for the call's start (p-pgride); a
    // step whose calls all change nothing runs them while that statement is in flight (p-readonly).
    ...(holdsCall(app)
      ? {
          startCall: (start) => t.recorder?.startCall(start) ?? Promise.resolve(undefined),
          runsAhead: (name) => allReadsOnly(x.toolbox, t.recorder, name),
          deferStart: (name, start) => deferStart(x.toolbox, t.recorder, name, start),
        }
      : {}),
    async beforeCall(call) {
      app.store.transactions.stepBatch();
      t.called.add(call.tool);
      // One write (the message row); its event is appended after, outside any transaction.
      await app.store.transactions.togetherWith(async () => t.recorder?.toolCall(call));
    },
    async recordResult(call, finished) {
      const recorder = t.recorder;
      // A call that stops the run keeps today's order: its event, `loop.detected`, and the step's
      // end closing the call as interrupted (the stream records no result once the run aborts).
      if (!recorder || loop.wouldStop(call.tool, call.input, call.output)) return false;
      return await app.store.transactions.togetherWith(async () => recorder.finishedResult(call, finished));
    },
    async onResult(call) {
      const verdict = loop.record(call.tool, call.input, call.output);
      if (!verdict || signal.aborted) return;
      x.stop.status ??= 'failed';
      x.stop.reason ??= `loop detected: ${verdict.tool} was called ${verdict.repeats} times in a row with the same input and the same result; the run was stopped`;
      x.stop.failure ??= runFailure('loop_detected', {
        model: c.model?.selector,
        message: x.stop.reason,
        tool: verdict.tool,
        repeats: verdict.repeats,
      });
      app.bus.publish(sessionId, 'loop.detected', {
        session_id: sessionId,
        run_id: run.id,
        tool: verdict.tool,
        repeats: verdict.repeats,
      });
      await c.ledger('loop.detected', { tool: verdict.tool, repeats: verdict.repeats });
      x.controller.abort(new Error('loop detected'));
    },
  });
}

/**
 * Tools whose work waits for their start's statement (`AgentCallContext.ahead`: `view`'s read mark):
 * never held for the step end, which they would wait for (p-heldstep, docs/performance-log.md Left).
 */
const WAITS_FOR_START: ReadonlySet<string> = new Set(['view']);

/**
 * The call's start held for its step end (p-heldstep, ./step-recorder.ts `deferStart`): a
 * `readsOnly` call in a step whose calls all are (several held one after another, p-heldmulti), on
 * a store whose step end is one statement; undefined: not held. `SVC_STEP_ONCE=0` turns it off
 * (the start written as before, run ahead of it).
 */
function deferStart(
  toolbox: AgentToolbox,
  recorder: StepRecorder | undefined,
  name: string,
  start: () => CallStart,
): { write(): Promise<void> } | undefined {
  if (!stepOnce() || !recorder || WAITS_FOR_START.has(name)) return undefined;
  if (!allReadsOnly(toolbox, recorder, name) || !recorder.deferStart(start())) return undefined;
  return { write: () => recorder.writeHeld() };
}

/**
 * Whether `name` and every call the step recorded so far are `readsOnly` tools. svc's step driver
 * runs a step's calls once the model's answer is complete, so that is every call of the step; with
 * `SVC_STEP_DRIVER=sdk` a later call may not be known yet, and a mutating one then waits for its own
 * start's statement anyway (the calls run one at a time, each after the one before has finished).
 */
function allReadsOnly(toolbox: AgentToolbox, recorder: StepRecorder | undefined, name: string): boolean {
  if (!recorder || toolbox.get(name)?.readsOnly !== true) return false;
  for (const call of recorder.toolCalls) if (toolbox.get(call.tool)?.readsOnly !== true) return false;
  return true;
}
