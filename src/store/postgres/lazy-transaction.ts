/**
 * A transaction's statements on its checked-out connection (issue 18, item 6): BEGIN, a
 * savepoint's SAVEPOINT, RELEASE and ROLLBACK TO go out with the next statement, in one write,
 * answered by callback (./client.ts makes the statement's one promise). Split from ./client.ts,
 * which keeps the ambient scopes and the routing.
 * @module
 */
import type { PoolClient, QueryResult } from 'pg';
import { SvcError } from '../../errors';
import type { Answer, Statement, Submit } from './pool-batches';
import type { StatementClass } from './row-shapes';
import { replayingWire, type TransactionWire } from './stale-replay';

/**
 * A transaction on `connection` whose control statements go out with the next statement it sends
 * (`pending`): BEGIN with its first statement, a savepoint's SAVEPOINT with its body's first,
 * RELEASE and ROLLBACK TO with whatever comes next (or the COMMIT, where a RELEASE is dropped:
 * the COMMIT releases it). Each is one write with that
 * statement, answered in the same round trip (pg's pipeline mode; each keeps its own Sync, so an
 * error ends only its own): a body that sends nothing (nothing to write this time) costs nothing,
 * a savepoint whose body sent nothing is dropped. Under READ COMMITTED every statement reads its
 * own snapshot, so a later BEGIN changes nothing a statement sees. `send` writes each statement
 * within its call, so statements and control calls go out in call order, the server runs them in
 * that order, and a statement after a failed one fails as it would after its answer (the
 * transaction is aborted either way).
 */
export function lazyTransaction(
  connection: PoolClient,
  Query: StatementClass,
): {
  send: Submit;
  /**
   * `send`, but a statement sent before any other of the transaction (BEGIN still pending, no
   * savepoint) goes without BEGIN: its own transaction, committed by itself (p-pgstart2). The
   * transaction is still not begun: its next statement goes with BEGIN, and an end with nothing
   * after it sends no COMMIT. Answers whether it went alone.
   */
  sendAlone: (...args: Parameters<Submit>) => boolean;
  control: Control;
  end(command: 'COMMIT' | 'ROLLBACK'): Promise<void>;
} {
  /** Control statements not sent yet, in order; BEGIN first until the first statement. */
  const pending: string[] = ['BEGIN'];
  let begun = false;
  // Its statements, replayed once past a stale plan (./stale-replay.ts).
  const wire = replayingWire(connection, Query);
  const send = (text: string, params: unknown[] | undefined, answer: Answer): void => {
    begun = true;
    if (pending.length) withPrefix(wire, pending.splice(0), text, params, answer);
    else wire.write([{ text, params, answer }]);
  };
  /** Drops `SAVEPOINT name` and what followed it when it was never sent; whether it was. */
  const unsent = (name: string): boolean => {
    const at = pending.indexOf(`SAVEPOINT ${name}`);
    if (at < 0) return false;
    pending.splice(at);
    return true;
  };
  const fresh = () => !begun && pending.length === 1;
  const sendAlone = (...[text, params, answer]: Parameters<Submit>): boolean => {
    if (!fresh()) {
      send(text, params, answer);
      return false;
    }
    wire.write([{ text, params, answer }], true);
    return true;
  };
  return {
    send,
    sendAlone,
    control: {
      fresh,
      savepoint: (name) => {
        pending.push(`SAVEPOINT ${name}`);
      },
      release: (name) => {
        if (!unsent(name)) pending.push(`RELEASE SAVEPOINT ${name}`);
      },
      rollbackTo: (name) => {
        if (!unsent(name)) pending.push(`ROLLBACK TO SAVEPOINT ${name}`);
      },
    },
    end: (command) =>
      new Promise<void>((resolve, reject) => {
        if (!begun) return resolve();
        // A ROLLBACK undoes what is pending anyway. A COMMIT releases every savepoint: the
        // RELEASEs that would go with it are dropped (one statement fewer; a ROLLBACK TO stays).
        if (command === 'ROLLBACK') pending.length = 0;
        else while (pending.at(-1)?.startsWith('RELEASE SAVEPOINT ')) pending.pop();
        send(command, undefined, (error, answer) => {
          if (error) return reject(error);
          // PostgreSQL answers the COMMIT of an aborted transaction (a failed statement whose
          // error was caught) with ROLLBACK and no error: say so, never report it committed.
          if (command === 'COMMIT' && answer?.command === 'ROLLBACK') {
            return reject(
              new SvcError(
                'internal',
                'PostgreSQL rolled the transaction back at its COMMIT: a statement in it failed and its error was caught',
              ),
            );
          }
          resolve();
        });
      }),
  };
}

/** A savepoint's control statements, sent with the transaction's next statement. */
export interface Control {
  /** Whether `sendAlone` would send a statement sent now alone (nothing sent yet, no savepoint pending). */
  fresh(): boolean;
  savepoint(name: string): void;
  release(name: string): void;
  rollbackTo(name: string): void;
}

/**
 * The control statements `prefix` and then the statement in one write, answered together: one
 * round trip where there were several (the pool's connections are in pg's pipeline mode). Once
 * all have answered, the first failure is the statement's answer: when a control statement fails,
 * the statement's answer is not taken (the caller's ROLLBACK follows).
 */
function withPrefix(
  wire: TransactionWire,
  prefix: string[],
  text: string,
  params: unknown[] | undefined,
  answer: Answer,
): void {
  const errors: (Error | null | undefined)[] = [];
  let result: QueryResult | undefined;
  let unanswered = prefix.length + 1;
  const answered = () => {
    if (--unanswered > 0) return;
    const failure = errors.find((each) => each);
    if (failure) answer(failure);
    else answer(undefined, result);
  };
  const statements: Statement[] = prefix.map((control, index) => ({
    text: control,
    answer: (error) => {
      errors[index] = error;
      answered();
    },
  }));
  statements.push({
    text,
    params,
    answer: (error, answerOf) => {
      errors[prefix.length] = error;
      result = answerOf;
      answered();
    },
  });
  wire.write(statements);
}
