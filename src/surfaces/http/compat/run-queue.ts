/**
 * The compat surface's run queue: at most `options.openai_compat.max_concurrent_runs` requests
 * (default 2x the cores) run their agent at once; the next `max_queued_requests` wait in arrival
 * order; past that a request is refused at once with `429` and a `Retry-After` (flat body, like
 * every compat error). A queued request holds nothing but its place: its body is read and its
 * session created only once it runs, so the heap stays bounded whatever the burst. A client that
 * goes away while queued leaves the queue. Both limits are read per request (a config reload
 * applies to the next one).
 * @module
 */
import { availableParallelism } from 'node:os';
import type { App } from '../../../app';
import { SvcError } from '../../../errors';

/** Default queue depth: room for a 200-stream burst on a small machine, and a bound on memory. */
export const DEFAULT_MAX_QUEUED_REQUESTS = 256;

export interface RunQueueLimits {
  concurrency: number;
  depth: number;
}

export interface RunQueueStats extends RunQueueLimits {
  running: number;
  queued: number;
  /** Requests refused with 429 since start. */
  rejected: number;
}

export interface RunQueue {
  /** Wait for a run slot; the returned function frees it (idempotent). 429 past the depth. */
  acquire(signal?: AbortSignal): Promise<() => void>;
  stats(): RunQueueStats;
}

/** The cores this process may use: a syscall, asked once rather than at every request (issue 17). */
let cores: number | undefined;
function coreCount(): number {
  cores ??= availableParallelism();
  return cores;
}

export function runQueueLimits(app: App): RunQueueLimits {
  const compat = app.config.options.openai_compat;
  return {
    concurrency: compat?.max_concurrent_runs ?? 2 * coreCount(),
    depth: compat?.max_queued_requests ?? DEFAULT_MAX_QUEUED_REQUESTS,
  };
}

/** A queue over limits read at each acquire. */
export function createRunQueue(limits: () => RunQueueLimits): RunQueue {
  let running = 0;
  let rejected = 0;
  const waiting: { grant: () => void }[] = [];
  // Recent run durations (ms), for the Retry-After estimate.
  let averageMs = 1000;

  const pump = () => {
    const { concurrency } = limits();
    while (running < concurrency && waiting.length > 0) {
      running++;
      waiting.shift()?.grant();
    }
  };
  const slot = () => {
    const started = Date.now();
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      running--;
      averageMs = averageMs * 0.9 + (Date.now() - started) * 0.1;
      pump();
    };
  };

  return {
    acquire(signal) {
      if (signal?.aborted) return Promise.reject(new SvcError('cancelled', 'the client went away'));
      const { concurrency, depth } = limits();
      if (running < concurrency && waiting.length === 0) {
        running++;
        return Promise.resolve(slot());
      }
      if (waiting.length >= depth) {
        rejected++;
        // The queue drains `concurrency` runs per average run time.
        const retryAfterMs = Math.max(1000, (averageMs * (waiting.length + 1)) / Math.max(1, concurrency));
        const seconds = Math.ceil(retryAfterMs / 1000);
        return Promise.reject(
          new SvcError(
            'rate_limited',
            `svc is busy: ${running} compat runs are running and ${waiting.length} requests are queued (options.openai_compat.max_queued_requests = ${depth}); retry after ${seconds}s`,
            { retryAfterMs: seconds * 1000 },
          ),
        );
      }
      return new Promise((resolve, reject) => {
        const entry = {
          grant: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve(slot());
          },
        };
        const onAbort = () => {
          const at = waiting.indexOf(entry);
          if (at >= 0) waiting.splice(at, 1);
          reject(new SvcError('cancelled', 'the client went away while the request was queued'));
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        waiting.push(entry);
      });
    },
    stats() {
      return { ...limits(), running, queued: waiting.length, rejected };
    },
  };
}

const queues = new WeakMap<App, RunQueue>();

/** The App's compat run queue (one per App, created on first use). */
export function compatRunQueue(app: App): RunQueue {
  let queue = queues.get(app);
  if (!queue) {
    queue = createRunQueue(() => runQueueLimits(app));
    queues.set(app, queue);
  }
  return queue;
}
