/**
 * Whether the durable slot's engine would queue a root run (`DurableRuns.queues`, p-pgclaimed): a
 * send inserts a new session's run already claimed only when it would not (nothing attached, or an
 * engine without a queue).
 */
import { describe, expect, it } from 'vitest';
import { createDurableSlot } from '../../src/engine/durable-slot';

describe('the durable slot’s queue', () => {
  it('STORE-PG-293: queues only once an engine with `enqueue` is attached, and as that engine says', () => {
    const empty = createDurableSlot();
    expect(empty.durable.queues?.()).toBe(false);
    const plain = createDurableSlot();
    plain.attach({ execute: (_id, body) => body() });
    expect(plain.durable.queues?.()).toBe(false);
    const queuing = createDurableSlot();
    queuing.attach({ execute: (_id, body) => body(), enqueue: async () => undefined });
    expect(queuing.durable.queues?.()).toBe(true);
    const told = createDurableSlot();
    let open = false;
    told.attach({ execute: (_id, body) => body(), enqueue: async () => undefined, queues: () => open });
    expect(told.durable.queues?.()).toBe(false);
    open = true;
    expect(told.durable.queues?.()).toBe(true);
  });
});
