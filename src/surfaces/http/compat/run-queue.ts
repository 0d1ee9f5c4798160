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

/**
 * What tells a queued request that its client went away, besides an `AbortSignal`: node-front.ts's
 * request, which makes no `AbortController` (a signal with a map of its own, its listener map and
 * listener) for a request that only waits (issue 17 item 4, p-inflight).
 */
export interface QueueLeave {
  /** The client went away already. */
  readonly left: boolean;
  /** The one waiter told when the client goes away; `undefined` forgets it. */
  onLeave(waiter: { leave(): void } | undefined): void;
}

/** A request told of its turn: `granted` the function that frees its slot, or `refused` why not. */
export interface QueueTurn {
  granted(free: () => void): void;
  refused(error: SvcError): void;
}

export interface RunQueue {
  /** Wait for a run slot; the returned function frees it (idempotent). 429 past the depth. */
  acquire(signal?: AbortSignal | QueueLeave): Promise<() => void>;
  /**
   * `acquire` without a promise: `turn` is told once, at once when a slot is free or the request
   * is refused, else when its turn comes or its client goes away. What a queued request holds is
   * `turn` and one waiter (issue 17 item 4, p-inflight: the compat route from node:http).
   */
  enter(turn: QueueTurn, signal?: AbortSignal | QueueLeave): void;
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
  const waiting: Waiter[] = [];
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

  const enter: RunQueue['enter'] = (turn, signal) => {
    if (signal && ('onLeave' in signal ? signal.left : signal.aborted))
      return turn.refused(new SvcError('cancelled', 'the client went away'));
    const { concurrency, depth } = limits();
    if (running < concurrency && waiting.length === 0) {
      running++;
      return turn.granted(slot());
    }
    if (waiting.length >= depth) {
      rejected++;
      // The queue drains `concurrency` runs per average run time.
      const retryAfterMs = Math.max(1000, (averageMs * (waiting.length + 1)) / Math.max(1, concurrency));
      const seconds = Math.ceil(retryAfterMs / 1000);
      return turn.refused(
        new SvcError(
          'rate_limited',
          `svc is busy: ${running} compat runs are running and ${waiting.length} requests are queued (options.openai_compat.max_queued_requests = ${depth}); retry after ${seconds}s`,
          { retryAfterMs: seconds * 1000 },
        ),
      );
    }
    waiting.push(new Waiter(turn, signal, waiting, slot));
  };

  return {
    acquire(signal) {
      return new Promise((granted, refused) => enter({ granted, refused }, signal));
    },
    enter,
    stats() {
      return { ...limits(), running, queued: waiting.length, rejected };
    },
  };
}

const ONCE = { once: true };

/**
 * A queued request: one object, its own abort listener (`handleEvent`) and leave waiter, in place
 * of an entry, two closures over it and their context (issue 17 item 4, p-inflight).
 */
class Waiter {
  constructor(
    private readonly turn: QueueTurn,
    private readonly signal: AbortSignal | QueueLeave | undefined,
    private readonly waiting: Waiter[],
    private readonly slot: () => () => void,
  ) {
    if (!signal) return;
    if ('onLeave' in signal) signal.onLeave(this);
    else signal.addEventListener('abort', this, ONCE);
  }

  /** A slot is free: this request runs. */
  grant(): void {
    this.forget();
    this.turn.granted(this.slot());
  }

  /** The client went away while queued: out of the queue, the request cancelled. */
  leave(): void {
    this.forget();
    const at = this.waiting.indexOf(this);
    if (at >= 0) this.waiting.splice(at, 1);
    this.turn.refused(new SvcError('cancelled', 'the client went away while the request was queued'));
  }

  /** The signal's abort event (an `EventListenerObject`). */
  handleEvent(): void {
    this.leave();
  }

  private forget(): void {
    const signal = this.signal;
    if (!signal) return;
    if ('onLeave' in signal) signal.onLeave(undefined);
    else signal.removeEventListener('abort', this);
  }
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
