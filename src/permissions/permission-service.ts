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
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { SessionEventPayloads } from '../events/types';
import type { RunLedger } from '../runs/run-ledger';
import type { SessionStore } from '../sessions/session-store';
import type { Db } from '../store/db';
import { statementCache } from '../store/statement-cache';
import type { Clock, Ids } from '../util/ids';

/** What a tool asks the operator to approve (`ctx.ask`). */
export interface PermissionRequest {
  tool: string;
  /** What is being done, for the prompt: `write src/a.ts`, `bash: npm test`. */
  title: string;
  /** Keys a session-wide grant: same tool + same scope skips the prompt next time. */
  scope?: string;
  /** Analysis says this call only reads (e.g. `git status`): policy may skip the prompt. */
  safe?: boolean;
  /** Shown in the prompt: the diff of an edit, the command of a bash call… (metadata, redacted). */
  details?: Record<string, unknown>;
  /** Cannot be verified before it runs (src/workspace/context.ts ApprovalRequest): always asked, refused under --yolo. */
  unverified?: string;
}

export const PERMISSION_DECISIONS = ['allow_once', 'allow_session', 'deny'] as const;
export type PermissionDecision = (typeof PERMISSION_DECISIONS)[number];

/** Why a request was allowed without a prompt, or that the operator answered it. */
export type PermissionVia = 'allowed_tools' | 'yolo' | 'session_grant' | 'read_only' | 'operator';

export interface PermissionAskContext {
  sessionId?: string;
  runId?: string;
  toolCallId?: string;
  /** --yolo / --dangerously-skip-permissions for this run. */
  yolo?: boolean;
  /** Overrides `permissions.unattended` for this run. */
  unattended?: 'fail' | 'wait';
  signal?: AbortSignal;
}

export interface PendingPermission {
  request_id: string;
  session_id: string;
  run_id: string | null;
  tool_call_id: string | null;
  tool: string;
  title: string;
  scope: string | null;
  safe: boolean;
  details: Record<string, unknown> | null;
  created_at: number;
}

export interface PermissionGrant {
  session_id: string;
  tool: string;
  scope: string;
  created_at: number;
}

export interface PermissionAttachment {
  id: string;
  session_id: string;
  client: string;
}

export interface PermissionService {
  /**
   * Ask for a request on behalf of a run. Resolves when allowed (saying how); throws a
   * `forbidden` SvcError on deny or when nobody can answer, `cancelled` when the signal aborts.
   */
  ask(request: PermissionRequest, context: PermissionAskContext): Promise<PermissionVia>;
  /** The policy decision without prompting: how it would be allowed, or 'ask'. */
  check(request: PermissionRequest, context: PermissionAskContext): PermissionVia | 'ask';
  /** Requests waiting for an answer (of one session family, or all). */
  pending(sessionId?: string): PendingPermission[];
  /**
   * Answer a pending request; first answer wins (a late one is a not_found error). `message` is
   * the operator's note: kept in the ledger, and a deny's reason the model reads.
   */
  answer(
    requestId: string,
    decision: PermissionDecision,
    options?: { by?: string; message?: string },
  ): PendingPermission;
  grants(sessionId: string): PermissionGrant[];
  /** Removes every session grant of the session family; returns how many. */
  revokeGrants(sessionId: string): number;
  /**
   * A surface says it is attached to a session (or '*' for all) and answers its permission
   * requests. Returns the detach function.
   */
  attach(sessionId: string, client: string): () => void;
  attachments(sessionId?: string): PermissionAttachment[];
}

export interface PermissionServiceDeps {
  config: () => Config;
  db: () => Db;
  bus: EventBus;
  clock: Clock;
  ids: Ids;
  sessions: SessionStore;
  runs: RunLedger;
}

interface Waiter {
  pending: PendingPermission;
  root: string;
  resolve: (via: PermissionVia) => void;
  reject: (error: unknown) => void;
}

const ANY_SCOPE = '*';

