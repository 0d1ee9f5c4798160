/**
 * A hot route served straight from node:http's request event (`HttpExtension.node`), before
 * @hono/node-server builds its Request, Hono its Context and compose chain, and node-server turns
 * the answer Response back into a head and a body (issue 17 item 3, p-leanio Left 2).
 *
 * `NodeContext` stands in for the Hono `Context` of such a route: the members the compat route's
 * handlers, the front gate and `errorResponse` use (`req.method`, `req.path`, `req.header`,
 * `req.text`, `req.raw.headers.has/get`, `req.raw.signal`, `env.outgoing`, `json`, `text`), each
 * answering as node-server's and Hono's do: header values as `Headers.get` joins them, the body
 * decoded as node-server's direct read decodes it (UTF-8, a leading BOM dropped), the signal
 * aborted when the response closes before it finished ("Client connection prematurely closed.").
 * An answer it builds (`json`, `text`) is a `NodeAnswer` that `writeNodeAnswer` writes with the
 * head node-server writes for Hono's Response: the header names lower-cased in `Headers`' order,
 * and the body's length. An SSE answer is written by the route itself (sse-node.ts) and its
 * Response is node-server's already-sent marker: nothing is left to write.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from 'hono';

/** node-server's marker for a response the route wrote itself (sse-node.ts). */
const ALREADY_SENT = 'x-hono-already-sent';
/** node-server's abort reason when the response closes before it finished. */
const PREMATURE_CLOSE = 'Client connection prematurely closed.';
const decoder = new TextDecoder();

/** A route served from node:http: `true` when it took the request, `false` to leave it to Hono. */
export type NodeRoute = (incoming: IncomingMessage, outgoing: ServerResponse) => boolean;

/** An answer built by a `NodeContext` (`c.json`, `c.text`): status, headers (lower-cased names), body. */
export class NodeAnswer {
  readonly headers: AnswerHeaders;
  constructor(
    readonly status: number,
    readonly body: string,
    headers: Record<string, string>,
  ) {
    this.headers = new AnswerHeaders(headers);
  }
}

/** The part of `Headers` an answer's callers use (`set`, `get`), over a record. */
class AnswerHeaders {
  readonly record: Record<string, string> = {};
  constructor(headers: Record<string, string>) {
    for (const name in headers) this.record[name.toLowerCase()] = headers[name];
  }
  set(name: string, value: string): void {
    this.record[name.toLowerCase()] = value;
  }
  get(name: string): string | null {
    return this.record[name.toLowerCase()] ?? null;
  }
}

/**
 * The fields of which Node keeps only the first in `incoming.headers` (and `cookie`, which it joins
 * with "; "): `Headers`, which node-server builds from the raw list, joins every one with ", ".
 */
const JOINED_APART = new Set([
  'age',
  'authorization',
  'content-length',
  'content-type',
  'cookie',
  'etag',
  'expires',
  'from',
  'host',
  'if-modified-since',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'proxy-authorization',
  'referer',
  'retry-after',
  'server',
  'user-agent',
]);

/**
 * The request's headers as `Headers` reads them: repeated fields joined with ", ". Read from
 * `incoming.headers`, and for the fields Node does not join that way from the raw list (not
 * `headersDistinct`: an object and an array for every field of every request).
 */
class IncomingHeaders {
  constructor(private readonly incoming: IncomingMessage) {}
  get(name: string): string | null {
    const lower = name.toLowerCase();
    const value = this.incoming.headers[lower];
    if (value === undefined) return null;
    if (Array.isArray(value)) return value.join(', ');
    if (!JOINED_APART.has(lower)) return value;
    const raw = this.incoming.rawHeaders;
    let joined: string | undefined;
    for (let i = 0; i < raw.length; i += 2) {
      const field = raw[i];
      if (field.length !== lower.length || field.toLowerCase() !== lower) continue;
      joined = joined === undefined ? raw[i + 1] : `${joined}, ${raw[i + 1]}`;
    }
    return joined ?? value;
  }
  has(name: string): boolean {
    return this.incoming.headers[name.toLowerCase()] !== undefined;
  }
}

class NodeRequest {
  readonly method: string;
  readonly headers: IncomingHeaders;
  private controller: AbortController | undefined;
  private reason: string | undefined;
  private body: Promise<string> | undefined;
  private leaving: { leave(): void } | undefined;

  constructor(
    private readonly incoming: IncomingMessage,
    readonly path: string,
  ) {
    this.method = incoming.method ?? 'GET';
    this.headers = new IncomingHeaders(incoming);
  }

