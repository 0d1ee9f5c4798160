/**
 * The PostgreSQL driver loads only when a postgres store URL is configured (issue 18): in the
 * bundle, `pg` is imported by no module that the entry or the CLI chunk reaches through static
 * imports, only behind `await import()` (start-up time is measured; SQLite users never pay it).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from '../helpers/run-bin';

const DIST = dirname(BIN);
const STATIC = /(?:^|\n)\s*import\s+(?:[^'"();]*?\s+from\s+)?["'](\.\/[^"']+)["']/g;
const DYNAMIC = /import\(\s*["'](\.\/[^"']+)["']\s*\)/g;
const PG = /(?:from\s+|import\(\s*)["']pg["']/;

function staticClosure(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const match of readFileSync(join(DIST, file), 'utf8').matchAll(STATIC)) visit(match[1]!.slice(2));
  };
  visit(entry);
  return seen;
}

describe('the pg driver is loaded lazily', () => {
  it('STORE-PG-40: no module reached by static imports from the entry or the CLI chunk imports pg', () => {
    expect(existsSync(BIN), 'run npm run build first').toBe(true);
    const main = readFileSync(BIN, 'utf8');
    const entries = ['main.js', ...[...main.matchAll(DYNAMIC)].map((m) => m[1]!.slice(2))];
    const reached = new Set(entries.flatMap((entry) => [...staticClosure(entry)]));
    expect(reached.size).toBeGreaterThan(1);
    const importers = [...reached].filter((file) => PG.test(readFileSync(join(DIST, file), 'utf8')));
    expect(importers).toEqual([]);
    // The driver is in the bundle's graph at all (behind a dynamic import), and stays external.
    const all = readFileSync(join(DIST, [...reached].find((f) => f.startsWith('cli'))!), 'utf8');
    expect(all).toMatch(/import\("\.\/client-[\w-]+\.js"\)/);
  });
});
