/**
 * A run's preparation writes held for one statement (PostgreSQL, issue 18 item 6, p-pgprep): its
 * `model.resolved` event, the prompt stack row of its system prompt and its `prompt.assembled`
 * event were three statements, each awaited alone, between the start's commit and the model
 * request. They are held as the preparation makes them and written in their order in one
 * statement (`RunLedger.appendList` with the row riding along) before any other write of the run
 * to its ledger: since p-pgcompat2 not at the preparation's end but with the run's next event
 * (`RunContext.ledger`), so that event is no statement of its own; since p-pgprep3 its first
 * step's `phase` (model) at the step's start does not write them: they are held with it
 * (./held-event.ts `holdPreparation`) and ride, first, in the statement that takes it (the step's
 * assistant message, or its step end, and a lone text step's end is the run's finish's: a lone
 * compat request's writes are its start and its finish), the prompt stack row a `WITH` of that
 * statement (`following`). A run with none writes them at its end (`executeRun`), a failed
 * preparation, a compaction during it and a resumed run's waiting calls write them first. Same
 * events, seqs, times and row as before. A statement carrying them that fails holds the events
 * again and sends the row alone (a row that cannot be stored fails nothing else).
 *
 * A crash of the process before that statement leaves none of the three, where it could leave a
 * prefix of them before (the run is interrupted by the recovery either way, with its
 * `run.started`, `phase` (prompt), `openai_compat.request` and its prompt committed by the
 * start). Another node's append to the run in the model's wait (`run.cancel_requested`) now comes
 * before them in seq. SQLite (no `appendList`): nothing is held, the writes go as before (one
 * commit of the stretch for a compat run, `stepBatch`).
 * @module
 */
import type { HeldBuild } from '../observe/prompt-stack';
import type { Held } from './held-event';
import { afterLastEnd } from './last-step-end';
import type { HeldWrites, RunContext, StopState } from './run-types';
import { afterStart, gatedWrite } from './start-answer';

export type { HeldWrites };

/**
 * The run's held writes; on SQLite only a compat run's (its start's step batch, `heldNow`), else
 * undefined (the ledger appends one by one).
 */
export function heldWrites(c: RunContext): HeldWrites | undefined {
  const { app, run } = c;
  if (!app.runs.appendList) return c.x.handed ? heldNow(c) : undefined;
  let events: Held[] = [];
  let takePrompt: (() => HeldBuild | undefined) | undefined;
  /** The held build once taken from the prompt stack's hold (a following write that failed puts it back). */
  let kept: HeldBuild | undefined;
  const takeBuild = () => {
    if (takePrompt) kept ??= takePrompt();
    takePrompt = undefined;
    const build = kept;
    kept = undefined;
    return build;
  };
  const recorded = (build: HeldBuild, id: number) =>
    build.written(id).catch((error) => app.log.warn('prompt stack build not recorded', { error }));
  return {
    event(type, payload, created_at = app.clock.now()) {
      events.push({ type, payload, created_at });
    },
    holdPrompt() {
      takePrompt = app.observe.promptStack.hold(run.id);
    },
    // A run launched before its start's answer (p-pgoverlap): written after it, not when it failed.
    write: () =>
      gatedWrite(c.x.answered, async () => {
        const build = takeBuild();
        const list = events;
        events = [];
        if (list.length === 0) {
          await build
            ?.writeAlone()
            .catch((error) => app.log.warn('prompt stack build not recorded', { error }));
          return;
        }
        let ridingId: number | undefined;
        try {
          ridingId = (await app.runs.appendList!(run.id, list, build?.insert)).ridingId;
        } catch (error) {
          app.log.warn('run ledger append failed', { run_id: run.id, types: list.map((e) => e.type), error });
          return;
        }
        if (build && ridingId !== undefined) await recorded(build, ridingId);
      }),
    following(then) {
      const follow = app.runs.followingEvents;
      if (!follow) return undefined;
      const build = takeBuild();
      // A store whose insert cannot follow (no `at`): the row goes alone, as `write` with no event.
      const row = build?.insert.at ? build : undefined;
      if (build && !row)
        void build.writeAlone().catch((error) => app.log.warn('prompt stack build not recorded', { error }));
      const own = events;
      events = [];
      const following = follow(run.id, [...own, ...then], row?.insert);
      return {
        write: following.write,
        after() {
          const id = following.ridingId();
          if (row && id !== undefined) void recorded(row, id);
          // The statement failed: the row goes alone (its own failure logged, as `write`'s), so
          // a row that cannot be written does not fail the statements that carry the events again.
          else if (row)
            void row
              .writeAlone()
              .catch((error) => app.log.warn('prompt stack build not recorded', { error }));
          if (!following.written()) events = [...own, ...events];
        },
        written: () => following.written() !== undefined,
      };
    },
  };
}

