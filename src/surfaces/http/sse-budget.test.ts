/**
 * The session stream cap (sse-budget.ts): a stream far behind gives way to a newcomer; when none
 * is behind, the newcomer is the one dropped, so opening streams cannot push out another client's
 * up-to-date stream.
 */
import { describe, expect, it } from 'vitest';
import type { SseStream } from './sse';
import { createSseBudget } from './sse-budget';

function fakeStream(backlog: number) {
  const closers: (() => void)[] = [];
  const stream = {
    closed: false,
    backlog,
    dropped: undefined as string | undefined,
    onClose: (fn: () => void) => closers.push(fn),
    drop(reason: string, detail: string) {
      stream.dropped = `${reason}: ${detail}`;
      stream.closed = true;
      for (const fn of closers) fn();
    },
  };
  return stream;
}

const asStream = (s: ReturnType<typeof fakeStream>) => s as unknown as SseStream;

describe('sse_max_streams_per_session', () => {
  it('drops the newcomer when every open stream is up to date', () => {
    const budget = createSseBudget({ maxBufferedBytes: 1 << 30, maxStreamsPerSession: 2 });
    const [a, b, c] = [fakeStream(0), fakeStream(10), fakeStream(0)];
    for (const s of [a, b, c]) budget.admit(asStream(s), 'ses_1');
    expect([a.dropped, b.dropped]).toEqual([undefined, undefined]);
    expect(c.dropped).toMatch(/^stream_limit: .*none is behind/);
  });

  it('lets a stream far behind give way, the furthest first', () => {
    const budget = createSseBudget({ maxBufferedBytes: 1 << 30, maxStreamsPerSession: 2 });
    const [a, b, c] = [fakeStream(200_000), fakeStream(0), fakeStream(0)];
    for (const s of [a, b, c]) budget.admit(asStream(s), 'ses_1');
    expect(a.dropped).toMatch(/^stream_limit: .*furthest behind/);
    expect([b.dropped, c.dropped]).toEqual([undefined, undefined]);
    const other = fakeStream(0);
    budget.admit(asStream(other), 'ses_2');
    expect(other.dropped).toBeUndefined();
  });
});
