/**
 * `ask` and `answer` of the permission service: the policy shortcuts, the refusals (unverified
 * under --yolo, nobody attached), a pending request that waits for the first answer, and the
 * answer (a session grant also settles the requests it covers).
 * @module
 */
import { isHandOver, SvcError } from '../errors';
import type { AskCore, Waiter } from './ask-core';
import { ANY_SCOPE } from './grant-repository';
import {
  answerStored,
  cancelStored,
  outcomeOf,
  resumedRequest,
  storeRequest,
  watch,
} from './permission-durable';
import {
  PERMISSION_DECISIONS,
  type PendingPermission,
  type PermissionAskContext,
  type PermissionDecision,
  type PermissionRequest,
  type PermissionVia,
} from './permission-types';

export async function askPermission(
  core: AskCore,
  request: PermissionRequest,
  context: PermissionAskContext,
): Promise<PermissionVia> {
  const { ledger, publish } = core;
  if (request.unverified && context.yolo) {
    ledger(context.runId, 'permission.refused', {
      tool: request.tool,
      title: request.title,
      reason: 'unverified',
    });
    throw new SvcError(
      'forbidden',
      `refused under --yolo: ${request.title}: ${request.unverified}. --yolo never runs what svc cannot check ` +
        'when no OS sandbox contains it: run without --yolo to approve it yourself, or write the target as a literal path inside the workspace',
      { details: { reason: 'unverified_yolo', tool: request.tool } },
    );
  }
  const via = await core.check(request, context);
  if (via !== 'ask') {
    ledger(context.runId, 'permission.allowed', { tool: request.tool, title: request.title, via });
    return via;
  }
  if (!context.sessionId) {
    throw new SvcError(
      'forbidden',
      `permission needed to ${request.title}, and there is no session to ask in`,
    );
  }
  context.signal?.throwIfAborted();
  const root = await core.rootOf(context.sessionId);
  // A run resumed on another node asks again for a call that waited: the same request.
  const resumed = await resumedRequest(core, context);
  if (resumed?.decision) {
    await core.durable?.requests.close(resumed.request_id, core.clock.now());
    const outcome = outcomeOf(resumed, resumed.decision, resumed.decided_by ?? 'operator', resumed.message);
    if ('error' in outcome) throw outcome.error;
    return outcome.via;
  }
  if (resumed) return await waitFor(core, resumed, resumed.root_session_id, context, resumed.expires_at);
  const unattended = context.unattended ?? core.config().permissions.unattended;
  if (unattended === 'fail' && !core.isAttached(context.sessionId, root)) {
    ledger(context.runId, 'permission.unattended', { tool: request.tool, title: request.title });
    throw new SvcError(
      'forbidden',
      `permission needed to ${request.title}, but no one is attached to approve it (headless run). ` +
        `Re-run with --yolo, add "${request.tool}" to [permissions].allowed_tools, or run it where an operator can answer (TUI, HTTP client)`,
      { details: { reason: 'unattended', tool: request.tool } },
    );
  }
  const pending: PendingPermission = {
    request_id: core.ids.next('perm'),
    session_id: context.sessionId,
    run_id: context.runId ?? null,
    tool_call_id: context.toolCallId ?? null,
    tool: request.tool,
    title: request.title,
    scope: request.scope ?? null,
    safe: request.safe === true,
    details: request.details ?? null,
    created_at: core.clock.now(),
  };
  // Stored before anyone can see it, so every node that hears of it can answer it.
  await storeRequest(core, pending, root);
  const decided = waitFor(core, pending, root, context);
  ledger(context.runId, 'permission.requested', {
    request_id: pending.request_id,
    tool: request.tool,
    title: request.title,
  });
  publish(context.sessionId, root, 'permission.requested', {
    session_id: context.sessionId,
    request_id: pending.request_id,
    ...(context.runId ? { run_id: context.runId } : {}),
    tool: request.tool,
    title: request.title,
    ...(request.details ? { details: request.details } : {}),
  });
  return await decided;
}

