/**
 * What one prompt turn of an ACP session works with: the open session (its App, the attach
 * handle, the permission requests outstanding at the client) and the queue that sends
 * `session/update` notifications in event order.
 * @module
 */
import type * as acp from '@agentclientprotocol/sdk/unstable';
import type { App } from '../../app';
import type { Logger } from '../../log';

export interface OpenSession {
  /** The workspace key of its App (the pool may close the App; the session then reopens it). */
  workspace: string;
  app: App;
  detach(): void;
  /** Outstanding permission requests to the client, by svc request id. */
  asks: Map<string, AbortController>;
  /** Prompts running (the App is not closed while one does). */
  running: number;
  /** The pool closed its App: reopen it before the next use. */
  evicted: boolean;
}

/** Notifications go out in event order, and all of them before the prompt's response. */
export interface UpdateQueue {
  /** Send a `session/update` after everything queued before it. */
  update(update: acp.SessionUpdate): void;
  /**
   * Send the update `pending` resolves to (none when undefined) in this place of the order: it is
   * read from the store now, sent after everything queued before it.
   */
  updateFrom(pending: Promise<acp.SessionUpdate | undefined>): void;
  /** Run a step after everything queued before it (it does not hold the queue up itself). */
  after(step: () => void): void;
  /** Resolves when everything queued so far has gone out. */
  drained(): Promise<unknown>;
}

export interface TurnContext {
  app: App;
  session: OpenSession;
  sessionId: string;
  client: acp.AgentContext;
  log: Logger;
  updates: UpdateQueue;
}

export function createUpdateQueue(client: acp.AgentContext, sessionId: string, log: Logger): UpdateQueue {
  let chain: Promise<unknown> = Promise.resolve();
  return {
    update(u) {
      chain = chain
        .then(() => client.notify('session/update', { sessionId, update: u }))
        .catch((error) => log.warn('acp update failed', { error }));
    },
    updateFrom(pending) {
      // Observed at once, so a failed read is logged here and never unhandled.
      const settled = pending.catch((error) => {
        log.warn('acp update failed', { error });
        return undefined;
      });
      chain = chain
        .then(() => settled)
        .then((u) => (u ? client.notify('session/update', { sessionId, update: u }) : undefined))
        .catch((error) => log.warn('acp update failed', { error }));
    },
    after(step) {
      chain = chain.then(step);
    },
    drained: () => chain,
  };
}