  /** Hono's `c.req.raw`: the members read of it are `headers` and `signal`, both here. */
  get raw(): this {
    return this;
  }

  /** node-server's request signal: made on first read, aborted by `watch`'s close. */
  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.reason !== undefined && !this.controller.signal.aborted) this.controller.abort(this.reason);
    return this.controller.signal;
  }

  /**
   * The run queue's `QueueLeave` (compat/run-queue.ts): a queued request waits on this, not on
   * `signal`, so it makes no `AbortController` until it runs (issue 17 item 4, p-inflight).
   */
  get left(): boolean {
    return this.reason !== undefined;
  }

  onLeave(waiter: { leave(): void } | undefined): void {
    this.leaving = waiter;
  }

  /** node-server's close handler: the signal aborts when the answer did not finish. */
  watch(outgoing: ServerResponse): void {
    const incoming = this.incoming;
    outgoing.on('close', () => {
      if (incoming.errored) this.abort(incoming.errored.toString());
      else if (!outgoing.writableFinished) this.abort(PREMATURE_CLOSE);
    });
  }

  private abort(reason: string): void {
    this.reason ??= reason;
    if (this.controller && !this.controller.signal.aborted) this.controller.abort(reason);
    const leaving = this.leaving;
    this.leaving = undefined;
    leaving?.leave();
  }

  header(name: string): string | undefined {
    return this.headers.get(name) ?? undefined;
  }

  /** The body as text, read once from the IncomingMessage (node-server's direct read). */
  text(): Promise<string> {
    this.body ??= readBody(this.incoming).then((buffer) => decoder.decode(buffer));
    return this.body;
  }
}

function readBody(incoming: IncomingMessage): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    const onData = (chunk: Buffer) => chunks.push(chunk);
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const onClose = () => {
      if (incoming.readableEnded) return onEnd();
      cleanup();
      reject(incoming.errored ?? new Error(PREMATURE_CLOSE));
    };
    const cleanup = () => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('close', onClose);
    };
    if (incoming.readableEnded) return resolve(Buffer.alloc(0));
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('close', onClose);
  });
}

/** The Context stand-in of a request served from node:http (see the module's comment). */
export class NodeContext {
  readonly req: NodeRequest;
  readonly env: { incoming: IncomingMessage; outgoing: ServerResponse };

  constructor(incoming: IncomingMessage, outgoing: ServerResponse, path: string) {
    this.req = new NodeRequest(incoming, path);
    this.env = { incoming, outgoing };
  }

  /** The request is this route's: its signal follows the response from now on. */
  admit(): void {
    this.req.watch(this.env.outgoing);
  }

  /** Hono's `c.json`: `content-type: application/json`, then the given headers. */
  json(object: unknown, status = 200, headers: Record<string, string> = {}): Response {
    return answer(status, JSON.stringify(object), { 'content-type': 'application/json', ...headers });
  }

  /** Hono's `c.text`. */
  text(text: string, status = 200, headers: Record<string, string> = {}): Response {
    return answer(status, text, { 'content-type': 'text/plain; charset=UTF-8', ...headers });
  }

  /** What the route's handlers are typed against: they use only the members above. */
  get context(): Context {
    return this as unknown as Context;
  }
}

/** A `NodeAnswer` where a handler's type says Response (it reads only `status` and `headers.set`). */
function answer(status: number, body: string, headers: Record<string, string>): Response {
  return new NodeAnswer(status, body, headers) as unknown as Response;
}

/**
 * Write what a route served from node:http answered: a `NodeAnswer` with node-server's head for
 * Hono's Response (names lower-cased in `Headers`' sorted order, then `Content-Length`); the SSE
 * marker (already written) not at all; any other Response (none today) its status, headers and body.
 */
export function writeNodeAnswer(outgoing: ServerResponse, response: Response): Promise<void> | undefined {
  if (response instanceof NodeAnswer) {
    const { record } = response.headers;
    const head: Record<string, string | number> = {};
    for (const name of Object.keys(record).sort()) head[name] = record[name];
    head['Content-Length'] = Buffer.byteLength(response.body);
    outgoing.writeHead(response.status, head);
    outgoing.end(response.body);
    return undefined;
  }
  if (response.headers.get(ALREADY_SENT)) return undefined;
  return writeResponse(outgoing, response);
}

async function writeResponse(outgoing: ServerResponse, response: Response): Promise<void> {
  const head: Record<string, string | number> = {};
  response.headers.forEach((value, name) => {
    head[name] = value;
  });
  const body = Buffer.from(await response.arrayBuffer());
  head['Content-Length'] = body.byteLength;
  outgoing.writeHead(response.status, head);
  outgoing.end(body);
}
