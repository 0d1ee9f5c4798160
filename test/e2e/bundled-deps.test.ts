/**
 * The pure-JS packages on the hot paths are bundled and tree-shaken (tsdown.config.ts,
 * `alwaysBundle`; issue 17). A subpath the patterns miss stays external and loads the package's
 * whole build from node_modules: `ai/internal` (the step driver's `await import`) did, and with it
 * zod 4 with all 66 locales, zod 3, the gateway and OIDC packages, ~60 ms of CPU on every
 * `svc run`. Checked on the built bundle (`npm run build` first, like every e2e test).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { asciiOnly } from '../../build/ascii-chunks';

const DIST = resolve(__dirname, '../../dist');
/** Packages that must be inside the bundle, never loaded from node_modules. */
const BUNDLED =
  /^(ai|@ai-sdk\/[^/]+|zod|hono|@hono\/[^/]+|smol-toml|commander|eventsource-parser|diff|cron-parser)(\/|$)/;
/** A module load in code: `require("x")`, `import("x")`, or a top-level `import … from "x"`. */
const SPECIFIER = /(?:\brequire\(|\bimport\(|^(?:import|export)\b[^\n;]*?\bfrom\s*)["']([^"'./][^"']*)["']/gm;

describe('ENGINE-BUNDLE: bundled dependencies', () => {
  it('ENGINE-BUNDLE-1 no chunk of either build loads a bundled package (or a subpath of one) from node_modules', () => {
    const chunks = readdirSync(DIST).filter((f) => /\.(c?js)$/.test(f));
    expect(chunks.length).toBeGreaterThan(10);
    const external: string[] = [];
    for (const chunk of chunks) {
      for (const [, specifier] of readFileSync(join(DIST, chunk), 'utf8').matchAll(SPECIFIER)) {
        if (BUNDLED.test(specifier)) external.push(`${chunk}: ${specifier}`);
      }
    }
    expect(external).toEqual([]);
  });

  it('ENGINE-BUNDLE-2 every chunk of either build is ASCII (V8 keeps a one-byte source; build/ascii-chunks.ts)', () => {
    const chunks = readdirSync(DIST).filter((f) => /\.(c?js)$/.test(f));
    expect(chunks.length).toBeGreaterThan(10);
    const wide: string[] = [];
    for (const chunk of chunks) {
      const at = readFileSync(join(DIST, chunk), 'utf8').search(/[^\x00-\x7f]/);
      if (at >= 0) wide.push(`${chunk} at ${at}`);
    }
    expect(wide).toEqual([]);
  });

  it('ENGINE-BUNDLE-2 the escaped code means the same: strings, templates, regular expressions, comments', () => {
    const source = [
      'const a = "wait\u2026 \u2192 done \u00d7 \u{1F600}";',
      'const b = `${a} \u2014 \u2713`;',
      'const c = /[\u2190-\u2193]\u2026/u.test("\u2191\u2026");',
      'const d = "\\\u2026"; // a comment \u2248 with an arrow \u2192',
      'const e = "tab\u00a0nbsp";',
      'return [a, b, c, d, e];',
    ].join('\n');
    expect(source).toMatch(/[^\x00-\x7f]/);
    const ascii = asciiOnly(source);
    // the no-break space is whitespace-class and stays; the backslash-escaped ellipsis stays too
    expect(ascii.replace(/[\u00a0]|\\\u2026/g, '')).not.toMatch(/[^\x00-\x7f]/);
    expect(ascii).toContain('\\u2026');
    expect(new Function(ascii)()).toEqual(new Function(source)());
  });

  it('ENGINE-BUNDLE-3 the generated tool input schemas are bundled as JSON text, parsed on first use (build/json-text.ts)', () => {
    const builds = readdirSync(DIST).filter((f) => /^tools-.*\.(c?js)$/.test(f));
    expect(builds.length).toBe(2);
    for (const chunk of builds) {
      const code = readFileSync(join(DIST, chunk), 'utf8');
      expect(code).toContain('"view": "{\\"type\\":\\"object\\"');
      expect(code).not.toMatch(/\bview: \{\s*"type": "object"/);
    }
  });
});