/** The wait for the first answer (or the cancel, or the stored deadline). */
async function waitFor(
  core: AskCore,
  pending: PendingPermission,
  root: string,
  context: PermissionAskContext,
  expiresAt?: number,
): Promise<PermissionVia> {
  const { waiters, settle } = core;
  let waiter: Waiter | undefined;
  const decided = new Promise<PermissionVia>((resolve, reject) => {
    waiter = { pending, root, resolve, reject };
    waiters.set(pending.request_id, waiter);
  });
  // Only a run's request is stored (./permission-durable.ts); another waits in memory.
  const stored = core.durable !== undefined && pending.run_id !== null;
  if (core.durable && stored && waiter)
    watch(core, waiter, expiresAt ?? pending.created_at + core.durable.timeoutMs());
  const onAbort = () => {
    const waiter = waiters.get(pending.request_id);
    if (!waiter) return;
    const cancelled = new SvcError('cancelled', `permission request for ${pending.title} was cancelled`);
    if (!stored) {
      settle(waiter, 'deny', 'cancel');
      waiter.reject(cancelled);
      return;
    }
    waiters.delete(pending.request_id);
    // Handed over at a clean stop: the request stays pending for the node that adopts the run.
    if (isHandOver(context.signal?.reason)) {
      waiter.reject(cancelled);
      return;
    }
    void cancelStored(core, waiter).then((won) => {
      if (won) settle(waiter, 'deny', 'cancel');
    });
    waiter.reject(cancelled);
  };
  context.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await decided;
  } finally {
    context.signal?.removeEventListener('abort', onAbort);
  }
}

/** Answer a pending request; first answer wins (a late one is a not_found error). */
export async function answerPermission(
  core: AskCore,
  requestId: string,
  decision: PermissionDecision,
  options: { by?: string; message?: string },
): Promise<PendingPermission> {
  const { waiters, settle } = core;
  if (!PERMISSION_DECISIONS.includes(decision)) {
    throw new SvcError(
      'invalid_input',
      `decision: "${decision}" is not one of ${PERMISSION_DECISIONS.join(', ')}`,
    );
  }
  const held = waiters.get(requestId);
  if (core.durable && (!held || held.pending.run_id !== null)) {
    const answered = await answerStored(core, requestId, decision, options);
    if (decision === 'allow_session') await coverWaiting(core, answered.root, options.by ?? 'operator');
    return answered.pending;
  }
  const waiter = waiters.get(requestId);
  if (!waiter) {
    throw new SvcError(
      'not_found',
      `request_id: no pending permission request "${requestId}" (already answered, cancelled, or unknown)`,
    );
  }
  const by = options.by ?? 'operator';
  const { pending } = waiter;
  if (decision === 'allow_session') {
    // Claimed before the grant is stored (async): a second answer meanwhile is not_found, as it
    // is once this one has settled; a failed write puts the request back for another answer.
    waiters.delete(requestId);
    try {
      await core.grants.add(waiter.root, pending.tool, pending.scope ?? ANY_SCOPE, core.clock.now());
    } catch (error) {
      waiters.set(requestId, waiter);
      throw error;
    }
  }
  const message = options.message?.trim() || undefined;
  settle(waiter, decision, by, message);
  if (decision === 'deny') {
    const says = message ? ` (the operator says: ${message})` : '';
    waiter.reject(
      new SvcError(
        'forbidden',
        `permission denied by the operator: ${pending.title}${says}. Do not retry the same call; ask the user or try another approach`,
        { details: { reason: 'denied', tool: pending.tool } },
      ),
    );
  } else {
    waiter.resolve('operator');
  }
  if (decision === 'allow_session') await coverWaiting(core, waiter.root, by);
  return pending;
}

/** A new session grant may cover other requests already waiting here in the same family. */
async function coverWaiting(core: AskCore, root: string, by: string): Promise<void> {
  const { waiters, settle } = core;
  for (const other of [...waiters.values()]) {
    if (
      other.root === root &&
      (await core.grants.has(other.root, other.pending.tool, other.pending.scope ?? undefined)) &&
      // still waiting after the read (not answered or cancelled meanwhile)
      waiters.get(other.pending.request_id) === other &&
      // a stored request: this answer is its first (else the one that was first settles it)
      (!core.durable ||
        other.pending.run_id === null ||
        (await core.durable.requests.decide(other.pending.request_id, {
          decision: 'allow_session',
          by,
          message: null,
          at: core.clock.now(),
        })) !== undefined)
    ) {
      settle(other, 'allow_session', by);
      core.durable?.watches.get(other.pending.request_id)?.();
      if (core.durable)
        void core.durable.requests.close(other.pending.request_id, core.clock.now()).catch(() => {});
      other.resolve('session_grant');
    }
  }
}
