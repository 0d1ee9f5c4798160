/**
 * A step's `phase` event held for its assistant message's statement (PostgreSQL, issue 18 item 6,
 * p-pgstep6). The event (`phase: model`, the step's number) was a statement of its own at the
 * step's start, awaited before the model request; the assistant message's INSERT (with its
 * `message.created`) comes a moment later, at the model's first part, and before any other event
 * of the step (a tool's `tool.started` waits for the message that holds its call). The event is
 * held at the step's start with that time as its `created_at` and rides in that INSERT
 * (`RunLedger.followingEvent`), after the message's row and before its session event. Whatever
 * writes the run's next event first writes what is still held (the run context's `ledger`, the
 * step's end): a step with no message (a stream that fails or ends before its first part), an
 * INSERT that did not write it (the statement failed, the run row missing).
 *
 * The ledger then holds the same event at the same seq among the run's own events and the same
 * time. A write from outside the run while the model has not answered (a cancel request's
 * `run.cancel_requested`) now takes the seq before it; a crash in that moment leaves the step
 * without its `phase` (the run is interrupted by the recovery either way). SQLite (no
 * `followingEvent`): nothing is held, the event is appended at the step's start as before. The
 * run's preparation writes still held at its first step's start (./held-writes.ts) are held here
 * too, ahead of that `phase` (p-pgprep3): whatever takes or flushes the `phase` writes them first.
 * @module
 */
import type { FollowingWrite } from '../store/preceding-write';
import type { AgentHost } from './deps';

/** A run event held (or to follow it), stored at `created_at`. */
export interface Held {
  type: string;
  payload: Record<string, unknown>;
  created_at: number;
}

/** `HeldEvent.take`'s write; `written()`: every event of it was written (once it answered). */
export interface TakenEvents {
  write: FollowingWrite;
  after(): void;
  written(): boolean;
}

export interface HeldEvent {
  /** Holds the event (false: nothing is held here, the caller appends it now). */
  hold(type: string, payload: Record<string, unknown>): boolean;
  /**
   * The held event as a write for the next statement, taken (undefined: none held, nor `then`);
   * `after()` once that statement answered or failed puts it back when it was not written.
   * `then`: run events of the same statement after it (p-pgride: the step's first `tool.started`,
   * its message's INSERT held until the tool starts, ./step-recorder.ts `startCall`), in one
   * write with it (`RunLedger.followingEvents`); `written()` says whether all of them were.
   * Undefined with `then` where the ledger cannot carry several (the caller writes them itself).
   */
  take(then?: readonly Held[]): TakenEvents | undefined;
  /**
   * Appends what is held, alone; a failure is logged (as the run context's `ledger`'s), never
   * thrown. Undefined when nothing is held: the caller's own append is not put off by a tick
   * (the compat surface's `openai_compat.request` must not overtake the run's `model.resolved`).
   */
  flush(): Promise<void> | undefined;
  /**
   * Holds the run's preparation writes (./held-writes.ts) ahead of the event (p-pgprep3: from the
   * first step's start): `take` carries them first in the statement that takes the `phase` (the
   * step's assistant message, or its step end and so the run's finish), `flush` writes them with
   * it. False: nothing is held here (the caller writes them).
   */
  holdPreparation(prep: HeldWrites): boolean;
  /**
   * A stop (./held-writes.ts `writeHeldOnStop`): settles once the preparation's writes held here
   * were written (or failed), by the statement in flight that carries them or by a later one;
   * undefined: none held here.
   */
  preparationWritten(): Promise<void> | undefined;
  /** The run's end: the preparation's writes still held here written now, with the event. */
  flushPreparation(): Promise<void> | undefined;
}

