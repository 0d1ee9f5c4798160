/**
 * What the session tools check before they change a session: no active run (its own or one in
 * another process).
 * @module
 */
import { SvcError } from '../errors';
import type { ToolHost } from './core/types';

/** Refuses with `conflict` while the session has an active run. */
export const busyGuard = async (app: ToolHost, sessionId: string, what: string) => {
  const state = await app.agent.state(sessionId);
  if (state.state !== 'idle' || state.busy_elsewhere) {
    throw new SvcError(
      'conflict',
      `session ${sessionId} has an active run; ${what} when it is idle (wait for the run or cancel it)`,
    );
  }
};
