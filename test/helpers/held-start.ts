/**
 * The hold technique of the run-ahead tests (test/store/pg-reads-only.test.ts,
 * pg-reads-more.test.ts): a client that holds a run's start statement (the statement carrying a
 * call's `tool.started` with the step's assistant message) until a call ran, logging `start sent` /
 * `start answered` (or `start failed`), and a spy logging `tool ran <name>` when a tool starts.
 */
import { vi } from 'vitest';
import type { App } from '../../src/app';
import type { SqlClient } from '../../src/store/postgres/client';
import { wrappedClient } from './faulty-client';

/** The statement that carries a call's `tool.started` with the step's held assistant message (statement 1). */
export const startStatement = (text: string) =>
  /INSERT INTO messages/.test(text) &&
  /svc_append_run_event_list/.test(text) &&
  !/UPDATE agent_runs/.test(text);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A client whose first start statement answers only once `until()` holds (at most `holdMs`, which
 * only a run that does not run the call ahead waits out), logged in `log` when sent and answered;
 * with `fail`, it is not sent and rejects then, as a failed statement would. `during` runs while it
 * is held, after `until()` held.
 */
export function heldStart(
  sql: SqlClient,
  log: string[],
  options: {
    until: () => boolean;
    fail?: boolean;
    holdMs?: number;
    during?: () => Promise<void>;
    /** Which start statement of the run is held (default the first). */
    nth?: number;
    /** Held before it is sent (not committed meanwhile), not only its answer. */
    unsent?: boolean;
  },
): SqlClient {
  const holdMs = options.holdMs ?? 1_500;
  let n = 0;
  const hold = async () => {
    const until = Date.now() + holdMs;
    while (!options.until() && Date.now() < until) await sleep(10);
    await options.during?.();
  };
  const wrap = <A extends unknown[], R>(send: (text: string, ...rest: A) => Promise<R>) => {
    return (text: string, ...rest: A): Promise<R> => {
      if (!startStatement(text) || ++n !== (options.nth ?? 1)) return send(text, ...rest);
      log.push('start sent');
      if (options.unsent)
        return hold().then(async () => {
          const answer = await send(text, ...rest);
          log.push('start answered');
          return answer;
        });
      if (options.fail)
        return hold().then(() => {
          log.push('start failed');
          throw new Error('injected: start statement failed');
        });
      return send(text, ...rest).then(async (answer) => {
        await hold();
        log.push('start answered');
        return answer;
      });
    };
  };
  return wrappedClient(sql, wrap);
}

/** Spies `name`'s `run` in `app`'s registry: `tool ran <name>` in `log` when it starts. */
export function logRuns(app: App, name: string, log: string[]) {
  const tool = app.tools.get(name);
  if (!tool) throw new Error(`no tool ${name}`);
  const run = tool.run;
  vi.spyOn(tool, 'run').mockImplementation((ctx, input) => {
    log.push(`tool ran ${name}`);
    return run.call(tool, ctx, input);
  });
}
