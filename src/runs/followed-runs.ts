/**
 * The runs whose every event this process appended, from seq 1 on with no gap, and their events of
 * a kept type as a read gives them (issue 17 item 3): a run's end answers its refused-call check
 * from them (`takeAppended`) instead of reading the ledger. Another writer's event, or answers
 * announced out of seq order, show as a gap and the run is no longer followed (then it is read).
 * Both ledgers use it: SQLite's ./run-events.ts and PostgreSQL's ./pg-run-ledger.ts.
 * @module
 */
import type { RunEvent } from './types';

/** The event types `takeAppended` answers: the refused-call check of a run's result reads them. */
const KEPT_TYPES = new Set(['tool.finished']);
/** Runs followed at most (the oldest is dropped: its events are read instead). */
const MAX_FOLLOWED = 1000;

export function followedRuns() {
  const runs = new Map<string, { next: number; kept: RunEvent[] }>();
  return {
    /**
     * An event this process appended; `payloadText`, the payload as stored, when the caller has it
     * (a kept event's payload is that text parsed again, as a read gives it).
     */
    follow(event: RunEvent, payloadText?: string): void {
      let run = runs.get(event.run_id);
      if (event.seq === 1) {
        if (runs.size >= MAX_FOLLOWED) runs.delete(runs.keys().next().value as string);
        run = { next: 1, kept: [] };
        runs.set(event.run_id, run);
      }
      if (!run) return;
      if (event.seq !== run.next) {
        runs.delete(event.run_id);
        return;
      }
      run.next++;
      if (KEPT_TYPES.has(event.type))
        run.kept.push({ ...event, payload: JSON.parse(payloadText ?? JSON.stringify(event.payload)) });
    },
    forget(runId: string): void {
      runs.delete(runId);
    },
    /** The run's events of `type` when this process appended all of them; forgets the run. */
    take(runId: string, type: string): RunEvent[] | undefined {
      const run = runs.get(runId);
      runs.delete(runId);
      if (!run || !KEPT_TYPES.has(type)) return undefined;
      return run.kept.filter((event) => event.type === type);
    },
  };
}
