import { describe, expect, it } from 'vitest';
import { evictOldest, FrameLimitError, LspFrames, MAX_DIAGNOSTICS_KEPT } from './lsp-limits';

const frame = (message: unknown) => {
  const body = Buffer.from(JSON.stringify(message));
  return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]);
};

describe('LspFrames', () => {
  it('reads messages split across chunks and several in one chunk', () => {
    const frames = new LspFrames();
    const both = Buffer.concat([frame({ id: 1 }), frame({ id: 2, text: 'é'.repeat(100) })]);
    const out: unknown[] = [];
    for (let i = 0; i < both.length; i += 7) out.push(...frames.push(both.subarray(i, i + 7)));
    expect(out).toEqual([{ id: 1 }, { id: 2, text: 'é'.repeat(100) }]);
    expect(frames.push(Buffer.concat([frame({ id: 3 }), frame({ id: 4 })]))).toEqual([{ id: 3 }, { id: 4 }]);
  });

  it('refuses a message over the limit at its header, and a header that does not end', () => {
    const small = new LspFrames({ message: 100, header: 64 });
    expect(() => small.push(Buffer.from('Content-Length: 101\r\n\r\n{'))).toThrow(FrameLimitError);
    expect(() => small.push(Buffer.from('Content-Length: 101\r\n\r\n{'))).toThrow(
      'sent a 101-byte message, over the 100-byte limit for one message',
    );
    expect(() => new LspFrames({ message: 100, header: 64 }).push(Buffer.alloc(65, 'a'))).toThrow(
      'sent a message header over 64 bytes',
    );
  });
});

describe('evictOldest', () => {
  it('drops the files published longest ago, never the one just published', () => {
    const list = (n: number) => ({ diagnostics: new Array(n).fill(0) });
    const published = new Map([
      ['a', list(MAX_DIAGNOSTICS_KEPT / 2)],
      ['b', list(MAX_DIAGNOSTICS_KEPT / 2)],
      ['c', list(10)],
    ]);
    evictOldest(published, 'c');
    expect([...published.keys()]).toEqual(['b', 'c']);
    const huge = new Map([['x', list(MAX_DIAGNOSTICS_KEPT + 1)]]);
    evictOldest(huge, 'x');
    expect([...huge.keys()]).toEqual(['x']);
  });
});
