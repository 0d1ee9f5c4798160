/**
 * Every key handler of the TUI goes through useLatestInput (src/surfaces/tui/ui/use-latest-input.ts):
 * a handler subscribed with Ink's `useInput` directly is the previous render's handler until
 * React's passive effects run, and a key in between acts on what is no longer on screen.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const TUI = join(__dirname, '../../src/surfaces/tui');
const HOOK = 'ui/use-latest-input.ts';
/** The root's one subscription, which hands each key to the hook's registered handlers. */
const ROOT = 'ui/key-input.tsx';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

/** The code of a file without its comments (a comment may name `useInput`). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');

describe('TUI key handler wiring', () => {
  it('TUI-KEYS-18: no file under src/surfaces/tui but the hook and the key root uses Ink useInput', () => {
    const files = sources(TUI).map((path) => relative(TUI, path).split('\\').join('/'));
    expect(files).toContain(HOOK);
    expect(files).toContain(ROOT);
    const direct = files.filter(
      (file) =>
        file !== HOOK &&
        file !== ROOT &&
        // A unit test beside the code may name it (input-filter-ink.test.ts checks Ink's parser).
        !/\.test\.tsx?$/.test(file) &&
        /\buseInput\b/.test(code(readFileSync(join(TUI, file), 'utf8'))),
    );
    expect(direct).toEqual([]);
  });
});
