import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PASTE_END, PASTE_START } from './input-filter';
import { createSequenceGuard, MAX_SEQUENCE_CHARS } from './stdin-guard';

interface InkInputParser {
  push(chunk: string): string[];
  hasPendingEscape(): boolean;
  flushPendingEscape(): string | undefined;
}

// Ink's input parser, as installed (its package exports only its entry).
const inkBuild = dirname(createRequire(import.meta.url).resolve('ink'));
const inkParser = async (): Promise<InkInputParser> =>
  (
    (await import(pathToFileURL(join(inkBuild, 'input-parser.js')).href)) as {
      createInputParser: () => InkInputParser;
    }
  ).createInputParser();

/** Ink's events for `chunks` read one after another in one burst, with or without the guard. */
async function inkEvents(chunks: string[], guarded: boolean): Promise<string[]> {
  const parser = await inkParser();
  const guard = createSequenceGuard();
  const events = chunks.flatMap((chunk) => parser.push(guarded ? guard.push(chunk) : chunk));
  const pending = parser.flushPendingEscape();
  return pending === undefined ? events : [...events, pending];
}

describe('the guard in front of Ink on stdin', () => {
  it(`keeps Ink from holding an endless CSI past ${MAX_SEQUENCE_CHARS} characters, and keys come after it`, async () => {
    const parser = await inkParser();
    const guard = createSequenceGuard();
    const events: string[] = [];
    events.push(...parser.push(guard.push('a\x1b[')));
    // 256 KiB of parameter bytes and no final byte, in one burst of 1 KiB reads.
    for (let i = 0; i < 256; i++) {
      events.push(...parser.push(guard.push('1;'.repeat(512))));
      expect(guard.held()).toBeLessThanOrEqual(MAX_SEQUENCE_CHARS);
    }
    // Ink handed it on, ended, at the bound: it holds nothing.
    expect(parser.flushPendingEscape()).toBeUndefined();
    expect(events.map((e) => e.length)).toEqual([1, MAX_SEQUENCE_CHARS + 1]);
    expect(events[1]).toMatch(/^\x1b\[(?:1;)+1?m$/);
    // Its real end (a final byte) is dropped with it; what follows is read as before.
    expect(parser.push(guard.push(';;9Hok\x1b[A'))).toEqual(['ok', '\x1b[A']);
    // Once the burst ended, the rest of an overlong CSI that comes later is typed, as Ink does.
    parser.push(guard.push(`\x1b[${'2'.repeat(MAX_SEQUENCE_CHARS)}`));
    expect(guard.dropping()).toBe(true);
    guard.idle();
    expect(parser.push(guard.push('x'))).toEqual(['x']);
  });

  it('drops the rest of an overlong CSI up to another kind of character, which is kept', async () => {
    const long = `\x1b\x1b[${'0'.repeat(MAX_SEQUENCE_CHARS)}`;
    const events = await inkEvents([long, '00', '\x1b[B'], true);
    expect(events.map((e) => e.length)).toEqual([MAX_SEQUENCE_CHARS + 1, 3]);
    expect(events[1]).toBe('\x1b[B');
    expect(await inkEvents([`\x1b[${'<'.repeat(MAX_SEQUENCE_CHARS)}`, '<<é'], true)).toEqual([
      `\x1b[${'<'.repeat(MAX_SEQUENCE_CHARS - 2)}m`,
      'é',
    ]);
  });

  it('changes nothing else: keys, mouse reports and a long paste, split across reads anywhere', async () => {
    const text = Array.from(
      { length: 2000 },
      (_, i) => `line ${i} \x1b[31mred\x1b[0m ${'x'.repeat(40)}`,
    ).join('\r');
    const input = [
      'ab\x1b[A\x1b[1;5C\x1b\x1b[B\x1b[[5~\x1bOP\x1b\x1bx\x1b[13;5u\x1b[3;1:3~\x1b',
      '\x1b[<0;12;5M\x1b[<0;12;5m\x1b[M !!\x1b]0;title\x07\x1bP1$r0m\x1b\\é中🙂',
      `${PASTE_START}${text}${'1;'.repeat(3000)}${PASTE_END}done`,
    ].join('');
    const guard = createSequenceGuard();
    expect(guard.push(input)).toBe(input);
    const whole = await inkEvents([input], false);
    expect(await inkEvents([input], true)).toEqual(whole);
    const head = input.slice(0, 200);
    for (let at = 1; at < head.length; at++) {
      const split = [head.slice(0, at), head.slice(at)];
      expect(await inkEvents(split, true), `split at ${at}`).toEqual(await inkEvents(split, false));
    }
    // In reads of 7 characters.
    const reads = Array.from({ length: Math.ceil(input.length / 7) }, (_, i) =>
      input.slice(i * 7, i * 7 + 7),
    );
    expect(await inkEvents(reads, true)).toEqual(await inkEvents(reads, false));
  });
});
