/**
 * The bus's write queue (src/events/write-queue.ts) drains synchronously while writes answer at
 * once (SQLite) and hands the rest of the drain to an async step when one answers with a promise
 * (PostgreSQL). Pins (p-bus): order, failures and `flush` across both.
 */
import { describe, expect, it } from 'vitest';
import { writeQueue } from '../../src/events/write-queue';

interface Item {
  n: number;
  async?: boolean;
  fail?: 'throw' | 'reject';
  failed?: (error: unknown) => void;
}

function setup() {
  const written: number[] = [];
  const failed: number[] = [];
  const errors: unknown[] = [];
  const pending: (() => void)[] = [];
  let q!: ReturnType<typeof writeQueue<Item>>;
  const item = (n: number, extra: Partial<Item> = {}): Item => ({
    n,
    failed: () => failed.push(n),
    ...extra,
  });
  q = writeQueue<Item>(
    (it) => {
      if (it.fail === 'throw') throw new Error(`boom ${it.n}`);
      if (!it.async) {
        written.push(it.n);
        // A write that enqueues (a listener publishing during a delivery) goes behind it.
        if (it.n === 1) q.enqueue(item(2));
        return;
      }
      return new Promise<void>((resolve, reject) =>
        pending.push(() => {
          if (it.fail === 'reject') reject(new Error(`rejected ${it.n}`));
          else {
            written.push(it.n);
            resolve();
          }
        }),
      );
    },
    (e) => errors.push(e),
  );
  return { q, item, written, failed, errors, pending };
}

describe('bus write queue', () => {
  it('ENGINE-BUS-1 writes that answer at once are done before enqueue returns, in order, a nested enqueue behind', async () => {
    const { q, item, written } = setup();
    q.enqueue(item(1));
    expect(written).toEqual([1, 2]);
    q.enqueue(item(3));
    expect(written).toEqual([1, 2, 3]);
    await q.flush();
  });

  it('ENGINE-BUS-2 items behind a write that answers later wait for it, and the queue answers at once again after', async () => {
    const { q, item, written, failed, errors, pending } = setup();
    q.enqueue(item(10, { async: true }));
    q.enqueue(item(11));
    q.enqueue(item(12, { async: true, fail: 'reject' }));
    q.enqueue(item(13));
    expect(written).toEqual([]);
    let flushed = false;
    const flushing = q.flush().then(() => {
      flushed = true;
    });
    pending.shift()!();
    await new Promise((r) => setImmediate(r));
    expect(written).toEqual([10, 11]);
    expect(flushed).toBe(false);
    pending.shift()!();
    await flushing;
    expect(written).toEqual([10, 11, 13]);
    expect(failed).toEqual([12]);
    expect(String(errors[0])).toContain('rejected 12');
    // Idle again: a write that answers at once is done before enqueue returns.
    q.enqueue(item(14));
    expect(written).toEqual([10, 11, 13, 14]);
  });

  it('ENGINE-BUS-3 a write that throws fails its item only: the next ones are written and flush resolves', async () => {
    const { q, item, written, failed, errors } = setup();
    q.enqueue(item(20, { fail: 'throw' }));
    q.enqueue(item(21));
    await q.flush();
    expect(written).toEqual([21]);
    expect(failed).toEqual([20]);
    expect(errors).toHaveLength(1);
  });
});

describe('bus write queue with runs written together', () => {
  interface Batched {
    n: string;
    group?: string;
    fail?: boolean;
    failed?: (error: unknown) => void;
  }

  it('ENGINE-CPU-13 joined items go to writeAll in order, a passing one moves behind the run, a lone one to write; a failed run fails each item once', async () => {
    const calls: string[] = [];
    const failed: string[] = [];
    const errors: unknown[] = [];
    let release!: () => void;
    const q = writeQueue<Batched>(
      (it) => {
        calls.push(`write ${it.n}`);
        if (it.n === 'A') return new Promise<void>((resolve) => (release = resolve));
      },
      (e) => errors.push(e),
      {
        joins: (first, next) => first.group !== undefined && first.group === next.group,
        passes: (next) => next.n.startsWith('P'),
        writeAll: async (items) => {
          calls.push(`writeAll ${items.map((it) => it.n).join('')}`);
          if (items.some((it) => it.fail)) throw new Error('run failed');
        },
      },
    );
    const item = (n: string, extra: Partial<Batched> = {}): Batched => ({
      n,
      failed: () => failed.push(n),
      ...extra,
    });
    q.enqueue(item('A'));
    for (const queued of [
      item('B', { group: 'g' }),
      item('C', { group: 'g' }),
      item('P'),
      item('D', { group: 'g' }),
      item('E', { group: 'h' }),
      item('F', { group: 'h', fail: true }),
      item('G'),
    ])
      q.enqueue(queued);
    expect(calls).toEqual(['write A']);
    release();
    await q.flush();
    expect(calls).toEqual(['write A', 'writeAll BCD', 'write P', 'writeAll EF', 'write G']);
    expect(failed).toEqual(['E', 'F']);
    expect(errors).toHaveLength(1);
    // Idle again, a lone item answering at once is written before enqueue returns.
    q.enqueue(item('H', { group: 'g' }));
    expect(calls.at(-1)).toBe('write H');
    await q.flush();
  });
});
