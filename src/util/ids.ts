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

const CROCKFORD = Buffer.from('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 'latin1');

/** The characters of an id after its prefix: 10 of time, then 16 of randomness. */
const ID_CHARS = 26;

/** Random bytes for 128 ids per draw: one call into the CSPRNG instead of one per id. */
const POOL_IDS = 128;
const pool = Buffer.alloc(10 * POOL_IDS);
let poolOffset = pool.length;

/** The next 10 random bytes of the pool, copied into `into`. */
function randomTen(into: Buffer): void {
  if (poolOffset >= pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  pool.copy(into, 0, poolOffset, poolOffset + 10);
  poolOffset += 10;
}

/**
 * ULID-shaped ids (48-bit time + 80-bit randomness), monotonic within one process. The 26
 * characters are written into one buffer and read out as one string: built a character at a
 * time, an id was ~27 intermediate strings (≈ 0.8 KB of garbage an id, ~8 ids a compat request).
 */
export function createIds(clock: Clock = systemClock): Ids {
  let lastTime = -1;
  const lastRandom = Buffer.alloc(10);
  const text = Buffer.alloc(ID_CHARS);
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
        randomTen(lastRandom);
      }
      encodeTime(time, text);
      encodeRandom(lastRandom, text);
      return `${prefix}_${text.toString('latin1', 0, ID_CHARS)}`;
    },
  };
}

/** The time in 10 Crockford base-32 characters, most significant first, at `text[0..9]`. */
function encodeTime(time: number, text: Buffer): void {
  let t = time;
  for (let i = 9; i >= 0; i--) {
    text[i] = CROCKFORD[t % 32] as number;
    t = Math.floor(t / 32);
  }
}

/** The 80 random bits in 16 Crockford base-32 characters at `text[10..25]`. */
function encodeRandom(bytes: Buffer, text: Buffer): void {
  let bits = 0;
  let value = 0;
  let at = 10;
  for (let i = 0; i < bytes.length; i++) {
    value = (value << 8) | (bytes[i] as number);
    bits += 8;
    while (bits >= 5) {
      text[at++] = CROCKFORD[(value >>> (bits - 5)) & 31] as number;
      bits -= 5;
    }
  }
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
