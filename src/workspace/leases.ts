/**
 * One writer per workspace (issue 18): a run that is about to change the workspace takes its
 * lease first and keeps it until it ends. The lease is a row with an expiry
 * (./lease-repository.ts), renewed while held, so a process or node that dies without releasing
 * it frees the workspace once the expiry passes. A second run waits (polling, cancellable) rather
 * than failing: two runs on one workspace from two nodes are serialized.
 * @module
 */
import { SvcError } from '../errors';
import type { Clock } from '../util/ids';
import type { LeaseRepository, WorkspaceLease } from './lease-repository';

export interface LeaseHandle {
  readonly workspace: string;
  readonly holder: string;
  /** True once a renewal found the lease gone (this holder paused past its expiry). */
  readonly lost: boolean;
  release(): Promise<void>;
}

export interface AcquireOptions {
  runId?: string | null;
  signal?: AbortSignal;
  /** Called once, when the lease is first found held by someone else. */
  onWait?(held: WorkspaceLease): void;
}

export interface WorkspaceLeases {
  acquire(workspace: string, holder: string, options?: AcquireOptions): Promise<LeaseHandle>;
  /** The lease standing on the workspace, if any (expired ones included, with their expiry). */
  current(workspace: string): Promise<WorkspaceLease | undefined>;
}

export interface WorkspaceLeasesDeps {
  repo: LeaseRepository;
  clock: Clock;
  /** This process's node id (recorded on the lease, for operators). */
  node: string;
  /** How long a hold lasts without renewal (default 30 s); renewed every third of it. */
  ttlMs?: number;
  /** How often a waiting run looks again (default 250 ms). */
  pollMs?: number;
  onError?(error: unknown): void;
}

export function createWorkspaceLeases(deps: WorkspaceLeasesDeps): WorkspaceLeases {
  const ttlMs = deps.ttlMs ?? 30_000;
  const pollMs = deps.pollMs ?? 250;
  const hold = (workspace: string, holder: string): LeaseHandle => {
    let lost = false;
    let released = false;
    const timer = setInterval(
      () => {
        deps.repo.renew(workspace, holder, deps.clock.now(), ttlMs).then(
          (ok) => {
            if (!ok && !released) lost = true;
          },
          (error) => deps.onError?.(error),
        );
      },
      Math.max(10, Math.floor(ttlMs / 3)),
    );
    timer.unref();
    return {
      workspace,
      holder,
      get lost() {
        return lost;
      },
      async release() {
        if (released) return;
        released = true;
        clearInterval(timer);
        await deps.repo.release(workspace, holder);
      },
    };
  };
  return {
    async acquire(workspace, holder, options = {}) {
      let told = false;
      for (;;) {
        if (options.signal?.aborted) throw cancelled(workspace);
        const { acquired, lease } = await deps.repo.tryAcquire({
          workspace,
          holder,
          runId: options.runId ?? null,
          node: deps.node,
          now: deps.clock.now(),
          ttlMs,
        });
        if (acquired) return hold(workspace, holder);
        if (!told) {
          told = true;
          options.onWait?.(lease);
        }
        await pause(pollMs, options.signal);
      }
    },
    current: (workspace) => deps.repo.get(workspace),
  };
}

const cancelled = (workspace: string) =>
  new SvcError('cancelled', `cancelled while waiting for the workspace lease of ${workspace}`);

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
