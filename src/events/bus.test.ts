import { describe, expect, it } from 'vitest';
import { testClock } from '../../test/helpers/make-test-app';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { openDb } from '../store/db';
import { createEventBus } from './bus';

function setup(ringSize: number) {
  const db = openDb({ dataDir: tmpWorkspace() });
  return { db, bus: createEventBus({ db: () => db, clock: testClock(), ringSize }) };
}

describe('session event bus', () => {
  it('gives every event a monotonically increasing id and delivers it to session and * listeners', () => {
    const { bus } = setup(10);
    const seen: string[] = [];
    bus.subscribe('s1', (e) => seen.push(`s1:${e.type}:${e.id}`));
    bus.subscribe('*', (e) => seen.push(`*:${e.session_id}`));
    const a = bus.publish('s1', 'a', {});
    const b = bus.publish('s2', 'b', {});
    const c = bus.publish('s1', 'c', { n: 1 });
    expect(a.id).toBeLessThan(b.id);
    expect(b.id).toBeLessThan(c.id);
    expect(seen).toEqual([`s1:a:${a.id}`, '*:s1', '*:s2', `s1:c:${c.id}`, '*:s1']);
  });

  it('delivers an event published by a listener after the event being delivered, to every listener', () => {
    const { bus } = setup(10);
    const seen: string[] = [];
    bus.subscribe('*', (e) => {
      if (e.type === 'run.started') {
        const nested = bus.publish('s1', 'reaction', {});
        // Delivered later, but it has its id (and its place in the ring) already.
        expect(bus.lastId('s1')).toBe(nested.id);
      }
    });
    bus.subscribe('*', (e) => seen.push(`${e.type}:${e.id}`));
    const started = bus.publish('s1', 'run.started', {});
    expect(seen).toEqual([`run.started:${started.id}`, `reaction:${started.id + 1}`]);
    expect(bus.retained('s1').map((e) => e.type)).toEqual(['run.started', 'reaction']);
  });

  it('replays from the ring after a known id', () => {
    const { bus } = setup(10);
    const events = [1, 2, 3, 4].map((n) => bus.publish('s', 'tick', { n }));
    const replay = bus.replay('s', events[1].id);
    expect(replay.source).toBe('ring');
    expect(replay.events.map((e) => e.payload.n)).toEqual([3, 4]);
  });

  it('resyncs from the database log when the id is older than the ring', () => {
    const { bus } = setup(2);
    const events = [1, 2, 3, 4, 5].map((n) => bus.publish('s', 'tick', { n }));
    expect(bus.retained('s').map((e) => e.payload.n)).toEqual([4, 5]);
    const replay = bus.replay('s', events[0].id);
    expect(replay.source).toBe('log');
    expect(replay.events.map((e) => e.payload.n)).toEqual([2, 3, 4, 5]);
  });

  it('survives a restart: a new bus serves old ids from the log', () => {
    const { db, bus } = setup(10);
    const first = bus.publish('s', 'tick', { n: 1 });
    bus.publish('s', 'tick', { n: 2 });
    const restarted = createEventBus({ db: () => db, clock: testClock(), ringSize: 10 });
    expect(restarted.lastId('s')).toBeGreaterThan(first.id);
    const replay = restarted.replay('s', first.id);
    expect(replay).toMatchObject({ source: 'log' });
    expect(replay.events.map((e) => e.payload.n)).toEqual([2]);
    const next = restarted.publish('s', 'tick', { n: 3 });
    expect(next.id).toBeGreaterThan(replay.events[0].id);
  });

  it('keeps delivering when one listener throws', () => {
    const { bus } = setup(10);
    const got: number[] = [];
    bus.subscribe('s', () => {
      throw new Error('boom');
    });
    bus.subscribe('s', (e) => got.push(e.id));
    const e = bus.publish('s', 'x', {});
    expect(got).toEqual([e.id]);
  });

  it('keeps only the most recently used rings in memory and reads a dropped one back as it was', () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const bus = createEventBus({ db: () => db, clock: testClock(), ringSize: 2, maxRings: 2 });
    const listened: number[] = [];
    bus.subscribe('live', (e) => listened.push(e.id));
    bus.publish('live', 'tick', { n: 0 });
    for (const id of ['a', 'b', 'c']) for (const n of [1, 2, 3]) bus.publish(id, 'tick', { n });
    // 'a' left memory (least recently used, no listener); 'live' stayed although older.
    expect(bus.retained('a').map((e) => e.payload.n)).toEqual([2, 3]);
    expect(bus.replay('a', 0)).toMatchObject({ source: 'log' });
    expect(bus.replay('a', bus.retained('a')[0].id)).toMatchObject({ source: 'ring' });
    expect(bus.retained('live').map((e) => e.payload.n)).toEqual([0]);
    expect(bus.retained('b').map((e) => e.payload.n)).toEqual([2, 3]);
    const next = bus.publish('a', 'tick', { n: 4 });
    expect(bus.lastId('a')).toBe(next.id);
    expect(bus.retained('a').map((e) => e.payload.n)).toEqual([3, 4]);
    expect(listened).toHaveLength(1);
  });

  it('forgets a session without listeners left', () => {
    const { bus } = setup(10);
    const got: number[] = [];
    const off = bus.subscribe('s', (e) => got.push(e.id));
    off();
    const again = bus.subscribe('s', (e) => got.push(e.id));
    off();
    const e = bus.publish('s', 'x', {});
    expect(got).toEqual([e.id]);
    again();
  });
});
