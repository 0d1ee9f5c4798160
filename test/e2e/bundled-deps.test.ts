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
});
