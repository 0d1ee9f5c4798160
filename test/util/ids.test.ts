/**
 * Ids (src/util/ids.ts). Pins:
 * - an id is `<prefix>_` and 26 Crockford base-32 characters: 10 of the clock's milliseconds,
 *   16 of 80 random bits, as the character-by-character encoding gives them (ENGINE-CPU-83);
 * - ids of one millisecond count up by one in their random part, so they stay strictly ordered;
 * - an id is built from one buffer, not character by character: well under 0.3 KB of garbage an
 *   id where it was ≈ 0.8 KB (ENGINE-CPU-84; V8's sampling heap profiler, no timing).
 */
import { Session } from 'node:inspector';
import { describe, expect, it } from 'vitest';
import { createIds } from '../../src/util/ids';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The reference encoding: time then random bits, one character at a time. */
function reference(time: number, random: bigint): string {
  let out = '';
  let t = time;
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD[t % 32] + out;
    t = Math.floor(t / 32);
  }
  for (let i = 15; i >= 0; i--) out += CROCKFORD[Number((random >> BigInt(i * 5)) & 31n)];
  return out;
}

function randomOf(id: string): bigint {
  let value = 0n;
  for (const char of id.slice(-16)) value = value * 32n + BigInt(CROCKFORD.indexOf(char));
  return value;
}

describe('ids', () => {
  it('ENGINE-CPU-83 an id is the prefix, the time and the random part in Crockford base 32, ordered', () => {
    let now = 1_764_547_200_123;
    const ids = createIds({ now: () => now });
    const first = ids.next('ses');
    const second = ids.next('run');
    now += 1;
    const third = ids.next('ses');
    for (const [id, prefix, time] of [
      [first, 'ses', now - 1],
      [second, 'run', now - 1],
      [third, 'ses', now],
    ] as const) {
      expect(id).toMatch(new RegExp(`^${prefix}_[${CROCKFORD}]{26}$`));
      expect(id.slice(prefix.length + 1)).toBe(reference(time, randomOf(id)));
    }
    // Same millisecond: the random part counts up by one.
    expect(randomOf(second)).toBe((randomOf(first) + 1n) % 2n ** 80n);
    expect(second.slice(4) > first.slice(4)).toBe(true);
    expect(third.slice(4) > second.slice(4)).toBe(true);
    // Many in one millisecond stay strictly ordered and distinct.
    const many = Array.from({ length: 500 }, () => ids.next('x').slice(2));
    expect([...many].sort()).toEqual(many);
    expect(new Set(many).size).toBe(many.length);
  });

  it('ENGINE-CPU-84 an id allocates one string of its characters, not one a character', async () => {
    const ids = createIds();
    const count = 20_000;
    const bytes = await allocatedBy(() => {
      const out: string[] = [];
      for (let i = 0; i < count; i++) out.push(ids.next('msg'));
      return out;
    });
    expect(bytes / count).toBeGreaterThan(40); // the id's own characters: measured, not missed
    expect(bytes / count).toBeLessThan(300);
  });
});

/** Bytes allocated while `body` runs (garbage included), sampled every 64 bytes. */
async function allocatedBy(body: () => unknown): Promise<number> {
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) =>
      session.post(method, params ?? {}, (error, result) => (error ? reject(error) : resolve(result))),
    );
  await post('HeapProfiler.startSampling', {
    samplingInterval: 64,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  body();
  const { profile } = (await post('HeapProfiler.stopSampling')) as { profile: { head: ProfileNode } };
  session.disconnect();
  let total = 0;
  const walk = (node: ProfileNode) => {
    total += node.selfSize;
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  return total;
}

interface ProfileNode {
  selfSize: number;
  children: ProfileNode[];
}
