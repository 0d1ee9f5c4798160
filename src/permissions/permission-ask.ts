/**
 * `ask` and `answer` of the permission service: the policy shortcuts, the refusals (unverified
 * under --yolo, nobody attached), a pending request that waits for the first answer, and the
 * answer (a session grant also settles the requests it covers).
 * @module
 */
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { SessionEventPayloads } from '../events/types';
import type { Clock, Ids } from '../util/ids';
import { ANY_SCOPE, type GrantRepository } from './grant-repository';
import {
  PERMISSION_DECISIONS,
  type PendingPermission,
  type PermissionAskContext,
  type PermissionDecision,
  type PermissionRequest,
  type PermissionVia,
} from './permission-types';

export interface Waiter {
  pending: PendingPermission;
  root: string;
  resolve: (via: PermissionVia) => void;
  reject: (error: unknown) => void;
}

/** What `ask` shares with the rest of the permission service. */
export interface AskCore {
  config: () => Config;
  clock: Clock;
  ids: Ids;
  grants: Pick<GrantRepository, 'add' | 'has'>;
  waiters: Map<string, Waiter>;
  rootOf(sessionId: string): Promise<string>;
  isAttached(sessionId: string, root: string): boolean;
  check(request: PermissionRequest, context: PermissionAskContext): Promise<PermissionVia | 'ask'>;
  ledger(runId: string | undefined, type: string, payload: Record<string, unknown>): void;
  publish<T extends 'permission.requested' | 'permission.resolved'>(
    sessionId: string,
    root: string,
    type: T,
    payload: SessionEventPayloads[T],
  ): void;
  settle(waiter: Waiter, decision: PermissionDecision, by: string, message?: string): void;
}

export async function askPermission(
  core: AskCore,
  request: PermissionRequest,
  context: PermissionAskContext,
): Promise<PermissionVia> {
  const { waiters, ledger, publish, settle } = core;
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
  const decided = new Promise<PermissionVia>((resolve, reject) => {
    waiters.set(pending.request_id, { pending, root, resolve, reject });
  });
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
  const onAbort = () => {
    const waiter = waiters.get(pending.request_id);
    if (!waiter) return;
    settle(waiter, 'deny', 'cancel');
    waiter.reject(new SvcError('cancelled', `permission request for ${request.title} was cancelled`));
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
  if (decision === 'allow_session') {
    // The new grant may cover other requests already waiting in the same family.
    for (const other of [...waiters.values()]) {
      if (
        other.root === waiter.root &&
        (await core.grants.has(other.root, other.pending.tool, other.pending.scope ?? undefined)) &&
        // still waiting after the read (not answered or cancelled meanwhile)
        waiters.get(other.pending.request_id) === other
      ) {
        settle(other, 'allow_session', by);
        other.resolve('session_grant');
      }
    }
  }
  return pending;
}