/** A run's preparation writes, held for one statement (./held-writes.ts). */
export interface HeldWrites {
  /** An event of the run, appended at `write` in the order held, with the time it was held at (or `created_at`). */
  event(type: string, payload: Record<string, unknown>, created_at?: number): void;
  /** The prompt stack row the run's prompt assembly records from now on is held too. */
  holdPrompt(): void;
  /** Writes what is held in one statement; a failure is logged (as `RunContext.ledger`'s), never thrown. */
  write(): Promise<void>;
  /**
   * SQLite (p-promptheld, ./held-writes.ts `heldNow`): writes what is held at the call, no promise
   * (a failure logged, as `write`'s). Absent on PostgreSQL.
   */
  now?(): void;
  /**
   * What is held, then `then`, as one write following another domain's rows in its statement
   * (`RunLedger.followingEvents` with the prompt stack row, p-pgprep3), taken; `after()` once that
   * statement answered or failed holds again what it did not write. Undefined: the ledger cannot.
   */
  following(then: readonly Held[]): TakenEvents | undefined;
}

/** The run's held event; a no-op where the ledger cannot carry it in another statement (SQLite). */
export function heldEvent(app: AgentHost, runId: string): HeldEvent {
  const follow = app.runs.followingEvent;
  let held: Held | undefined;
  /** The preparation's writes held here, and who waits for them to be written. */
  let prep: HeldWrites | undefined;
  let settled: { promise: Promise<void>; resolve(): void } | undefined;
  const settle = () => {
    settled?.resolve();
    settled = undefined;
  };
  /** The preparation's writes, then the event, alone (`HeldWrites.write`: one statement). */
  const writePrep = (writes: HeldWrites) => {
    const event = held;
    held = undefined;
    prep = undefined;
    if (event) writes.event(event.type, event.payload, event.created_at);
    return writes.write().finally(settle);
  };
  return {
    hold(type, payload) {
      if (!follow || !app.sessions.appendAnnounced) return false;
      held = { type, payload, created_at: app.clock.now() };
      return true;
    },
    take(then) {
      const event = held;
      const writes = prep;
      if (writes) {
        // The preparation's writes first, then the event and `then`, in the taking statement.
        const taken = writes.following(event ? [event, ...(then ?? [])] : (then ?? []));
        if (!taken) return undefined;
        held = undefined;
        prep = undefined;
        return {
          write: taken.write,
          after() {
            taken.after();
            if (taken.written()) return settle();
            prep ??= writes;
            if (event) held ??= event;
          },
          written: taken.written,
        };
      }
      if (then?.length) {
        const followList = app.runs.followingEvents;
        if (!followList) return undefined;
        held = undefined;
        const following = followList(runId, event ? [event, ...then] : then);
        return {
          write: following.write,
          after() {
            if (event && !following.written()) held ??= event;
          },
          written: () => following.written() !== undefined,
        };
      }
      if (!event || !follow) return undefined;
      held = undefined;
      const following = follow(runId, event.type, event.payload, event.created_at);
      return {
        write: following.write,
        after() {
          if (!following.written()) held ??= event;
        },
        written: () => following.written() !== undefined,
      };
    },
    flush() {
      if (prep) return writePrep(prep);
      const event = held;
      if (!event) return undefined;
      held = undefined;
      return appendAlone(app, runId, event);
    },
    holdPreparation(writes) {
      if (!follow || !app.runs.followingEvents || !app.sessions.appendAnnounced) return false;
      prep = writes;
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      settled = { promise, resolve };
      return true;
    },
    preparationWritten: () => settled?.promise,
    flushPreparation() {
      return prep ? writePrep(prep) : undefined;
    },
  };
}

async function appendAlone(app: AgentHost, runId: string, event: Held): Promise<void> {
  try {
    // At its own time (the step's start), as the riding write would have stored it.
    if (app.runs.appendList) await app.runs.appendList(runId, [event]);
    else await app.runs.append(runId, event.type, event.payload);
  } catch (error) {
    app.log.warn('run ledger append failed', { run_id: runId, type: event.type, error });
  }
}
