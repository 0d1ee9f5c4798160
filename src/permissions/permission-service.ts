/**
 * Permission service: `ctx.ask` of agent runs. A request is allowed without a prompt when, in
 * this order: the tool is in `[permissions].allowed_tools`; the run skips permissions (`--yolo`);
 * a session grant ("allow for session", keyed by tool + scope, held by the family's root session
 * so it covers sub-agents) covers it; or the tool says the call only reads (`safe`) and
 * `permissions.auto_allow_read_only_bash` is on. Otherwise `permission.requested` is published and
 * the call waits for an answer (allow once, allow for session, deny) from whichever surface is
 * attached: first answer wins. A deny throws a `forbidden` SvcError the model reads.
 *
 * A request marked `unverified` (a bash write whose target is only known at run time, with no OS
 * sandbox to contain it; issue 15) skips none of those shortcuts: it is always put to the
 * operator, and under --yolo it is refused with the reason and the way out.
 *
 * Nobody attached: with `permissions.unattended = "fail"` (default, and always for `svc run`) the
 * call fails at once with a message that says how to allow it, instead of hanging; with "wait" it
 * waits until a surface attaches and answers (or the run is cancelled).
 * @module
 */
import type { Config } from '../config/schema';
import type { EventBus } from '../events/bus';
import type { SessionEventPayloads } from '../events/types';
import type { AgentRun } from '../runs/run-ledger';
import type { SessionStore } from '../sessions/session-store';
import type { Clock, Ids } from '../util/ids';
import type { DurableCore, Waiter } from './ask-core';
import { answerPermission, askPermission } from './permission-ask';
import { listPending } from './permission-durable';
import type {
  PermissionAskContext,
  PermissionAttachment,
  PermissionDecision,
  PermissionRequest,
  PermissionService,
  PermissionVia,
} from './permission-types';
import type { PermissionStores } from './stores';

export * from './permission-types';

export interface PermissionServiceDeps {
  config: () => Config;
  /** The grants' repositories (./stores.ts): SQLite or PostgreSQL. */
  stores: PermissionStores;
  bus: EventBus;
  clock: Clock;
  ids: Ids;
  sessions: Pick<SessionStore, 'root'>;
  /** The run ledger: the permission events, and whether a stored request's run still runs. */
  runs: {
    append(runId: string, type: string, payload?: Record<string, unknown>): Promise<unknown>;
    get(runId: string): Promise<Pick<AgentRun, 'status'> | undefined>;
  };
}

export function createPermissionService(deps: PermissionServiceDeps): PermissionService {
  const { grants } = deps.stores;
  const waiters = new Map<string, Waiter>();
  const attachments = new Map<string, PermissionAttachment>();

  const rootOf = async (sessionId: string): Promise<string> => await deps.sessions.root(sessionId);

  const isAttached = (sessionId: string, root: string) => {
    for (const a of attachments.values()) {
      if (a.session_id === '*' || a.session_id === sessionId || a.session_id === root) return true;
    }
    return false;
  };

  const ledger = async (runId: string | undefined, type: string, payload: Record<string, unknown>) => {
    if (!runId) return;
    try {
      await deps.runs.append(runId, type, payload);
    } catch {
      // The ledger is evidence, not a gate: a missing run row must not block a permission answer.
    }
  };

  const publish = <T extends 'permission.requested' | 'permission.resolved'>(
    sessionId: string,
    root: string,
    type: T,
    payload: SessionEventPayloads[T],
  ) => {
    deps.bus.publish(sessionId, type, payload);
    // A client attached to the parent session sees its sub-agents' requests too.
    if (root !== sessionId) deps.bus.publish(root, type, payload);
  };

  const check = async (
    request: PermissionRequest,
    context: PermissionAskContext,
  ): Promise<PermissionVia | 'ask'> => {
    if (request.unverified) return 'ask';
    const config = deps.config();
    if (config.permissions.allowed_tools.includes(request.tool)) return 'allowed_tools';
    if (context.yolo) return 'yolo';
    if (context.sessionId && (await grants.has(await rootOf(context.sessionId), request.tool, request.scope)))
      return 'session_grant';
    if (request.safe && config.permissions.auto_allow_read_only_bash) return 'read_only';
    return 'ask';
  };

  const settle = async (waiter: Waiter, decision: PermissionDecision, by: string, message?: string) => {
    // Only this waiter: the stand-in of a stored request answered here (./permission-durable.ts
    // `answerStored`) must not drop the run's own waiter, registered meanwhile by its resumed ask,
    // which nothing would wake then (CI, DURABLE-45; DURABLE-60).
    if (waiters.get(waiter.pending.request_id) === waiter) waiters.delete(waiter.pending.request_id);
    const { pending } = waiter;
    await ledger(pending.run_id ?? undefined, 'permission.resolved', {
      request_id: pending.request_id,
      tool: pending.tool,
      decision,
      by,
      ...(message ? { message } : {}),
    });
    publish(pending.session_id, waiter.root, 'permission.resolved', {
      session_id: pending.session_id,
      request_id: pending.request_id,
      tool: pending.tool,
      decision,
      by,
    });
  };

  // PostgreSQL: requests of runs are rows any node answers (./permission-durable.ts).
  const durable: DurableCore | undefined = deps.stores.requests && {
    requests: deps.stores.requests,
    timeoutMs: () => deps.config().permissions.wait_timeout_s * 1000,
    onResolved: (sessionId, listener) =>
      deps.bus.subscribe(sessionId, (event) => {
        if (event.type !== 'permission.resolved') return;
        const requestId = (event.payload as { request_id?: unknown }).request_id;
        if (typeof requestId === 'string') listener(requestId);
      }),
    running: async (runId) => (await deps.runs.get(runId))?.status === 'running',
    pollMs: 1_000,
    watches: new Map(),
  };

  const core = {
    config: deps.config,
    clock: deps.clock,
    ids: deps.ids,
    grants,
    waiters,
    rootOf,
    isAttached,
    check,
    ledger,
    publish,
    settle,
    durable,
  };

  return {
    check,
    ask: (request, context) => askPermission(core, request, context),
    pending(sessionId) {
      const all = [...waiters.values()];
      const list = sessionId
        ? all.filter((w) => w.pending.session_id === sessionId || w.root === sessionId)
        : all;
      return list.map((w) => w.pending).sort((a, b) => a.created_at - b.created_at);
    },
    listPending: (sessionId) => listPending(core, sessionId),
    async waitingCalls(runId) {
      return durable ? await durable.requests.waitingCalls(runId) : [];
    },
    answer: async (requestId, decision, options = {}) =>
      await answerPermission(core, requestId, decision, options),
    async grants(sessionId) {
      return await grants.list(await rootOf(sessionId));
    },
    allGrants: () => deps.stores.grantQueries.all(),
    async revokeGrants(sessionId) {
      return await grants.revoke(await rootOf(sessionId));
    },
    attach(sessionId, client) {
      const id = deps.ids.next('att');
      attachments.set(id, { id, session_id: sessionId, client });
      return () => {
        attachments.delete(id);
      };
    },
    attachments(sessionId) {
      const all = [...attachments.values()];
      return sessionId ? all.filter((a) => a.session_id === sessionId || a.session_id === '*') : all;
    },
  };
}
