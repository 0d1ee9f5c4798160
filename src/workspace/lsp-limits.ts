/**
 * Reading a language server's stdout: `Content-Length` framed JSON-RPC messages, within limits. A
 * server is outside code (the workspace can choose it): one that announces a message larger than
 * `MAX_MESSAGE_BYTES`, or sends a header section longer than `MAX_HEADER_BYTES`, is refused with a
 * `FrameLimitError` before its body is buffered (one that sent 60 MB of diagnostics grew svc's
 * memory by hundreds of MB). Bytes are kept as the chunks that came until a whole message is
 * there, so a large message is copied once, not once per chunk. What is kept of the diagnostics
 * a server publishes is capped too: per file and across files.
 * @module
 */
import type { RawDiagnostic } from './lsp-tsserver';

/** The largest message svc reads from a language server (a whole project's references fit). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/** The largest header section (`Content-Length`, `Content-Type`: a few dozen bytes in practice). */
export const MAX_HEADER_BYTES = 8 * 1024;

export class FrameLimitError extends Error {}

export class LspFrames {
  private chunks: Buffer[] = [];
  private bytes = 0;
  /** The body length of the message being read, once its header is in. */
  private expected: number | undefined;

  constructor(private readonly limits = { message: MAX_MESSAGE_BYTES, header: MAX_HEADER_BYTES }) {}

  /** The messages `chunk` completes, in order; a garbled body is skipped. Throws `FrameLimitError`. */
  push(chunk: Buffer): unknown[] {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    const messages: unknown[] = [];
    for (;;) {
      if (this.expected === undefined) {
        const buffer = this.flat();
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0 ? buffer.length > this.limits.header : end > this.limits.header) {
          throw new FrameLimitError(
            `sent a message header over ${this.limits.header} bytes (a header is a few dozen bytes)`,
          );
        }
        if (end < 0) return messages;
        const length = Number(/Content-Length:\s*(\d+)/i.exec(buffer.subarray(0, end).toString())?.[1]);
        this.keep(buffer.subarray(end + 4));
        if (!Number.isFinite(length)) continue; // a header without a length: skipped
        if (length > this.limits.message) {
          throw new FrameLimitError(
            `sent a ${mib(length)} message, over the ${mib(this.limits.message)} limit for one message`,
          );
        }
        this.expected = length;
      }
      if (this.bytes < this.expected) return messages;
      const buffer = this.flat();
      const body = buffer.subarray(0, this.expected);
      this.keep(buffer.subarray(this.expected));
      this.expected = undefined;
      try {
        messages.push(JSON.parse(body.toString('utf8')));
      } catch {
        // a garbled frame from the server: skip it
      }
    }
  }

  private flat(): Buffer {
    if (this.chunks.length !== 1) this.chunks = [Buffer.concat(this.chunks, this.bytes)];
    return this.chunks[0];
  }

  private keep(rest: Buffer): void {
    this.chunks = [rest];
    this.bytes = rest.length;
  }
}

function mib(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MiB` : `${bytes}-byte`;
}

/** Diagnostics kept for one file (errors first): a list longer than this is cut. */
export const MAX_DIAGNOSTICS_PER_FILE = 1000;
/** Diagnostics kept across every file of a server: the files published longest ago go first. */
export const MAX_DIAGNOSTICS_KEPT = 20_000;
/** Characters kept of one diagnostic's message. */
export const MAX_DIAGNOSTIC_MESSAGE = 2000;

/** `list` within the per-file limits (errors first, messages cut), and how many were dropped. */
export function keptDiagnostics(list: unknown): { diagnostics: RawDiagnostic[]; dropped: number } {
  const all = (Array.isArray(list) ? list : []) as RawDiagnostic[];
  const kept =
    all.length > MAX_DIAGNOSTICS_PER_FILE
      ? [...all].sort((a, b) => (a.severity ?? 1) - (b.severity ?? 1)).slice(0, MAX_DIAGNOSTICS_PER_FILE)
      : all;
  return {
    diagnostics: kept.map((d) =>
      typeof d.message === 'string' && d.message.length > MAX_DIAGNOSTIC_MESSAGE
        ? { ...d, message: `${d.message.slice(0, MAX_DIAGNOSTIC_MESSAGE)}…` }
        : d,
    ),
    dropped: all.length - kept.length,
  };
}

/**
 * Drops the oldest files' lists (never `keep`'s) until the diagnostics kept fit
 * `MAX_DIAGNOSTICS_KEPT`. `published` is in publish order (a publish re-inserts its file).
 */
export function evictOldest(published: Map<string, { diagnostics: readonly unknown[] }>, keep: string): void {
  let total = 0;
  for (const entry of published.values()) total += entry.diagnostics.length;
  for (const [uri, entry] of published) {
    if (total <= MAX_DIAGNOSTICS_KEPT) return;
    if (uri === keep) continue;
    published.delete(uri);
    total -= entry.diagnostics.length;
  }
}
