/**
 * The agent service: the one session API (`app.agent`, see ./types.ts) over the run loop.
 *
 * Per session, an explicit state machine: idle → running → idle, with cancelling (a cancel is
 * on its way) and compacting (summarizing older turns, between steps or on demand). The prompt
 * queue of a session is its `queued` runs in the ledger (FIFO, durable, visible to every
 * process). A prompt sent while a run is active joins the queue; after a run completes the next
 * queued prompt starts. After a failed or cancelled run the queue waits for the next send (or
 * `drain`) instead of feeding more prompts into a broken state.
 *
 * Only one run per session runs at a time, across processes too: a run is claimed in a database
 * transaction that refuses while another live process runs one in the same session.
 * @module
 */

import type { FinalRunStatus } from '../runs/run-ledger';
import { withReadScope } from '../store/read-scope';
import { agentKinds } from './agent-kinds';
import type { AgentDeps } from './deps';
import { createAgentHost } from './host';
import { drainAfterCommit, enqueueNow, queueStatus, removeQueued, sendNow } from './prompt-queue';
import { cancelRun, cancelSession, closeRuns, waitIdle, waitRun } from './run-cancel';
import { runChild } from './run-child';
import { summarizeSession } from './run-compaction';
import { drainQueue, resumeRun } from './run-control';
import { busyElsewhere, createAgentCore, stateOf } from './session-runtime';
import { subscribeSession } from './subscribe';
import type { AgentService, PromptSection, SessionRuntimeStatus } from './types';

export function createAgentService(deps: AgentDeps): AgentService {
  /** The sections other domains add to the system prompt (addPromptSection), in order. */
  const promptSections: PromptSection[] = [];
  const host = createAgentHost(deps, promptSections);
  const core = createAgentCore(deps, host);
  const state = deps.agentState;

  const service: AgentService = {
    createSession: async (input) => await host.sessions.create(input),
    // One read scope: the session row read once for the send (../store/read-scope.ts).
    send: async (input) => {
      // A run queued behind one of this node: drained after its transaction's COMMIT when that
      // run finished meanwhile (`drainAfterCommit`, p-flake).
      let behind: string | undefined;
      const queuedBehind = (id: string) => {
        behind = id;
      };
      if (input.joinTransaction) {
        const transactions = host.store.transactions;
        const sent = await withReadScope(() =>
          transactions.join(() => sendNow(core, input, queuedBehind), input.transaction),
        );
        // Its caller's COMMIT is still to come: the drain goes after it (p-aftercommit).
        const id = behind;
        if (id !== undefined) {
          transactions.afterTransaction(() => void drainAfterCommit(core, id), input.transaction);
        }
        return sent;
      }
      const sent = await withReadScope(() =>
        // Its body with its token, no async scope (p-txcheck): the run it launches gets the token
        // (`RunExecution.transaction`), its model's resolution joining the body while it is open.
        host.store.transactions.runWith((transaction) =>
          sendNow(core, transaction ? { ...input, transaction } : input, queuedBehind),
        ),
      );
      await drainAfterCommit(core, behind);
      return sent;
    },
    async run(input) {
      const sent = await service.send(input);
      const onAbort = async () => {
        try {
          await service.cancelRun(sent.run_id, 'cancelled by the caller');
        } catch {
          // already over
        }
      };
      input.signal?.addEventListener('abort', onAbort, { once: true });
      try {
        return await service.wait(sent.run_id);
      } finally {
        input.signal?.removeEventListener('abort', onAbort);
      }
    },
    enqueue: async (input) => {
      let behind: string | undefined;
      const queued = await withReadScope(() =>
        core.atomically(() =>
          enqueueNow(core, input, (id) => {
            behind = id;
          }),
        ),
      );
      await drainAfterCommit(core, behind);
      return queued;
    },
    async drain(sessionId) {
      await host.sessions.require(sessionId);
      return await drainQueue(core, sessionId);
    },
    queue: async (sessionId) => await queueStatus(core, sessionId),
    removeQueued: async (runId) => await removeQueued(core, runId),
    async state(sessionId): Promise<SessionRuntimeStatus> {
      await host.sessions.require(sessionId);
      const rt = core.runtime(sessionId);
      const other = await busyElsewhere(host, sessionId);
      return {
        session_id: sessionId,
        state: await stateOf(core, sessionId),
        run_id: rt.runId,
        busy_elsewhere: other
          ? { run_id: other.id, pid: other.pid, host: other.host, started_at: other.started_at }
          : null,
        queue_length: (await host.runs.queued(sessionId)).length,
      };
    },
    cancel: async (sessionId, options) => await cancelSession(core, sessionId, options),
    cancelRun: async (runId, reason) => await cancelRun(core, runId, reason),
    finishWith(runId, build) {
      core.finishWrites.set(runId, build);
      return () => {
        if (core.finishWrites.get(runId) === build) core.finishWrites.delete(runId);
      };
    },
    wait: (runId, options) => waitRun(core, runId, options),
    waitIdle: (sessionId, options) => waitIdle(core, sessionId, options),
    result: ((runId: string, options?: { text: false }) =>
      options?.text === false ? core.result(runId, false) : core.result(runId)) as AgentService['result'],
    subscribe: async (sessionId, listener, options) =>
      await subscribeSession(host, sessionId, listener, options),
    pendingPermissions: (sessionId) => host.permissions.pending(sessionId),
    answerPermission: async (requestId, decision, by, message) =>
      await host.permissions.answer(requestId, decision, { by, message }),
    attach: (sessionId, client) => host.permissions.attach(sessionId, client),
    get permissions() {
      return host.permissions;
    },
    summarize: (sessionId, options) => summarizeSession(core, sessionId, options),
    requestCompaction(sessionId, options = {}) {
      const rt = core.runtime(sessionId);
      if (!rt.runId || !rt.controller) return false;
      rt.compactRequested = options.reason ?? 'manual';
      return true;
    },
    runChild: (input) => runChild(core, input),
    resume: (runId) => resumeRun(core, runId),
    kinds: () => agentKinds(host.config),
    active() {
      return [...core.runtimes.entries()]
        .filter(([, rt]) => rt.runId !== null)
        .map(([sessionId, rt]) => ({ session_id: sessionId, run_id: rt.runId!, state: rt.state }));
    },
    async currentSession() {
      const id = await state.currentSession();
      if (!id) return null;
      return (await host.sessions.get(id)) ? id : null;
    },
    async setCurrentSession(sessionId) {
      if (sessionId === null) {
        await state.clearCurrentSession();
        return;
      }
      await host.sessions.require(sessionId);
      await state.setCurrentSession(sessionId, host.clock.now());
    },
    promptSections,
    addPromptSection(section) {
      promptSections.push(section);
    },
    close: () => closeRuns(core),
  };
  return service;
}

export type { FinalRunStatus };
