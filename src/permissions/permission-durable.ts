/**
 * Permission requests that survive the node (issue 19, item 4; docs/engine.md "Approvals that
 * survive restarts"). On the PostgreSQL store a run's pending request is also a row
 * (./permission-request-repository.ts), so:
 * - any node lists it (`listPending`: this node's waiters and the open rows of running runs);
 * - any node answers it: the first answer is one conditional UPDATE (of several nodes answering at
 *   once exactly one wins; a late one is the same not_found as today); that node records
 *   `permission.resolved` and publishes it. The node holding the run is woken by that event (the
 *   bus follows other nodes through LISTEN/NOTIFY) and reads the answer from the row, with a poll
 *   as the fallback when a notice is lost;
 * - the wait has a deadline stored with it (`[permissions] wait_timeout_s`): when it passes, the
 *   wait ends as a deny (`by: "timeout"`), decided by the same conditional UPDATE;
 * - a run resumed on another node after its node died finds its call's request (`resumed`) and
 *   waits for the same request id, or takes the answer given while no node held it.
 * This is the durable wait instead of DBOS `recv`: a run executes inside its workflow's DBOS step,
 * where `recv` is refused, and a resumed run does not replay DBOS's calls in their first order.
 * @module
 */
import { SvcError } from '../errors';
import type { AskCore, Waiter } from './ask-core';
import { ANY_SCOPE } from './grant-repository';
import type { StoredPermissionRequest } from './permission-request-repository';
import type {
  PendingPermission,
  PermissionAskContext,
  PermissionDecision,
  PermissionVia,
} from './permission-types';

/** The stored request of this call its run has not taken yet: the wait of a resumed run. */
export async function resumedRequest(
  core: AskCore,
  context: PermissionAskContext,
): Promise<StoredPermissionRequest | undefined> {
  if (!core.durable || !context.runId || !context.toolCallId) return undefined;
  return await core.durable.requests.ofCall(context.runId, context.toolCallId);
}

/** Store a new request of a run, with its deadline. */
export async function storeRequest(core: AskCore, pending: PendingPermission, root: string): Promise<void> {
  if (!core.durable || !pending.run_id) return;
  await core.durable.requests.insert({
    ...pending,
    run_id: pending.run_id,
    root_session_id: root,
    expires_at: pending.created_at + core.durable.timeoutMs(),
  });
}

/** What the waiting call gets for a decided request: how it was allowed, or the error it throws. */
export function outcomeOf(
  pending: PendingPermission,
  decision: PermissionDecision,
  by: string,
  message?: string | null,
): { via: PermissionVia } | { error: SvcError } {
  if (decision !== 'deny') return { via: 'operator' };
  if (by === 'cancel')
    return { error: new SvcError('cancelled', `permission request for ${pending.title} was cancelled`) };
  if (by === 'timeout')
    return {
      error: new SvcError(
        'forbidden',
        `permission request timed out: nobody answered "${pending.title}" in time ([permissions] wait_timeout_s). Do not retry the same call; ask the user or try another approach`,
        { details: { reason: 'timeout', tool: pending.tool } },
      ),
    };
  const says = message ? ` (the operator says: ${message})` : '';
  return {
    error: new SvcError(
      'forbidden',
      `permission denied by the operator: ${pending.title}${says}. Do not retry the same call; ask the user or try another approach`,
      { details: { reason: 'denied', tool: pending.tool } },
    ),
  };
}

/** Settle this node's waiter with a decision (once: a waiter no longer in the map is left alone). */
export function deliver(
  core: AskCore,
  waiter: Waiter,
  decision: PermissionDecision,
  by: string,
  message?: string | null,
): void {
  const id = waiter.pending.request_id;
  if (core.waiters.get(id) === waiter) core.waiters.delete(id);
  core.durable?.watches.get(id)?.();
  const outcome = outcomeOf(waiter.pending, decision, by, message);
  const settle = () => ('via' in outcome ? waiter.resolve(outcome.via) : waiter.reject(outcome.error));
  // Closed before the call goes on: a run resumed after this node dies then sees the call as
  // started (its outcome unknown), never as still waiting, once the tool may have acted.
  if (core.durable && waiter.pending.run_id !== null)
    core.durable.requests.close(id, core.clock.now()).then(settle, settle);
  else settle();
}

/**
 * Watch a waiting request's row: woken by `permission.resolved` of its session (any node), polled
 * as a fallback, and ended as a deny at its deadline.
 */
