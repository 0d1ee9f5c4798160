/**
 * What the permission service's `ask` and `answer` share (./permission-ask.ts,
 * ./permission-durable.ts): this process's waiters, the policy check, the ledger and the bus, and
 * on PostgreSQL the stored requests.
 * @module
 */
import type { Config } from '../config/schema';
import type { SessionEventPayloads } from '../events/types';
import type { Clock, Ids } from '../util/ids';
import type { GrantRepository } from './grant-repository';
import type { PermissionRequestRepository } from './permission-request-repository';
import type {
  PendingPermission,
  PermissionAskContext,
  PermissionDecision,
  PermissionRequest,
  PermissionVia,
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
  /** Requests stored as rows (PostgreSQL): answered on any node, resumed elsewhere (./permission-durable.ts). */
  durable?: DurableCore;
}

export interface DurableCore {
  requests: PermissionRequestRepository;
  /** How long a new request waits for an answer (ms). */
  timeoutMs(): number;
  /** Calls `listener` with the request id of each `permission.resolved` of the session, from any node. */
  onResolved(sessionId: string, listener: (requestId: string) => void): () => void;
  /** Whether the run is still running (a request of an ended run is not pending any more). */
  running(runId: string): Promise<boolean>;
  /** The fallback poll of a waiting request (ms). */
  pollMs: number;
  /** The watches of this node's waiting requests, by request id (their stop functions). */
  watches: Map<string, () => void>;
}