export function createPermissionService(deps: PermissionServiceDeps): PermissionService {
  const sql = statementCache(deps.db);
  const waiters = new Map<string, Waiter>();
  const attachments = new Map<string, PermissionAttachment>();

  const rootOf = (sessionId: string): string => deps.sessions.root(sessionId);

  const hasGrant = (root: string, tool: string, scope: string | undefined) => {
    const row = sql(
      'SELECT 1 FROM permission_grants WHERE session_id = ? AND tool = ? AND scope IN (?, ?) LIMIT 1',
    ).get(root, tool, scope ?? ANY_SCOPE, ANY_SCOPE);
    return row !== undefined;
  };

  const isAttached = (sessionId: string, root: string) => {
    for (const a of attachments.values()) {
      if (a.session_id === '*' || a.session_id === sessionId || a.session_id === root) return true;
    }
    return false;
  };

  const ledger = (runId: string | undefined, type: string, payload: Record<string, unknown>) => {
    if (!runId) return;
    try {
      deps.runs.append(runId, type, payload);
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

  const check = (request: PermissionRequest, context: PermissionAskContext): PermissionVia | 'ask' => {
    if (request.unverified) return 'ask';
    const config = deps.config();
    if (config.permissions.allowed_tools.includes(request.tool)) return 'allowed_tools';
    if (context.yolo) return 'yolo';
    if (context.sessionId && hasGrant(rootOf(context.sessionId), request.tool, request.scope))
      return 'session_grant';
    if (request.safe && config.permissions.auto_allow_read_only_bash) return 'read_only';
    return 'ask';
  };

  const settle = (waiter: Waiter, decision: PermissionDecision, by: string, message?: string) => {
    waiters.delete(waiter.pending.request_id);
    const { pending } = waiter;
    ledger(pending.run_id ?? undefined, 'permission.resolved', {
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

  return {
    check,
    async ask(request, context) {
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
      const via = check(request, context);
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
      const root = rootOf(context.sessionId);
      const unattended = context.unattended ?? deps.config().permissions.unattended;
      if (unattended === 'fail' && !isAttached(context.sessionId, root)) {
        ledger(context.runId, 'permission.unattended', { tool: request.tool, title: request.title });
        throw new SvcError(
          'forbidden',
          `permission needed to ${request.title}, but no one is attached to approve it (headless run). ` +
            `Re-run with --yolo, add "${request.tool}" to [permissions].allowed_tools, or run it where an operator can answer (TUI, HTTP client)`,
          { details: { reason: 'unattended', tool: request.tool } },
        );
      }
      const pending: PendingPermission = {
        request_id: deps.ids.next('perm'),
        session_id: context.sessionId,
        run_id: context.runId ?? null,
        tool_call_id: context.toolCallId ?? null,
        tool: request.tool,
        title: request.title,
        scope: request.scope ?? null,
        safe: request.safe === true,
        details: request.details ?? null,
        created_at: deps.clock.now(),
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
    },
    pending(sessionId) {
      const all = [...waiters.values()];
      const list = sessionId
        ? all.filter((w) => w.pending.session_id === sessionId || w.root === sessionId)
        : all;
      return list.map((w) => w.pending).sort((a, b) => a.created_at - b.created_at);
    },
    answer(requestId, decision, options = {}) {
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
        sql(
          'INSERT OR IGNORE INTO permission_grants (session_id, tool, scope, created_at) VALUES (?, ?, ?, ?)',
        ).run(waiter.root, pending.tool, pending.scope ?? ANY_SCOPE, deps.clock.now());
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
            hasGrant(other.root, other.pending.tool, other.pending.scope ?? undefined)
          ) {
            settle(other, 'allow_session', by);
            other.resolve('session_grant');
          }
        }
      }
      return pending;
    },
    grants(sessionId) {
      return sql('SELECT * FROM permission_grants WHERE session_id = ? ORDER BY created_at, tool').all(
        rootOf(sessionId),
      ) as PermissionGrant[];
    },
    revokeGrants(sessionId) {
      return sql('DELETE FROM permission_grants WHERE session_id = ?').run(rootOf(sessionId)).changes;
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
