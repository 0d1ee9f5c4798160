/**
 * A run's last step end in its finish's statement (PostgreSQL, issue 18 item 6, p-pglast). The
 * step end of a step with no call that ends the run (./end-step.ts) was a statement of its own,
 * awaited, and the run's finish (./run-finish.ts) a second one right after it. Here the step end's
 * statement is held (`LastEnds.hold`) and the finish writes it first in its own (`FinishFirst`,
 * src/runs/pg-run-update-event-repository.ts): the step's messages finished, the session's usage,
 * its model call, `step.finished`, then the run's row, `run.finished`, what rides in the finish
 * (the compat row's end), and the session events of both (the step's completions and
 * `context.usage`, then `run.finished` and the idle state), one round trip.
 *
 * Anything else that would write after the step end sends it alone first, in this call, so its
 * events keep SQLite's place: a stop (`RunContext.x.stop.release`: before the stopper's
 * `cancelling`), a run event (`RunContext.ledger`), a hand-over, a finish that cannot carry it
 * (a lease to give up between its events). A finish whose statement fails writes the parts apart:
 * the step end alone, then the finish alone (the compat row's end its own); a step end that fails
 * alone then fails the run as a failing step end did (`fail`: the run's failure, its `error`
 * event, then its finish). The held ends are the agent service's (`AgentCore.lastEnds`, a
 * `LastEnds`), handed to a run that may hold one (`RunExecution.lastEnds`); two services in one
 * process keep theirs apart, and a service's close writes its own still held (p-heldmulti, p-closehold).
 * @module
 */
import type { Logger } from '../log';
import type { HeldStepEnd, RunLastEnds } from './run-types';

export type { HeldStepEnd };

type Held = { end: HeldStepEnd } | { sending: Promise<void> };

/**
 * The held last step ends of one agent service's runs, by run id (`AgentCore.lastEnds`, beside its
 * `finishWrites`): what a run's finish writes first, or the send alone in flight that it waits for.
 * A run's entry goes at its finish (`take`) or its hand-over; the service's close writes what is
 * left before the store closes (`close`: a run that held its last end and did not reach its finish
 * within the close).
 */
export class LastEnds implements RunLastEnds {
  private readonly ends = new Map<string, Held>();

  /** Runs with a held step end or its send alone in flight. */
  get size(): number {
    return this.ends.size;
  }

  /** The run's last step end, held for its finish's statement. */
  hold(runId: string, end: HeldStepEnd): void {
    this.ends.set(runId, { end });
  }

  /** The held step end (still held), to set its `fail`. */
  held(runId: string): HeldStepEnd | undefined {
    const entry = this.ends.get(runId);
    return entry && 'end' in entry ? entry.end : undefined;
  }

  /**
   * The held step end sent alone now (its events placed in the bus's queue in this call), or the
   * send in flight; undefined: none. The finish waits for it (`take`). A failure is logged (the
   * run ends as it was ending, its step's messages unfinished) and resolves.
   */
  send(runId: string, log: Logger): Promise<void> | undefined {
    const entry = this.ends.get(runId);
    if (!entry) return undefined;
    if ('sending' in entry) return entry.sending;
    const sending = entry.end.alone().catch((error: unknown) => {
      log.warn('run step end failed', { run_id: runId, error });
    });
    this.ends.set(runId, { sending });
    return sending;
  }

  /** `append` (a run event, `RunContext.ledger`), after the run's held last step end sent alone. */
  after(runId: string, log: Logger, append: () => Promise<void>): Promise<void> {
    const sending = this.send(runId, log);
    return sending ? sending.then(append) : append();
  }

  /** For the finish: the held step end (taken: the finish writes it), or, once a send in flight answered, undefined. */
  async take(runId: string): Promise<HeldStepEnd | undefined> {
    const entry = this.ends.get(runId);
    this.ends.delete(runId);
    if (!entry) return undefined;
    if ('end' in entry) return entry.end;
    await entry.sending;
    return undefined;
  }

  /** A run whose finish is not this service's (a hand-over): its held step end sent alone, its entry gone. */
  async release(runId: string, log: Logger): Promise<void> {
    const sending = this.send(runId, log);
    this.ends.delete(runId);
    if (sending) await sending;
  }

  /**
   * The service closes (./run-cancel.ts `closeRuns`, p-closehold): before the store does, a step end
   * still held is sent alone now (a run the close's stop did not release) and every send in flight
   * is awaited, at most `ms`; a refused send is logged (`send`), so is one not answered in time.
   * Then nothing is kept for a finish that did not come. Was: dropped, unwritten, at once.
   */
  async close(log: Logger, ms: number): Promise<void> {
    const sending = [...this.ends.keys()].flatMap((runId) => this.send(runId, log) ?? []);
    if (sending.length) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const bound = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
        timer.unref?.();
      });
      const answered = await Promise.race([Promise.all(sending).then(() => true), bound]);
      clearTimeout(timer);
      if (!answered)
        log.warn('held step ends not written before the close', {
          runs: [...this.ends.keys()],
          waited_ms: ms,
        });
    }
    this.ends.clear();
  }
}

/** `append` after the run's held last step end sent alone (`RunLastEnds.after`), where the run may hold one. */
export function afterLastEnd(
  x: { lastEnds?: RunLastEnds },
  runId: string,
  log: Logger,
  append: () => Promise<void>,
): Promise<void> {
  return x.lastEnds ? x.lastEnds.after(runId, log, append) : append();
}

/** The held step end failed alone: the run fails with it (`HeldStepEnd.fail`). */
export class LastEndFailed extends Error {
  constructor(
    readonly error: unknown,
    readonly fail: HeldStepEnd['fail'],
  ) {
    super('the run’s last step end failed');
  }
}
