/**
 * A lone start's run launched while its statement is on its way (p-pgoverlap, PostgreSQL): its
 * preparation during the round trip, what the sender tells it once the statement answered.
 * @module
 */
import type { AgentRun, ClaimResult } from '../runs/run-ledger';
import type { ClaimAlongside } from '../runs/types';
import type { Session } from '../sessions/session-store';
import type { Tx } from '../store/transactions';
import type { AgentKind } from './agent-kinds';
import { recordProject } from './project-registry';
import { launchRun, openedOnce } from './run-control';
import type { RunExecution } from './run-types';
import type { AgentCore } from './session-runtime';
import { startAnswer } from './start-answer';

/** What the sender of a run launched by `launchEarly` tells it once its start statement answered. */
export interface EarlyLaunch {
  /**
   * The statement wrote the run (`claim`: createClaimed's answer): the run goes on (its model
   * request, its writes), its row the one written. Rejects as `launchClaimed` would.
   */
  answered(claim: Extract<ClaimResult, { ok: true }>): Promise<void>;
  /**
   * The start failed (its statement, or the send after it: `committed`): the run ends with
   * nothing written, no model asked; its runtime (busy session, controller, lease hold) is reset
   * now, before the caller's own handling of the failure.
   */
  abandon(committed: boolean): void;
}

/**
 * Launch a run inserted claimed with its new session while its lone start statement is on its way
 * (p-pgoverlap, PostgreSQL: `ClaimedCreate.sent`): as `launchClaimed` with its prompt and start
 * events in that statement, but its preparation (model, history, tools, system prompt) runs
 * during the statement's round trip. `run`: the row as its values make it (the answer's columns
 * are copied onto it). Until the answer (`EarlyLaunch`) the model is not asked, nothing of the run
 * is written (`RunExecution.answered`), a stop waits for it (`Runtime.starting`) and the sender's
 * `opened` is not told. Not with a durable engine (its workflow starts by a write).
 */
export function launchEarly(
  core: AgentCore,
  run: AgentRun,
  options: {
    kind: AgentKind;
    session: Session;
    alongside?: ClaimAlongside;
    prompted: NonNullable<RunExecution['prompted']>;
    /** The sender's transaction body (`RunExecution.transaction`). */
    transaction?: Tx;
  },
): EarlyLaunch {
  const start = startAnswer();
  const rt = core.runtime(run.session_id);
  rt.starting = start;
  const { alongside } = options;
  // The sender's `opened`, once its insert is known written (the answer) and the run opened.
  let tell: (() => void) | undefined;
  let opened = false;
  // Outside the sender's transaction (p-pgscope): the preparation's reads that reach the database
  // (nothing is kept before the LISTEN is in place, nor after a write to a kept table) are
  // statements of their own on the pool, not BEGIN, the read and COMMIT after the lone statement;
  // they read no row the statement writes, and the run writes nothing before its answer.
  const outside = core.host.store.transactions.outside;
  const launch = () =>
    launchRun(core, run, {
      kind: options.kind,
      session: options.session,
      rest: [],
      started: true,
      phased: true,
      announced: true,
      prompted: options.prompted,
      answered: start,
      transaction: options.transaction,
      ...(alongside?.opened
        ? {
            opened: () => {
              opened = true;
              tell?.();
            },
          }
        : {}),
    });
  const launched = outside ? outside(launch) : launch();
  const settled = (ok: boolean) => {
    if (rt.starting === start) rt.starting = undefined;
    start.settle(ok);
  };
  return {
    async answered(claim) {
      Object.assign(run, claim.run);
      if (claim.alongside && alongside?.opened) {
        tell = openedOnce(alongside);
        if (opened) tell();
      }
      recordProject(core.host);
      settled(true);
      await launched;
    },
    abandon(committed) {
      launched.catch(() => {});
      if (rt.runId === run.id) {
        rt.controller = undefined;
        rt.stop = undefined;
        rt.promise = undefined;
        // Nothing of it was published here (its start events went with the statement).
        core.setState(run.session_id, 'idle', null, true);
      }
      void core.deps.runLeases?.end(run);
      // Its statement wrote nothing: nobody can wait for it (a committed one is cancelled by its caller).
      if (!committed) core.deferreds.delete(run.id);
      settled(false);
    },
  };
}
