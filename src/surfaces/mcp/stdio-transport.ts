/**
 * JSON-RPC framing errors answered, not dropped (issue 15, item 6; JSON-RPC 2.0 §5.1):
 *
 * - `StrictStdioServerTransport`: newline-delimited JSON-RPC on stdin/stdout like the SDK's
 *   StdioServerTransport, except that a line that is not JSON answers -32700 (Parse error) and a
 *   JSON value that is not a JSON-RPC message answers -32600 (Invalid Request), with `id: null`
 *   (or the request's id when it has one), instead of being logged and ignored.
 * - `guardTransport`: on any transport, a `tools/call` whose `name` is not a string or whose
 *   `arguments` is not an object answers -32602 (Invalid params) with one short sentence, before
 *   the SDK's schema validation would answer with a dump of its issues.
 * @module
 */
import type { Readable, Writable } from 'node:stream';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';

const MAX_LINE_BYTES = 10 * 1024 * 1024;
type Id = string | number | null;

function errorFrame(id: Id, code: number, message: string): JSONRPCMessage {
  return { jsonrpc: '2.0', id, error: { code, message } } as unknown as JSONRPCMessage;
}

export class StrictStdioServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private buffer: Buffer = Buffer.alloc(0);
  private started = false;

  constructor(
    private readonly stdin: Readable,
    private readonly stdout: Writable,
  ) {}

  /** The rest of a line over the limit is dropped up to its newline, never read as new lines. */
  private discarding = false;

  private readonly onData = (chunk: Buffer) => {
    if (this.discarding) {
      const end = chunk.indexOf(0x0a);
      if (end === -1) return;
      this.discarding = false;
      chunk = chunk.subarray(end + 1);
    }
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    for (;;) {
      const end = this.buffer.indexOf(0x0a);
      if (end === -1) break;
      const line = this.buffer.toString('utf8', 0, end).replace(/\r$/, '');
      this.buffer = this.buffer.subarray(end + 1);
      this.handleLine(line);
    }
    if (this.buffer.length > MAX_LINE_BYTES) {
      this.buffer = Buffer.alloc(0);
      this.discarding = true;
      void this.send(errorFrame(null, -32700, `Parse error: a line over ${MAX_LINE_BYTES} bytes`));
    }
  };

  private readonly onError = (error: Error) => this.onerror?.(error);

  private handleLine(line: string): void {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      void this.send(errorFrame(null, -32700, 'Parse error: the line is not valid JSON'));
      return;
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      const id = idOf(value);
      void this.send(
        errorFrame(id, -32600, 'Invalid Request: not a JSON-RPC 2.0 request, notification or response'),
      );
      return;
    }
    this.onmessage?.(parsed.data);
  }

  async start(): Promise<void> {
    if (this.started) throw new Error('StrictStdioServerTransport already started');
    this.started = true;
    this.stdin.on('data', this.onData);
    this.stdin.on('error', this.onError);
  }

  async close(): Promise<void> {
    this.stdin.off('data', this.onData);
    this.stdin.off('error', this.onError);
    if (this.stdin.listenerCount('data') === 0) this.stdin.pause();
    this.buffer = Buffer.alloc(0);
    this.onclose?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      if (this.stdout.write(`${JSON.stringify(message)}\n`)) resolve();
      else this.stdout.once('drain', resolve);
    });
  }
}

/** Answer a `tools/call` with a malformed name or arguments with -32602 and one sentence. */
export function guardTransport(inner: Transport): Transport {
  const guarded: Transport = {
    start: () => inner.start(),
    close: () => inner.close(),
    send: (message: JSONRPCMessage, options?: TransportSendOptions) => inner.send(message, options),
  };
  Object.defineProperties(guarded, {
    sessionId: { get: () => inner.sessionId, enumerable: true },
    onclose: { get: () => inner.onclose, set: (fn) => (inner.onclose = fn) },
    onerror: { get: () => inner.onerror, set: (fn) => (inner.onerror = fn) },
    setProtocolVersion: {
      get: () => inner.setProtocolVersion?.bind(inner),
    },
    onmessage: {
      get: () => inner.onmessage,
      set: (fn: Transport['onmessage']) => {
        inner.onmessage = (message, extra) => {
          const problem = badToolCall(message);
          if (problem) {
            const id = (message as { id: string | number }).id;
            void inner.send(errorFrame(id, -32602, problem), { relatedRequestId: id });
            return;
          }
          fn?.(message, extra);
        };
      },
    },
  });
  return guarded;
}

function badToolCall(message: JSONRPCMessage): string | undefined {
  const m = message as { method?: unknown; id?: unknown; params?: unknown };
  if (m.method !== 'tools/call' || m.id === undefined) return undefined;
  const params = m.params;
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    return 'Invalid params: tools/call needs params with a tool name and an arguments object';
  }
  const { name, arguments: args } = params as { name?: unknown; arguments?: unknown };
  if (typeof name !== 'string') return `Invalid params: name must be a string, received ${kindOf(name)}`;
  if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) {
    return `Invalid params: ${name}: arguments must be a JSON object, received ${kindOf(args)}`;
  }
  return undefined;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value === undefined) return 'nothing';
  return `a ${typeof value}`;
}

function idOf(value: unknown): Id {
  const id = (value as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}
