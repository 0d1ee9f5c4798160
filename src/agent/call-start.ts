/**
 * A tool call's start (its `tool.started`, ./tool-bridge.ts): written before the call runs, with
 * the step's held assistant message where the run holds it (p-pgride), in flight while a call that
 * changes nothing runs (p-readonly), or held for the step end's statement (p-heldstep), written on
 * demand when the call asks, sends an event or ends without its result held.
 * @module
 */
import type { TrailingInsert } from '../store/preceding-write';
import type { AgentHost } from './deps';
import type { CallStart } from './step-recorder';

/** What the start of a call needs of the bridge's options. */
export interface CallStartOptions {
  sessionId: string;
  runId: string;
  signal: AbortSignal;
  /**
   * PostgreSQL: the step's model call held since the model's `finish` (./held-calls.ts), taken to
   * ride in the call's `tool.started` statement; `after()` once it answered writes it alone when it
   * did not (never after the tool has started to run).
   */
  takeCall?(): { insert: TrailingInsert; after(): Promise<void> } | undefined;
  /**
   * PostgreSQL (p-pgride): the call's start written with the step's held assistant message, in its
   * INSERT (./step-recorder.ts `startCall`): undefined, not so (the message is written already,
   * SQLite): the bridge writes the start itself; true: written; false: the message only.
   */
  startCall?(start: CallStart): Promise<boolean | undefined>;
  /**
   * PostgreSQL (p-readonly): this call may run while its `tool.started` statement is in flight (a
   * `readsOnly` tool in a step whose calls all are). Its `ask` and `event` wait for the statement;
   * its result is taken only once the statement answered, and dropped when it failed.
   */
  runsAhead?(name: string): boolean;
  /**
   * PostgreSQL (p-heldstep): the call's start held with its step's assistant message for the step
   * end's statement (a `readsOnly` call, the step's only one: ./run-bridge.ts), so nothing of the
   * step is written before its end; undefined: not held, the start is written as before. The call
   * runs at once; `write()` writes the start now (its `ask` and `event` wait for that), rejecting
   * with the statement's error.
   */
  deferStart?(name: string, start: () => CallStart): { write(): Promise<void> } | undefined;
}

/** A call's start as the call sees it (`startOf`). */
export interface StartedCall {
  /** Its reads of its own session see the row the start will store (`AgentCallContext.ahead`). */
  ahead?: Promise<void>;
  /** What its `ask` and `event` wait for: the start in flight, or written now when held. */
  wait?: () => Promise<void>;
  /** The start's write to await once the call returned (undefined: none, or written before it ran). */
  written(): Promise<void> | undefined;
  /** Before a `tool.finished` written alone: a held start written first, a failure logged. */
  beforeAlone(): Promise<void>;
}

const DONE: Promise<void> = Promise.resolve();

/**
 * The call's start: held for the step end (`deferStart`), in flight while it runs ahead
 * (`runsAhead`, `startedAhead`), or written now (awaited) as before.
 */
export async function startOf(
  app: AgentHost,
  options: CallStartOptions,
  starting: { tool_call_id: string; tool: string; title: string },
): Promise<StartedCall> {
  const aborted = options.signal.aborted;
  const deferred = aborted
    ? undefined
    : options.deferStart?.(starting.tool, () => callStart(app, options, starting));
  if (deferred) {
    // The held start written on demand (an ask, an event), once.
    let demanded: Promise<void> | undefined;
    const demand = () => {
      demanded ??= deferred.write();
      return demanded;
    };
    return {
      wait: demand,
      written: () => demanded,
      beforeAlone: () =>
        demand().catch((error: unknown) =>
          app.log.warn('run ledger append failed', { run_id: options.runId, type: 'tool.started', error }),
        ),
    };
  }
  const modelCall = options.takeCall?.();
  if (!aborted && options.runsAhead?.(starting.tool) === true) {
    const stored = startedAhead(writeStarted(app, options, starting, modelCall?.insert), modelCall);
    return { ahead: stored, wait: () => stored, written: () => stored, beforeAlone: () => DONE };
  }
  try {
    await writeStarted(app, options, starting, modelCall?.insert);
  } finally {
    await modelCall?.after();
  }
  return { written: () => undefined, beforeAlone: () => DONE };
}

