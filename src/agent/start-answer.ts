/**
 * The answer of a run's start statement when the run was launched before it came (p-pgoverlap,
 * PostgreSQL's lone compat start): the run prepares during the statement's round trip; its model
 * request, its writes and its end wait for the answer. A failed start: nothing of the run written.
 *
 * A stop asked in the window (`abortRun`) is not a continuation of the answer's promise racing the
 * model request's: it is run by `settle` itself (`whenAnswered`), synchronously, before the promise
 * resolves, so whatever waits on the answer (the model request's gate, ./run-loop.ts) finds the run
 * already aborted when it goes on and checks its signal before the request, in the same turn.
 * @module
 */

/** Whether the start's statement answered, once it did (`ok`); `answer` settles then, never rejects. */
export interface StartAnswer {
  readonly answer: Promise<boolean>;
  readonly ok?: boolean;
  /**
   * `then` run by `settle`, in the order given, before `answer` resolves and before anything
   * awaiting it goes on (a stop asked in the window: ./session-runtime.ts `abortRun`); at once when
   * it answered already.
   */
  whenAnswered(then: (ok: boolean) => void): void;
  /** A stop asked in the window, once (`abortRun`): its `StopState.written`, later asks share it. */
  stopping?: Promise<void>;
}

/** A start answer the sender settles: true, its statement wrote the run; false, it failed. */
export function startAnswer(): StartAnswer & { settle(ok: boolean): void } {
  let resolve!: (ok: boolean) => void;
  const answer = new Promise<boolean>((r) => {
    resolve = r;
  });
  let pending: ((ok: boolean) => void)[] = [];
  const state: StartAnswer & { ok?: boolean; settle(ok: boolean): void } = {
    answer,
    settle(ok) {
      if (state.ok !== undefined) return;
      state.ok = ok;
      const then = pending;
      pending = [];
      for (const fn of then) fn(ok);
      resolve(ok);
    },
    whenAnswered(then) {
      if (state.ok !== undefined) then(state.ok);
      else pending.push(then);
    },
  };
  return state;
}

/**
 * Whether the run may write now: true without a start answer awaited or once it came ok (no
 * promise: the run's path as it was), false once it failed, else the promise of the answer.
 */
export function afterStart(start: StartAnswer | undefined): boolean | Promise<boolean> {
  if (!start || start.ok === true) return true;
  return start.ok === false ? false : start.answer;
}

/** `write` once the start answered ok; nothing when it failed (nothing of the run was written). */
export function gatedWrite(start: StartAnswer | undefined, write: () => Promise<void>): Promise<void> {
  const may = afterStart(start);
  if (may === true) return write();
  if (may === false) return Promise.resolve();
  return may.then((ok) => (ok ? write() : undefined));
}