/**
 * SQLite (p-promptheld, issue 17 item 3): a compat run's prompt stack row and `prompt.assembled`,
 * held as its preparation makes them (the event at the time it was made) and written, in that
 * order, right before the start's step batch COMMITs (`StoreTransactions.beforeCommit`): after
 * the model request, written in the request's turn, and where the streamed answer asked the batch
 * to yield, after its head and role chunk too; else before the run's next append in this process,
 * whoever makes it (`RunLedger.beforeNextAppend`: same seq, its first step's `phase` after it),
 * or at the run's end. No batch open then: written at once. With no promise (`now`; idempotent:
 * what is still held). A crash before the COMMIT leaves neither, as it leaves the rest of the
 * batch; a cancel request's `run.cancel_requested` appended in between takes the seq before it (as
 * on PostgreSQL). Undefined where the ledger has no such appends.
 */
function heldNow(c: RunContext): HeldWrites | undefined {
  const { app, run } = c;
  const { appendNow, beforeNextAppend } = app.runs;
  if (!appendNow || !beforeNextAppend) return undefined;
  let events: Held[] = [];
  let takePrompt: (() => (() => Promise<void> | undefined) | undefined) | undefined;
  const notRecorded = (error: unknown) => app.log.warn('prompt stack build not recorded', { error });
  const now = () => {
    beforeNextAppend(run.id, undefined);
    const insert = takePrompt?.();
    takePrompt = undefined;
    try {
      insert?.()?.catch(notRecorded);
    } catch (error) {
      notRecorded(error);
    }
    const list = events;
    events = [];
    for (const e of list) {
      try {
        appendNow(run.id, e.type, e.payload, e.created_at);
      } catch (error) {
        app.log.warn('run ledger append failed', { run_id: run.id, type: e.type, error });
      }
    }
  };
  return {
    event(type, payload, created_at = app.clock.now()) {
      const first = events.length === 0;
      events.push({ type, payload, created_at });
      if (!first) return;
      beforeNextAppend(run.id, now);
      // No batch open (the preparation waited for I/O and it committed): written now, as before.
      if (!app.store.transactions.beforeCommit?.(now)) now();
    },
    holdPrompt() {
      takePrompt = app.observe.promptStack.holdNow(run.id);
    },
    write: async () => now(),
    following: () => undefined,
    now,
  };
}

/** SQLite's held preparation (`heldNow`) written now, if still held. */
function writeHeldNow(c: RunContext): void {
  const held = c.preparation;
  if (!held?.now) return;
  c.preparation = undefined;
  held.now();
}

/**
 * The preparation (`prepare`, holding its writes in `held`); a failed one writes what it held
 * before it throws. After it, what is held waits for the run's next event (`appendToLedger`), so
 * that event (nearly always its first step's `phase` (model)) is no statement of its own, and the
 * model is asked without waiting for a write. `now` (a resumed run's waiting calls, which write to
 * the run first) or a run already stopped: written at once.
 */