/**
 * The call's start in flight while the call runs ahead of it (`runsAhead`): settles once the
 * statement and the riding model call's `after()` did, rejecting with the statement's error. Its
 * rejection is handled here too (the caller awaits it only after the call), so it is never unhandled.
 * The call's `ask` and `event` wait for it (an operator is asked only once the start is stored);
 * its result is taken once it answered: a failure throws as it did before the call (the result
 * dropped), a cancel meanwhile answers as before the call.
 */
function startedAhead(
  writing: Promise<void>,
  modelCall: { after(): Promise<void> } | undefined,
): Promise<void> {
  const started = modelCall
    ? writing.then(
        () => modelCall.after(),
        async (error: unknown) => {
          await modelCall.after();
          throw error;
        },
      )
    : writing;
  started.catch(() => {});
  return started;
}

/**
 * A call's `tool.started`: with the step's held assistant message where the run holds it
 * (`startCall`, p-pgride), else in a statement of its own after it (`ledgerAnnounced`), with the
 * step's model call riding (`riding`) either way. A failed write of the held message throws, as
 * its own write in `beforeCall` would.
 */
function writeStarted(
  app: AgentHost,
  options: CallStartOptions,
  payload: { tool_call_id: string; tool: string; title: string },
  riding: TrailingInsert | undefined,
): Promise<void> {
  const type = 'tool.started';
  const alone = (event = startEvent(app, options, payload)) =>
    app.store.transactions.togetherWith(async () =>
      ledgerAnnounced(app, options.runId, payload, options.sessionId, type, event, riding),
    );
  // SQLite: no promise more than the start's own write.
  if (!options.startCall) return alone();
  const start = callStart(app, options, payload);
  return options.startCall(riding ? { ...start, riding } : start).then((written) => {
    if (written === false) app.log.warn('run ledger append failed', { run_id: options.runId, type });
    return written === undefined ? alone(start.announce.payload) : undefined;
  });
}

/** A call's `tool.started` session event. */
function startEvent(
  app: AgentHost,
  options: Pick<CallStartOptions, 'sessionId' | 'runId'>,
  payload: { tool_call_id: string; tool: string; title: string },
): Record<string, unknown> {
  return {
    session_id: options.sessionId,
    run_id: options.runId,
    tool_call_id: payload.tool_call_id,
    tool: payload.tool,
    title: app.redactor.string(payload.title),
  };
}

/** A call's `tool.started` as a start written with its step's assistant message (run event, session event). */
function callStart(
  app: AgentHost,
  options: Pick<CallStartOptions, 'sessionId' | 'runId'>,
  payload: { tool_call_id: string; tool: string; title: string },
): CallStart {
  const type = 'tool.started';
  return {
    event: { type, payload, created_at: app.clock.now() },
    announce: { type, payload: startEvent(app, options, payload) },
  };
}

/**
 * A tool's session event (`type`, `event`) published, then its ledger row of the same type: on
 * PostgreSQL one statement where the bus keeps its order (`appendAnnounced`, issue 18 item 6), else
 * the publish and the append apart, as they always were. A ledger failure is logged, as `ledger`'s.
 */
export async function ledgerAnnounced(
  app: AgentHost,
  runId: string,
  payload: Record<string, unknown>,
  sessionId: string,
  type: string,
  event: Record<string, unknown>,
  riding?: TrailingInsert,
) {
  if (!app.runs.appendAnnounced) {
    app.bus.publish(sessionId, type, event);
    return await ledger(app, runId, type, payload);
  }
  try {
    await app.runs.appendAnnounced(runId, type, payload, { sessionId, type, payload: event }, riding);
  } catch (error) {
    app.log.warn('run ledger append failed', { run_id: runId, type, error });
  }
}

export async function ledger(app: AgentHost, runId: string, type: string, payload: Record<string, unknown>) {
  try {
    await app.runs.append(runId, type, payload);
  } catch (error) {
    app.log.warn('run ledger append failed', { run_id: runId, type, error });
  }
}
