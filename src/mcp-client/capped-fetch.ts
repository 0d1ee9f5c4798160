/**
 * The fetch of the MCP HTTP transports, with a size cap on what a server sends back: a JSON answer
 * is read to at most `maxBytes`, and an event stream carries events of at most `maxBytes` each (a
 * long-lived stream of small events is fine). A server answering a call with more fails that call
 * with a clear error instead of growing svc's memory without end:
 *
 * - a JSON answer over the cap (declared or counted) rejects the request's send, which the SDK
 *   hands to the pending call;
 * - an event over the cap on a POST's stream ends that event unparsed and answers each request of
 *   the POST with a JSON-RPC error (`MESSAGE_TOO_LARGE`), then ends the stream;
 * - an event over the cap on a stream no request waits on (the standalone GET stream, legacy SSE)
 *   errors the stream.
 * @module
 */

/** The default cap of one MCP message from a server: 32 MiB. */
export const DEFAULT_MAX_MESSAGE_BYTES = 32 * 1024 * 1024;
/** JSON-RPC error code of the answer svc gives a request whose response went over the cap. */
export const MESSAGE_TOO_LARGE = -32050;

/** A server's message went over the cap (`code` is `MESSAGE_TOO_LARGE`). */
export class MessageTooLarge extends Error {
  readonly code = MESSAGE_TOO_LARGE;
  constructor(maxBytes: number) {
    super(tooLargeMessage(maxBytes));
  }
}

export function tooLargeMessage(maxBytes: number): string {
  const size =
    maxBytes >= 1024 * 1024 && maxBytes % (1024 * 1024) === 0
      ? `${maxBytes / (1024 * 1024)} MiB`
      : `${maxBytes} bytes`;
  return `the server's answer is over the ${size} limit of one MCP message; the call was stopped`;
}

/** Statuses whose Response cannot carry a body, and redirects (left to the SDK as they are). */
const UNWRAPPED = (status: number) => status < 200 || status === 204 || status === 205 || status === 304;

/** `overCap` makes the error of an answer over the cap (default `MessageTooLarge`). */
export function cappedFetch(
  base: typeof fetch,
  maxBytes: number,
  overCap: () => Error = () => new MessageTooLarge(maxBytes),
): typeof fetch {
  return async (input, init) => {
    const response = await base(input, init);
    if (!response.body || UNWRAPPED(response.status) || (response.status >= 300 && response.status < 400))
      return response;
    const type = (response.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
    let body: ReadableStream<Uint8Array>;
    if (type === 'text/event-stream') {
      body = response.body.pipeThrough(eventCap(maxBytes, requestIds(init?.body), overCap));
    } else {
      if (Number(response.headers.get('content-length')) > maxBytes) {
        await response.body.cancel().catch(() => {});
        throw overCap();
      }
      body = response.body.pipeThrough(totalCap(maxBytes, overCap));
    }
    const capped = new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    // The SDK reads the URL of a response (redirect messages); a new Response has none.
    Object.defineProperty(capped, 'url', { value: response.url });
    return capped;
  };
}

function totalCap(maxBytes: number, overCap: () => Error): TransformStream<Uint8Array, Uint8Array> {
  let seen = 0;
  return new TransformStream({
    transform(chunk, controller) {
      seen += chunk.byteLength;
      if (seen > maxBytes) controller.error(overCap());
      else controller.enqueue(chunk);
    },
  });
}

/** Ids of the JSON-RPC requests a POST sends (the SDK sends one message or a batch as JSON). */
export function requestIds(body: unknown): (string | number)[] {
  if (typeof body !== 'string') return [];
  try {
    const parsed: unknown = JSON.parse(body);
    return (Array.isArray(parsed) ? parsed : [parsed]).flatMap((m) =>
      m && typeof m === 'object' && 'method' in m && (typeof m.id === 'string' || typeof m.id === 'number')
        ? [m.id as string | number]
        : [],
    );
  } catch {
    return [];
  }
}

const LF = 0x0a;
const CR = 0x0d;

/** Counts the bytes of each event (between blank lines); over the cap, ends the stream. */
function eventCap(
  maxBytes: number,
  ids: (string | number)[],
  overCap: () => Error,
): TransformStream<Uint8Array, Uint8Array> {
  let eventBytes = 0;
  let lineEmpty = true;
  let afterCR = false;
  let over = false;
  return new TransformStream({
    transform(chunk, controller) {
      if (over) return;
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i];
        if (byte === LF && afterCR) {
          afterCR = false;
          continue;
        }
        afterCR = byte === CR;
        if (byte === LF || byte === CR) {
          if (lineEmpty) eventBytes = 0;
          lineEmpty = true;
        } else {
          lineEmpty = false;
          if (++eventBytes > maxBytes) {
            over = true;
            if (!ids.length) return controller.error(overCap());
            controller.enqueue(chunk.subarray(0, i));
            controller.enqueue(new TextEncoder().encode(errorEvents(ids, maxBytes)));
            controller.terminate();
            return;
          }
        }
      }
      controller.enqueue(chunk);
    },
  });
}

/** Ends the event under way unread (an event type the SDK ignores), then answers each request. */
function errorEvents(ids: (string | number)[], maxBytes: number): string {
  const answers = ids.map((id) =>
    JSON.stringify({
      jsonrpc: '2.0',
      id,
      error: { code: MESSAGE_TOO_LARGE, message: tooLargeMessage(maxBytes) },
    }),
  );
  return `\nevent: svc-dropped\n\n${answers.map((a) => `data: ${a}\n\n`).join('')}`;
}
