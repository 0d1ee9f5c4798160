/**
 * A run's preparation writes held for one statement (PostgreSQL, issue 18 item 6, p-pgprep): its
 * `model.resolved` event, the prompt stack row of its system prompt and its `prompt.assembled`
 * event were three statements, each awaited alone, between the start's commit and the model
 * request. They are held as the preparation makes them and written in their order in one
 * statement at its end (`RunLedger.appendList` with the row riding along), before the model is
 * asked and before any other write to the run's ledger (a compaction during the preparation writes
 * what is held first). Same events, seqs, times and row as before.
 *
 * A crash of the process before that statement leaves none of the three, where it could leave a
 * prefix of them before (the run is interrupted by the recovery either way, with its
 * `run.started`, `phase` (prompt), `openai_compat.request` and its prompt committed by the
 * start). SQLite (no `appendList`): nothing is held, the writes go as before (one commit of the
 * stretch for a compat run, `stepBatch`).
 * @module
 */
import type { HeldBuild } from '../observe/prompt-stack';
import type { RunContext } from './run-types';

export interface HeldWrites {
  /** An event of the run, appended at `write` in the order held, with the time it was held at. */
  event(type: string, payload: Record<string, unknown>): void;
  /** The prompt stack row the run's prompt assembly records from now on is held too. */
  holdPrompt(): void;
  /** Writes what is held in one statement; a failure is logged (as `RunContext.ledger`'s), never thrown. */
  write(): Promise<void>;
}

/** The run's held writes; undefined where the ledger appends one by one (SQLite). */
export function heldWrites(c: RunContext): HeldWrites | undefined {
  const { app, run } = c;
  if (!app.runs.appendList) return undefined;
  let events: { type: string; payload: Record<string, unknown>; created_at: number }[] = [];
  let takePrompt: (() => HeldBuild | undefined) | undefined;
  return {
    event(type, payload) {
      events.push({ type, payload, created_at: app.clock.now() });
    },
    holdPrompt() {
      takePrompt = app.observe.promptStack.hold(run.id);
    },
    async write() {
      const build = takePrompt?.();
      takePrompt = undefined;
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
      if (build && ridingId !== undefined)
        await build
          .written(ridingId)
          .catch((error) => app.log.warn('prompt stack build not recorded', { error }));
    },
  };
}
