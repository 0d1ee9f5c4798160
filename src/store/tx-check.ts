/**
 * The missed-token check (`SVC_TX_CHECK=1`, on in the test suite, off in production; p-txcheck).
 *
 * A token body (`atomicallyWith`, ./db.ts) runs with no async scope: a nested call finds it only
 * through the token it is given. A nested `atomicallyAsync`/`atomicallyWith` not given the token
 * waits for the body to end, as an unrelated caller's does: where the body awaits that call, a
 * deadlock (a hang, no error); a nested `stepBatch` not given it does not hand the body's
 * transaction over to the step batch (the body commits at its end, a commit more).
 *
 * With the check on, a token body also runs in a scope of this module's own storage (the body and
 * where it was opened): a call that would wait for the connection, or a `stepBatch` that would find
 * no body, made while its async context descends from an open token body of the same connection is
 * that body's nested call without its token, and throws an error naming the call and the body; an
 * unrelated caller's context has no such body (or one of another connection, or an ended one) and
 * waits as before. Work the body started and left running (not awaited) is in its context too: while
 * the body is open, its calls must be given the token as well (they would otherwise only wait).
 *
 * Off, nothing of this runs: no scope is entered, no stack is taken (the scope-counting tests,
 * COMPAT-PERF-210 and 250, turn it off with `setTxCheck(false)` to count what production does).
 * @module
 */
import { scopedStorage } from './async-scope';

/** A token body as the check sees it (./db.ts `TxToken`, not imported: db.ts imports this module). */
interface TxToken {
  readonly db: unknown;
  readonly open: boolean;
}

let checking = process.env.SVC_TX_CHECK === '1';

/** Whether the check is on in this process. */
export function txCheckOn(): boolean {
  return checking;
}

/** Turn the check on or off (tests that count the production path's scopes); answers the previous setting. */
export function setTxCheck(on: boolean): boolean {
  const was = checking;
  checking = on;
  return was;
}

/** An open token body as the check sees it: its token and the frames that opened it. */
interface CheckedBody {
  readonly token: TxToken;
  readonly opened: string;
}
const bodies = scopedStorage<CheckedBody>();

/**
 * The check's scope of a token body (./db.ts enters it only with the check on): `enter` runs the
 * body's `fn` in it, and every `enter` needs its one `leave()` once the body has ended.
 */
export const checkedBodies = {
  enter<R>(token: TxToken, fn: () => R): R {
    return bodies.enter({ token, opened: callerFrames(new Error().stack) }, fn);
  },
  leave(): void {
    bodies.leave();
  },
};

/** `stepBatch`'s check: throws when the code calling is an open token body's on `db`, not given its token. */
export function refuseMissedToken(db: unknown, call: string): void {
  const missed = missedToken(db, call);
  if (missed) throw missed;
}

/**
 * The error for a nested call without its body's token (`call`: what it was, `atomicallyAsync`,
 * `atomicallyWith`, `stepBatch`), or undefined when the code calling is no open token body's on `db`.
 */
export function missedToken(db: unknown, call: string): Error | undefined {
  const body = bodies.getStore();
  if (!body?.token.open || body.token.db !== db) return undefined;
  const error = new Error(
    `svc (SVC_TX_CHECK): ${call} called inside an open token body (atomicallyWith, runWith, togetherWith) ` +
      `without the body's token: it ${call === 'stepBatch' ? 'would not hand the body over to the step batch' : 'would wait for the body to end (a deadlock where the body awaits it)'}; ` +
      `pass the body's tx to it.\nThe call:\n${callerFrames(new Error().stack)}\nThe body, opened:\n${body.opened}`,
  );
  error.name = 'MissedTxToken';
  return error;
}

/** The frames of a stack outside the store's transaction modules (the caller's), at most eight. */
function callerFrames(stack: string | undefined): string {
  const frames = (stack ?? '').split('\n').slice(1);
  const outside = frames.filter(
    (frame) => !/[/\\]store[/\\](db|tx-check|transactions|async-scope)\.[tj]s|node:async_hooks/.test(frame),
  );
  return (outside.length > 0 ? outside : frames).slice(0, 8).join('\n');
}
