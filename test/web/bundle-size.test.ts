/**
 * The built page stays small: its JS and CSS together under 300 KB gzipped (issue 20), with no
 * inline script (the CSP forbids one) and no reference to another origin.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { requireBuild } from './harness';

const WEB = resolve(__dirname, '../../dist/web');
const BUDGET = 300 * 1024;

describe('dist/web', () => {
  it('is under 300 KB of gzipped JS and CSS', () => {
    requireBuild();
    const assets = readdirSync(join(WEB, 'assets')).filter((f) => /\.(js|css)$/.test(f));
    expect(assets.some((f) => f.endsWith('.js'))).toBe(true);
    expect(assets.some((f) => f.endsWith('.css'))).toBe(true);
    const gzipped = assets.reduce(
      (n, f) => n + gzipSync(readFileSync(join(WEB, 'assets', f)), { level: 9 }).length,
      0,
    );
    console.log(`dist/web: ${assets.length} JS/CSS files, ${(gzipped / 1024).toFixed(1)} KB gzipped`);
    expect(gzipped).toBeLessThan(BUDGET);
  });

  it('has no inline script and loads nothing from another origin', () => {
    requireBuild();
    const html = readFileSync(join(WEB, 'index.html'), 'utf8');
    for (const tag of html.match(/<script\b[^>]*>[\s\S]*?<\/script>/g) ?? []) {
      expect(tag).toMatch(/\bsrc="\.\/assets\/[^"]+\.js"/);
      expect(tag.replace(/<script\b[^>]*>|<\/script>/g, '').trim()).toBe('');
    }
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });
});
