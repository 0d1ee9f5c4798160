/**
 * The permission service's shapes: a request, its context, a pending request, a grant, the
 * service. See ./permission-service.ts.
 * @module
 */

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
  check(request: PermissionRequest, context: PermissionAskContext): Promise<PermissionVia | 'ask'>;
  /** Requests waiting for an answer in this process (of one session family, or all). */
  pending(sessionId?: string): PendingPermission[];
  /**
   * Requests waiting for an answer on any node (of one session family, or all): on the PostgreSQL
   * store also the stored requests of running runs held by other nodes (./permission-durable.ts);
   * on SQLite the same as `pending`.
   */
  listPending(sessionId?: string): Promise<PendingPermission[]>;
  /** The tool calls of a run that wait for a stored request (a resumed run runs them: they never started). */
  waitingCalls(runId: string): Promise<string[]>;
  /**
   * Answer a pending request; first answer wins (a late one is a not_found error). `message` is
   * the operator's note: kept in the ledger, and a deny's reason the model reads.
   */
  answer(
    requestId: string,
    decision: PermissionDecision,
    options?: { by?: string; message?: string },
  ): Promise<PendingPermission>;
  grants(sessionId: string): Promise<PermissionGrant[]>;
  /** Every session's grants, oldest first (the enforcement readout). */
  allGrants(): Promise<PermissionGrant[]>;
  /** Removes every session grant of the session family; returns how many. */
  revokeGrants(sessionId: string): Promise<number>;
  /**
   * A surface says it is attached to a session (or '*' for all) and answers its permission
   * requests. Returns the detach function.
   */
  attach(sessionId: string, client: string): () => void;
  attachments(sessionId?: string): PermissionAttachment[];
}
