import { randomFillSync } from 'node:crypto';

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export interface Ids {
  /** A new id with the given prefix, sortable by creation time: `ses_01J…`. */
  next(prefix: string): string;
}

export const systemClock: Clock = { now: () => Date.now() };

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** Random bytes for 128 ids per draw: one call into the CSPRNG instead of one per id. */
const POOL_IDS = 128;
const pool = Buffer.alloc(10 * POOL_IDS);
let poolOffset = pool.length;

function randomTen(): Buffer {
  if (poolOffset >= pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const out = Buffer.from(pool.subarray(poolOffset, poolOffset + 10));
  poolOffset += 10;
  return out;
}

/** ULID-shaped ids (48-bit time + 80-bit randomness), monotonic within one process. */
export function createIds(clock: Clock = systemClock): Ids {
  let lastTime = -1;
  let lastRandom: Buffer = Buffer.alloc(10);
  return {
    next(prefix: string) {
      const time = clock.now();
      if (time === lastTime) {
        // Same millisecond: increment the random part so ids stay strictly ordered.
        for (let i = 9; i >= 0; i--) {
          lastRandom[i] = (lastRandom[i] + 1) & 0xff;
          if (lastRandom[i] !== 0) break;
        }
      } else {
        lastTime = time;
        lastRandom = randomTen();
      }
      return `${prefix}_${encodeTime(time)}${encodeRandom(lastRandom)}`;
    },
  };
}

function encodeTime(time: number): string {
  let out = '';
  let t = time;
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return out;
}

function encodeRandom(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += CROCKFORD[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}

/** Deterministic ids for tests: `ses_0001`, `ses_0002`, … per prefix. */
export function createSequentialIds(): Ids {
  const counters = new Map<string, number>();
  return {
    next(prefix: string) {
      const n = (counters.get(prefix) ?? 0) + 1;
      counters.set(prefix, n);
      return `${prefix}_${String(n).padStart(4, '0')}`;
    },
  };
}