export async function preparedHolding<T>(
  c: RunContext,
  held: HeldWrites | undefined,
  now: boolean,
  prepare: () => Promise<T>,
): Promise<T> {
  let prepared: T;
  try {
    prepared = await prepare();
  } catch (error) {
    await held?.write();
    throw error;
  }
  if (held && (now || c.signal.aborted)) await held.write();
  else c.preparation = held;
  return prepared;
}

/**
 * `RunContext.ledger`: after the run's last step end held for its finish, that step end first,
 * alone; none held by any run (SQLite): `appendToLedger` at once.
 */
export function runLedger(c: RunContext, type: string, payload: Record<string, unknown>) {
  const { x } = c;
  return x.lastEnds?.size
    ? afterLastEnd(x, c.run.id, c.app.log, async () => await appendToLedger(c, type, payload))
    : appendToLedger(c, type, payload);
}

/** The event held with the preparation's writes, else appended (SQLite: undefined, at once). */
export function heldOr(
  c: RunContext,
  held: HeldWrites | undefined,
  type: string,
  payload: Record<string, unknown>,
): Promise<void> | undefined {
  if (!held) return c.ledger(type, payload);
  held.event(type, payload);
  return undefined;
}

/**
 * `RunContext.ledger`: a step's `phase` still held (./held-event.ts) first, then the event, with
 * the preparation's held writes in their one statement if any; a failed append is logged, never
 * thrown. Nothing held on SQLite: appended at the call, no promise (undefined, p-syncrepo).
 */
export function appendToLedger(
  c: RunContext,
  type: string,
  payload: Record<string, unknown>,
): Promise<void> | undefined {
  // A run launched before its start's answer (p-pgoverlap): after it, nothing when it failed.
  if (c.x.answered && afterStart(c.x.answered) !== true)
    return gatedWrite(c.x.answered, async () => await appendToLedger(c, type, payload));
  // No await where nothing is held: SQLite's append starts in this tick, as before.
  if (c.preparation?.now) writeHeldNow(c);
  const flushing = c.held.flush();
  if (flushing || c.preparation || !c.app.runs.appendNow) return appendHeld(c, type, payload, flushing);
  try {
    c.app.runs.appendNow(c.run.id, type, payload);
  } catch (error) {
    c.app.log.warn('run ledger append failed', { run_id: c.run.id, type, error });
  }
  return undefined;
}

async function appendHeld(
  c: RunContext,
  type: string,
  payload: Record<string, unknown>,
  flushing: Promise<void> | undefined,
): Promise<void> {
  if (flushing) await flushing;
  // The preparation's held writes and this event, in their one statement.
  const held = c.preparation;
  if (held) {
    c.preparation = undefined;
    held.event(type, payload);
    return await held.write();
  }
  try {
    await c.app.runs.append(c.run.id, type, payload);
  } catch (error) {
    c.app.log.warn('run ledger append failed', { run_id: c.run.id, type, error });
  }
}

/**
 * What the run holds is written as soon as it is stopped (the model's wait), its promise in
 * `stop.written` for the stopper to await before its own writes to the run. Once the first step
 * started, the held event holds them (p-pgprep3): the stopper awaits the statement that carries
 * them (the stop's own release of the step's held message, or the run's end). Answers what the
 * run calls at its end: what is still held is written, and awaited, before the run's end is (not
 * a statement in flight that the run's finish sends: the held last step end).
 */
export function writeHeldOnStop(c: RunContext, stop: StopState): () => Promise<void> {
  let writing: Promise<void> | undefined;
  const write = () => {
    const held = c.preparation;
    c.preparation = undefined;
    if (held) stop.written = writing = held.write();
  };
  const stopped = () => {
    write();
    stop.written ??= c.held.preparationWritten();
  };
  c.signal.addEventListener('abort', stopped, { once: true });
  return async () => {
    c.signal.removeEventListener('abort', stopped);
    write();
    await c.held.flushPreparation();
    await writing;
  };
}
