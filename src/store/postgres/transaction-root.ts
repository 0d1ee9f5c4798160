/**
 * A PostgreSQL transaction's own part of its scopes (./client.ts): its connection's executor, its
 * savepoint counter, what is called at its end and what is known of how it ended.
 * @module
 */
import type { TransactionEnd } from '../read-scope';
import type { Control, lazyTransaction } from './lazy-transaction';
import type { Submit } from './pool-batches';
import type { SqlExecutor } from './sql-executor';

/** The transaction: its connection, its savepoint counter, its end (COMMIT or ROLLBACK done). */
export type TransactionRoot = {
  tx: SqlExecutor;
  /** `tx`, its first statement without BEGIN (`SqlClient.alone`). */
  alone: SqlExecutor;
  savepoints: number;
  done: Promise<void>;
  control: Control;
  /** `afterTransaction`'s and `end.onEnd`'s functions, called at its end (then undefined). */
  after: ((kept: boolean, rolledBack: boolean) => void)[] | undefined;
  /**
   * `end.onWritten`'s (the read scope's marks), called at its end, or at the answer of a
   * statement that went alone (`SqlClient.alone`), which committed what it wrote until then.
   */
  ends: ((kept: boolean) => void)[];
  /** False once it rolled back, or rolled a savepoint back: not every write of it stands. */
  kept: boolean;
  /** True once it is known that none of its writes stands (`TransactionEnd.onEnd`). */
  rolledBack: boolean;
  /** A statement of it went alone and committed (`aloneSubmit`). */
  wroteAlone: boolean;
  /** What the read scope's copies know of it (`transactionNow`). */
  end: TransactionEnd;
};

/** A transaction's own part of its scopes, before its first statement. */
export function transactionRoot(
  tx: SqlExecutor,
  done: Promise<void>,
  control: Control,
  alone: (root: TransactionRoot) => SqlExecutor,
): TransactionRoot {
  const root: TransactionRoot = {
    tx,
    alone: tx,
    savepoints: 0,
    done,
    control,
    after: [],
    ends: [],
    kept: true,
    rolledBack: false,
    wroteAlone: false,
    end: {
      onEnd: (fn) => (root.after ? root.after.push(fn) : fn(root.kept, root.rolledBack)),
      onWritten: (fn) => (root.after ? root.ends.push(fn) : fn(root.kept)),
    },
  };
  root.alone = alone(root);
  return root;
}

/**
 * A transaction's `alone` statements (`SqlClient.alone`): one sent alone committed by itself, so
 * what the transaction wrote until then is in, as at a COMMIT: its `onWritten` functions are told
 * then (`onEnd`'s, the held bus events among them, wait for its end).
 */
export function aloneSubmit(
  lazy: Pick<ReturnType<typeof lazyTransaction>, 'sendAlone'>,
  root: TransactionRoot,
): Submit {
  return (text, params, answer) => {
    const alone = lazy.sendAlone(text, params, (error, result) => {
      if (alone && !error) {
        root.wroteAlone = true;
        for (const fn of root.ends.splice(0)) fn(true);
      }
      answer(error, result);
    });
  };
}

/**
 * `onWritten`'s functions (the read scope's: rows written go stale), then `afterTransaction`'s and
 * `onEnd`'s, once the transaction has ended (later ones are called at once).
 */
export function callAfter(root: TransactionRoot): void {
  const { after, ends, kept, rolledBack } = root;
  root.after = undefined;
  for (const fn of ends.splice(0)) fn(kept);
  for (const fn of after ?? []) fn(kept, rolledBack);
}
