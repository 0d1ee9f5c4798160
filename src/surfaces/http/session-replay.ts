/**
 * What one session event stream sends after its head (./session-events.ts): the replay, read a
 * page at a time, then the live events, each event once, in id order, with no gap between.
 *
 * A replay from an old `Last-Event-ID` may span a long log (a long run's deltas). It is read
 * `REPLAY_PAGE` events at a time (`EventBus.replay` with a page), yielding to the event loop
 * between pages, so no connection holds the server for more than one page's read; while the
 * client has more than `REPLAY_BACKLOG` bytes unread the replay waits for it to read, and it stops
 * when the stream closes.
 *
 * Exactness: the stream subscribes before its first read, and events delivered meanwhile wait in
 * `pending` (at most `PENDING_MAX`; past that they are let go: the log holds them and the next
 * page reads them). A page shorter than `REPLAY_PAGE` has read everything stored when it was
 * read, so the stream goes live after it unless `pending` let events go since then (then it reads
 * on); `pending`'s events after the cursor follow, and `deliver` drops every id at or below the
 * cursor, so nothing is sent twice.
 * @module
 */
import type { App } from '../../app';
import type { ReplayResult, SessionEvent } from '../../events/bus';
import type { SseStream } from './sse';

/** Events read from the ring or the log at a time. */
export const REPLAY_PAGE = 500;
/** Bytes unread by the client above which the replay waits for it to read. */
export const REPLAY_BACKLOG = 1024 * 1024;
/** Live events kept while the replay runs; past it they are read from the log instead. */
const PENDING_MAX = 1000;

export interface SessionFeed {
  /** The id of the last event sent (or the id the replay starts after). */
  readonly cursor: number;
  /** The bus listener: subscribe it before the first `read`. */
  listener(event: SessionEvent): void;
  /** One page of the replay after `afterId` (the first: `upTo` counts the whole replay). */
  read(afterId: number, upTo?: number): Promise<ReplayResult>;
  /** The stream the events go to, its cursor starting at `afterId`. */
  start(stream: SseStream, afterId: number): void;
  /** Sends `first` and the pages after it, then the events that came meanwhile, and goes live. */
  run(first: readonly SessionEvent[]): Promise<void>;
}

export function sessionFeed(app: App, sessionId: string): SessionFeed {
  let cursor = 0;
  let live = false;
  let stream: SseStream | undefined;
  const pending: SessionEvent[] = [];
  /** `pending` let events go since the last read began. */
  let overflowed = false;

  const deliver = (event: SessionEvent) => {
    if (event.id <= cursor || !stream || stream.closed) return;
    cursor = event.id;
    stream.send({ event: event.type, id: event.id, data: JSON.stringify(app.redactor.value(event.payload)) });
    // The session is gone: nothing more will come; a reconnect gets 404 and stops.
    if (event.type === 'session.deleted') stream.close();
  };

  const read = (afterId: number, upTo?: number) => {
    overflowed = false;
    return app.bus.replay(sessionId, afterId, {
      limit: REPLAY_PAGE,
      ...(upTo === undefined ? {} : { upTo }),
    });
  };

  /** Lets the client read, or the loop breathe, before the next page. */
  const pause = async (open: SseStream) => {
    if (open.backlog > REPLAY_BACKLOG) await open.drained();
    else await new Promise((resolve) => setImmediate(resolve));
  };

  return {
    get cursor() {
      return cursor;
    },
    listener(event) {
      if (live) {
        deliver(event);
        return;
      }
      if (pending.length >= PENDING_MAX) {
        pending.length = 0;
        overflowed = true;
      }
      pending.push(event);
    },
    read,
    start(open, afterId) {
      stream = open;
      cursor = afterId;
    },
    async run(first) {
      const open = stream;
      if (!open) return;
      let page = first;
      for (;;) {
        for (const event of page) deliver(event);
        if (open.closed) return;
        if (page.length < REPLAY_PAGE && !overflowed) break;
        await pause(open);
        if (open.closed) return;
        page = (await read(cursor)).events;
      }
      live = true;
      for (const event of pending.splice(0)) deliver(event);
    },
  };
}
