/**
 * A bound in front of Ink's input parser (ink/build/input-parser.js). Ink holds an unfinished
 * CSI (`ESC [` and parameter bytes, no final byte yet) as pending and parses all it holds again on
 * each read, until the final byte comes or no read follows within the turn (then it hands it on):
 * an endless CSI sent in one burst cost quadratic time and memory without bound before the input
 * filter (./input-filter.ts) saw any of it.
 *
 * `guardStdin` wraps the terminal's `read()`, which Ink calls for each chunk: once a CSI reaches
 * `MAX_SEQUENCE_CHARS` characters with no final byte, the guard ends it for Ink with a final byte
 * of its own (Ink hands the sequence on, which names no key and is dropped), and drops the rest
 * of it: its parameter and intermediate bytes up to and with its final byte, up to another kind
 * of character (kept), or until the burst ends (no read in the turn, as Ink's own end). So Ink
 * never holds more than that. Everything else passes unchanged: keys (split across reads too),
 * mouse reports, a bracketed paste's markers and its text, whatever its length.
 * @module
 */

/** The longest CSI Ink is given (characters, from its ESC). */
export const MAX_SEQUENCE_CHARS = 4096;
/** The final byte that ends an overlong CSI for Ink: SGR, which names no key (input-filter.ts drops it). */
const FINAL = 'm';

export interface SequenceGuard {
  /** What Ink reads for `chunk` read from the terminal. */
  push(chunk: string): string;
  /** Characters of an unfinished escape sequence Ink holds now (at most `MAX_SEQUENCE_CHARS`). */
  held(): number;
  /** Whether an overlong CSI is being dropped. */
  dropping(): boolean;
  /** The burst ended (no read in the turn): Ink hands on what it holds, and the guard starts again. */
  idle(): void;
}

/** Where the input is: text; after ESC (or ESC ESC); in a CSI; in an overlong CSI, dropped. */
type State = 'text' | 'esc' | 'esc2' | 'csi' | 'skip';

const isParameter = (c: number) => c >= 0x20 && c <= 0x3f;
const isFinal = (c: number) => c >= 0x40 && c <= 0x7e;

/** The guard's reading of Ink's input parser: ESC, ESC ESC, `[` opens a CSI, a legacy `[[`. */
export function createSequenceGuard(max = MAX_SEQUENCE_CHARS): SequenceGuard {
  let state: State = 'text';
  let held = 0;
  let legacy = false;
  return {
    push(chunk) {
      let out = '';
      let from = 0;
      let i = 0;
      while (i < chunk.length) {
        if (state === 'text') {
          const esc = chunk.indexOf('\x1b', i);
          if (esc === -1) break;
          state = 'esc';
          held = 1;
          i = esc + 1;
          continue;
        }
        const c = chunk.charCodeAt(i);
        if (state === 'esc' || state === 'esc2') {
          i++;
          if (c === 0x5b) {
            state = 'csi';
            held++;
            legacy = true;
          } else if (c === 0x1b && state === 'esc') {
            state = 'esc2';
            held = 2;
          } else if (c === 0x1b) {
            // Ink hands ESC ESC on; this ESC opens another sequence.
            state = 'esc';
            held = 1;
          } else state = 'text';
          continue;
        }
        if (state === 'skip') {
          if (!isParameter(c)) state = 'text';
          if (isParameter(c) || isFinal(c)) from = ++i;
          continue;
        }
        // In a CSI, as Ink reads one: `[` first (a legacy key), parameter and intermediate bytes, a final byte.
        const first = legacy;
        legacy = false;
        if (isParameter(c) || (first && c === 0x5b)) {
          i++;
          if (++held < max) continue;
          out += chunk.slice(from, i) + FINAL;
          from = i;
          state = 'skip';
          held = 0;
          continue;
        }
        // A final byte ends it; any other character ends it too and is read again as text.
        state = 'text';
        held = 0;
        if (isFinal(c)) i++;
      }
      return from === 0 ? chunk : out + chunk.slice(from);
    },
    held: () => (state === 'text' || state === 'skip' ? 0 : held),
    dropping: () => state === 'skip',
    idle() {
      state = 'text';
      held = 0;
    },
  };
}

/**
 * Puts `guard` in front of Ink on `stdin`: Ink's reads (`read()`, as its readable listener calls
 * it, once it set the stream to UTF-8) go through it. Returns the undoing.
 */
export function guardStdin(stdin: NodeJS.ReadStream, guard = createSequenceGuard()): () => void {
  const own = Object.hasOwn(stdin, 'read');
  const read = stdin.read;
  let burst: NodeJS.Immediate | undefined;
  const guarded = function (this: NodeJS.ReadStream, size?: number) {
    const chunk: unknown = read.call(this, size);
    if (typeof chunk !== 'string') return chunk;
    if (burst !== undefined) clearImmediate(burst);
    burst = undefined;
    const out = guard.push(chunk);
    // As Ink: a sequence still open once no read came in the turn has ended.
    if (guard.held() > 0 || guard.dropping())
      burst = setImmediate(() => {
        burst = undefined;
        guard.idle();
      });
    return out;
  };
  stdin.read = guarded as typeof stdin.read;
  return () => {
    if (burst !== undefined) clearImmediate(burst);
    if (own) stdin.read = read;
    else Reflect.deleteProperty(stdin, 'read');
  };
}