export function watch(core: AskCore, waiter: Waiter, expiresAt: number): void {
  const durable = core.durable;
  if (!durable) return;
  const id = waiter.pending.request_id;
  const waiting = () => core.waiters.get(id) === waiter;
  let reading = false;
  const check = async () => {
    if (reading || !waiting()) return;
    reading = true;
    try {
      const row = await durable.requests.get(id);
      if (row?.decision && waiting())
        deliver(core, waiter, row.decision, row.decided_by ?? 'operator', row.message);
    } catch {
      // the next poll reads it again
    } finally {
      reading = false;
    }
  };
  const expire = async () => {
    if (!waiting()) return;
    if (core.clock.now() < expiresAt) {
      timer = later(expire, expiresAt - core.clock.now());
      return;
    }
    try {
      const decided = await durable.requests.decide(id, {
        decision: 'deny',
        by: 'timeout',
        message: null,
        at: core.clock.now(),
      });
      if (decided && waiting()) {
        core.settle(waiter, 'deny', 'timeout');
        deliver(core, waiter, 'deny', 'timeout');
      } else await check();
    } catch {
      timer = later(expire, durable.pollMs);
    }
  };
  const off = durable.onResolved(waiter.pending.session_id, (requestId) => {
    if (requestId === id) void check();
  });
  const poll = setInterval(() => void check(), durable.pollMs);
  poll.unref?.();
  let timer = later(expire, expiresAt - core.clock.now());
  durable.watches.set(id, () => {
    durable.watches.delete(id);
    off();
    clearInterval(poll);
    clearTimeout(timer);
  });
}

/**
 * A cancelled wait: the row is decided as a cancel (unless an answer came first) and closed.
 * True when the cancel decided it (its `permission.resolved` is then to be recorded).
 */
export async function cancelStored(core: AskCore, waiter: Waiter): Promise<boolean> {
  const durable = core.durable;
  if (!durable) return true;
  const id = waiter.pending.request_id;
  durable.watches.get(id)?.();
  try {
    const decided = await durable.requests.decide(id, {
      decision: 'deny',
      by: 'cancel',
      message: null,
      at: core.clock.now(),
    });
    await durable.requests.close(id, core.clock.now());
    return decided !== undefined;
  } catch {
    // a request left open belongs to a run that is not running: it is not listed
    return true;
  }
}

/**
 * Answer a request held by any node (or by none, while its run waits for adoption): the first
 * answer decides the row, records `permission.resolved` and publishes it; this node's own waiter,
 * when it holds the run, is settled at once; another node's wakes on the event.
 */
export async function answerStored(
  core: AskCore,
  requestId: string,
  decision: PermissionDecision,
  options: { by?: string; message?: string },
): Promise<{ pending: PendingPermission; root: string }> {
  const durable = core.durable!;
  const local = core.waiters.get(requestId);
  const stored = local ? undefined : await durable.requests.get(requestId);
  const pending: PendingPermission | undefined =
    local?.pending ?? (stored ? withoutStorage(stored) : undefined);
  const root = local?.root ?? stored?.root_session_id;
  const open =
    local !== undefined ||
    (stored !== undefined && stored.decision === null && (await durable.running(stored.run_id)));
  if (!pending || !root || !open) throw notFound(requestId);
  const by = options.by ?? 'operator';
  const message = options.message?.trim() || undefined;
  const decided = await durable.requests.decide(requestId, {
    decision,
    by,
    message: message ?? null,
    at: core.clock.now(),
  });
  if (!decided) throw notFound(requestId);
  if (decision === 'allow_session') {
    try {
      await core.grants.add(root, pending.tool, pending.scope ?? ANY_SCOPE, core.clock.now());
    } catch (error) {
      await durable.requests.undecide(requestId).catch(() => {});
      throw error;
    }
  }
  // This node's waiter, also one registered while this answer was on its way: a run resumed here
  // whose ask read the row before this decision (DURABLE-60).
  const held = local ?? core.waiters.get(requestId);
  const waiter: Waiter = held ?? { pending, root, resolve: () => {}, reject: () => {} };
  core.settle(waiter, decision, by, message);
  if (held) deliver(core, held, decision, by, message);
  return { pending, root };
}

/** This node's waiters and the open stored requests of running runs (of one session family, or all). */
export async function listPending(core: AskCore, sessionId?: string): Promise<PendingPermission[]> {
  const local = [...core.waiters.values()];
  const mine = (session: string, root: string) => !sessionId || session === sessionId || root === sessionId;
  const list = local.filter((w) => mine(w.pending.session_id, w.root)).map((w) => w.pending);
  if (core.durable) {
    const seen = new Set(list.map((p) => p.request_id));
    for (const row of await core.durable.requests.open()) {
      if (seen.has(row.request_id) || !mine(row.session_id, row.root_session_id)) continue;
      if (await core.durable.running(row.run_id)) list.push(withoutStorage(row));
    }
  }
  return list.sort((a, b) => a.created_at - b.created_at);
}

/** A timer for `fn` after `ms` (at most setTimeout's ~24.8 days: `fn` checks the deadline again). */
function later(fn: () => Promise<void>, ms: number): NodeJS.Timeout {
  const timer = setTimeout(() => void fn(), Math.min(Math.max(0, ms), 2_147_483_647));
  timer.unref?.();
  return timer;
}

function withoutStorage(row: StoredPermissionRequest): PendingPermission {
  return {
    request_id: row.request_id,
    session_id: row.session_id,
    run_id: row.run_id,
    tool_call_id: row.tool_call_id,
    tool: row.tool,
    title: row.title,
    scope: row.scope,
    safe: row.safe,
    details: row.details,
    created_at: row.created_at,
  };
}

function notFound(requestId: string): SvcError {
  return new SvcError(
    'not_found',
    `request_id: no pending permission request "${requestId}" (already answered, cancelled, or unknown)`,
  );
}
