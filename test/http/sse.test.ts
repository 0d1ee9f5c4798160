/**
 * The SSE primitive (src/surfaces/http/sse.ts). Pins: framing (multi-line data, one-line id and
 * event), a client that stops reading is dropped at the backlog limit instead of growing memory,
 * an aborted request ends the stream, teardown runs once whatever ends the stream.
 */
import { describe, expect, it, vi } from 'vitest';
import { createStreamTracker, formatSse, openSseStream } from '../../src/surfaces/http/sse';
import { sseReader } from './sse-reader';

describe('SSE streams', () => {
  it('frames events: event, id, retry, one data line per line', () => {
    expect(formatSse({ event: 'tick', id: 7, retry: 500, data: 'a\nb' })).toBe(
      'event: tick\nid: 7\nretry: 500\ndata: a\ndata: b\n\n',
    );
    expect(formatSse({ data: '{}' })).toBe('data: {}\n\n');
    expect(() => formatSse({ event: 'bad\nevent', data: '' })).toThrow('SSE event must be one line');
  });

  it('drops a client that lets the backlog grow past the limit', async () => {
    const tracker = createStreamTracker();
    const closed = vi.fn();
    const { stream, response } = openSseStream({ heartbeatMs: 0, maxBacklogBytes: 1000, tracker });
    stream.onClose(closed);
    // Nobody reads the body.
    let sent = 0;
    while (stream.send({ event: 'tick', data: 'x'.repeat(100) })) sent++;
    expect(sent).toBeGreaterThan(5);
    expect(sent).toBeLessThan(20);
    expect(stream.closed).toBe(true);
    expect(closed).toHaveBeenCalledTimes(1);
    expect(tracker.size).toBe(0);
    await expect(response.body!.getReader().read()).rejects.toThrow('SSE client too slow');
  });

  it('ends the stream when the request is aborted, and tears down once', async () => {
    const controller = new AbortController();
    const closed = vi.fn();
    const { stream, response } = openSseStream({ heartbeatMs: 0, signal: controller.signal });
    stream.onClose(closed);
    const reader = sseReader(response);
    stream.send({ event: 'one', id: 1, data: '1' });
    expect((await reader.next()).event).toBe('one');
    controller.abort();
    expect(await reader.ended()).toBe(true);
    stream.close();
    expect(closed).toHaveBeenCalledTimes(1);
    expect(stream.send({ data: 'late' })).toBe(false);
  });

  it('runs a late onClose callback at once', () => {
    const { stream } = openSseStream({ heartbeatMs: 0 });
    stream.close();
    const late = vi.fn();
    stream.onClose(late);
    expect(late).toHaveBeenCalledTimes(1);
  });
});
