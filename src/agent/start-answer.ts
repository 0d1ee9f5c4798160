/**
 * The answer of a run's start statement when the run was launched before it came (p-pgoverlap,
 * PostgreSQL's lone compat start): the run prepares during the statement's round trip; its model
 * request, its writes and its end wait for the answer. A failed start: nothing of the run written.
 * @module
 */

/** Whether the start's statement answered, once it did (`ok`); `answer` settles then, never rejects. */
export interface StartAnswer {
  readonly answer: Promise<boolean>;
  readonly ok?: boolean;
}

/** A start answer the sender settles: true, its statement wrote the run; false, it failed. */
export function startAnswer(): StartAnswer & { settle(ok: boolean): void } {
  let resolve!: (ok: boolean) => void;
  const answer = new Promise<boolean>((r) => {
    resolve = r;
  });
  const state: { answer: Promise<boolean>; ok?: boolean; settle(ok: boolean): void } = {
    answer,
    settle(ok) {
      if (state.ok !== undefined) return;
      state.ok = ok;
      resolve(ok);
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
