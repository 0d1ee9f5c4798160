/**
 * Read a fetch `Response` (or `Request`) body chunk by chunk up to a byte cap: the one place svc
 * reads an untrusted peer's answer (or an MCP client's request) into memory. Past the cap the stream is cancelled (the rest is never
 * downloaded) and the caller gets the first `maxBytes` bytes with `truncated` set; the web tool
 * keeps the truncated page, the A2A client refuses it. Read errors (a timeout, a reset) propagate
 * for the caller to name.
 * @module
 */

export interface CappedBody {
  body: Buffer;
  /** True when the body was longer than the cap; `body` then holds its first `maxBytes` bytes. */
  truncated: boolean;
}

export async function readBodyCapped(
  response: Pick<Response, 'body'>,
  maxBytes: number,
): Promise<CappedBody> {
  if (!response.body) return { body: Buffer.alloc(0), truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (bytes + value.byteLength > maxBytes) {
        chunks.push(value.subarray(0, maxBytes - bytes));
        await reader.cancel().catch(() => {});
        return { body: Buffer.concat(chunks), truncated: true };
      }
      chunks.push(value);
      bytes += value.byteLength;
    }
  } finally {
    reader.releaseLock();
  }
  return { body: Buffer.concat(chunks), truncated: false };
}
