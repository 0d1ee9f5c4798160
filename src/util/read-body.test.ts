import { describe, expect, it } from 'vitest';
import { readBodyCapped } from './read-body';

function chunked(parts: string[], pulled: { count: number }, cancelled: { value: boolean }): Response {
  let index = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled.count++;
      if (index >= parts.length) controller.close();
      else controller.enqueue(new TextEncoder().encode(parts[index++]));
    },
    cancel() {
      cancelled.value = true;
    },
  });
  return new Response(stream);
}

describe('readBodyCapped', () => {
  it('returns a body within the cap whole', async () => {
    const pulled = { count: 0 };
    const cancelled = { value: false };
    const read = await readBodyCapped(chunked(['abc', 'def'], pulled, cancelled), 6);
    expect(read).toEqual({ body: Buffer.from('abcdef'), truncated: false });
    expect(cancelled.value).toBe(false);
  });

  it('stops at the cap: the first maxBytes bytes, truncated, the rest never pulled', async () => {
    const pulled = { count: 0 };
    const cancelled = { value: false };
    const parts = ['abcd', 'efgh', 'ijkl', 'mnop', 'qrst'];
    const read = await readBodyCapped(chunked(parts, pulled, cancelled), 6);
    expect(read.body.toString()).toBe('abcdef');
    expect(read.truncated).toBe(true);
    expect(cancelled.value).toBe(true);
    expect(pulled.count).toBeLessThan(parts.length);
  });

  it('reads an empty or bodiless answer as empty', async () => {
    expect(await readBodyCapped(new Response(null), 10)).toEqual({ body: Buffer.alloc(0), truncated: false });
  });

  it('passes a read error on for the caller to name', async () => {
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.error(new Error('connection reset'));
      },
    });
    await expect(readBodyCapped(new Response(stream), 10)).rejects.toThrow('connection reset');
  });
});
