/**
 * The stored pending permission requests of runs (issue 19, item 4; `permission_requests`, on
 * PostgreSQL only: ./pg-permission-request-repository.ts). A request is open until the first
 * answer (`decide`, one conditional UPDATE: of several nodes answering at once exactly one wins);
 * it is closed once the run waiting for it has taken the answer. A run resumed on another node
 * finds its call's request (`ofCall`) and waits for it, or takes the answer given meanwhile.
 * @module
 */
import type { PendingPermission, PermissionDecision } from './permission-types';

export interface StoredPermissionRequest extends PendingPermission {
  root_session_id: string;
  run_id: string;
  /** When the wait ends as a deny if nobody answered (ms since the epoch). */
  expires_at: number;
  decision: PermissionDecision | null;
  decided_by: string | null;
  message: string | null;
  decided_at: number | null;
  closed_at: number | null;
}

export interface PermissionRequestRepository {
  insert(
    request: PendingPermission & { run_id: string; root_session_id: string; expires_at: number },
  ): Promise<void>;
  get(requestId: string): Promise<StoredPermissionRequest | undefined>;
  /** The request of a run's tool call that its run has not taken yet (answered or not). */
  ofCall(runId: string, toolCallId: string): Promise<StoredPermissionRequest | undefined>;
  /** Every request not answered yet, oldest first. */
  open(): Promise<StoredPermissionRequest[]>;
  /** The first answer: the request as decided, or undefined when it was answered already (or is unknown). */
  decide(
    requestId: string,
    answer: { decision: PermissionDecision; by: string; message: string | null; at: number },
  ): Promise<StoredPermissionRequest | undefined>;
  /** Take back an answer whose effects failed (the grant of allow_session was not stored). */
  undecide(requestId: string): Promise<void>;
  /** The waiting run took the answer. */
  close(requestId: string, at: number): Promise<void>;
  /**
   * The tool calls of a run waiting for a request its run has not taken, and that took none
   * before (they never started: a tool asks before it acts).
   */
  waitingCalls(runId: string): Promise<string[]>;
}
