/**
 * Limits over the session event streams together (`[services.http]`): the bytes all of them hold
 * for their clients (`sse_max_buffered_bytes`) and the streams one session may have open
 * (`sse_max_streams_per_session`). Past the bytes, the slowest stream (the most bytes waiting; of
 * equals, the oldest) is dropped with a `dropped` event naming the limit (`SseStream.drop`): the
 * client reconnects with `Last-Event-ID` and misses nothing. Clients that keep up hold next to
 * nothing and are never the slowest while another one lags. Past the streams, one at least `STEP`
 * behind gives way; when none is, the new stream is the one dropped (so opening streams cannot push
 * another client's up-to-date stream out).
 *
 * The total is summed only when a stream's own backlog has grown by another `STEP` since it was
 * last summed for it: a stream that keeps up never sums, a stalled one sums once per `STEP`.
 * @module
 */
import type { SseBudgetWatch, SseStream } from './sse';

/** A stream's backlog growth between two sums of the total. */
const STEP = 64 * 1024;

export interface SseBudgetOptions {
  /** Bytes all streams may hold for their clients together. */
  maxBufferedBytes: number;
  /** Streams one session may have open at once. */
  maxStreamsPerSession: number;
}

export interface SseBudget {
  /** What a stream of `group` reports its writes to; `stream` is taken into account from now on. */
  admit(stream: SseStream, group: string): void;
  /** The watch to pass as `OpenSseOptions.budget` (before the stream exists). */
  readonly watch: SseBudgetWatch;
  /** Bytes the streams hold now (their backlogs, summed). */
  buffered(): number;
}

export function createSseBudget(options: SseBudgetOptions): SseBudget {
  const groups = new Map<string, Set<SseStream>>();
  const all = new Set<SseStream>();
  /** Each stream's backlog when the total was last summed for it. */
  const summedAt = new WeakMap<SseStream, number>();

  const buffered = () => {
    let total = 0;
    for (const stream of all) total += stream.backlog;
    return total;
  };

  const slowest = (streams: Iterable<SseStream>, except?: SseStream): SseStream | undefined => {
    let found: SseStream | undefined;
    for (const stream of streams) {
      if (stream === except || stream.closed) continue;
      if (!found || stream.backlog > found.backlog) found = stream;
    }
    return found;
  };

  const watch: SseBudgetWatch = {
    wrote(stream) {
      if (!all.has(stream)) return;
      const backlog = stream.backlog;
      const last = summedAt.get(stream) ?? 0;
      if (backlog < last) summedAt.set(stream, backlog);
      if (backlog < STEP || backlog - last < STEP) return;
      summedAt.set(stream, backlog);
      let total = buffered();
      while (total > options.maxBufferedBytes) {
        const victim = slowest(all);
        if (!victim) return;
        total -= victim.backlog; // read before the drop: a closed stream's backlog reads 0
        victim.drop(
          'buffer_budget',
          `the event streams hold more than ${options.maxBufferedBytes} bytes for their clients ([services.http] sse_max_buffered_bytes) and this one held the most`,
        );
      }
    },
  };

  return {
    watch,
    buffered,
    admit(stream, group) {
      if (stream.closed) return;
      let streams = groups.get(group);
      if (!streams) {
        streams = new Set();
        groups.set(group, streams);
      }
      const own = streams;
      own.add(stream);
      all.add(stream);
      stream.onClose(() => {
        all.delete(stream);
        own.delete(stream);
        if (own.size === 0 && groups.get(group) === own) groups.delete(group);
      });
      while (own.size > options.maxStreamsPerSession) {
        // One that lags gives way (a client gone quiet); else the newcomer is not served: keeping
        // streams open must not let a client push others' up-to-date streams out.
        const lagging = slowest(own, stream);
        if (lagging && lagging.backlog >= STEP) {
          lagging.drop(
            'stream_limit',
            `more than ${options.maxStreamsPerSession} event streams open for this session ([services.http] sse_max_streams_per_session) and this one was the furthest behind`,
          );
          continue;
        }
        stream.drop(
          'stream_limit',
          `${options.maxStreamsPerSession} event streams are open for this session already ([services.http] sse_max_streams_per_session) and none is behind; close one`,
        );
        break;
      }
    },
  };
}
