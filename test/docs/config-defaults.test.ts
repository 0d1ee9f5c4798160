/**
 * The config's defaults are generated ahead of time (issue 17: a load parses only the sections
 * its files name, src/config/section-parse.ts) into src/config/schema/defaults.generated.json.
 * This test fails when the file differs from `configSchema().parse({})`; `npm run docs` rewrites
 * it. And a config parsed section by section equals the full parse.
 */
import { describe, expect, it } from 'vitest';
import { configSchema, configSections } from '../../src/config/schema';
import generated from '../../src/config/schema/defaults.generated.json';
import { parseBySection } from '../../src/config/section-parse';

describe('generated config defaults', () => {
  it('are up to date with the schema (run `npm run docs` to regenerate them)', async () => {
    await expect(`${JSON.stringify(configSchema().parse({}), null, 2)}\n`).toMatchFileSnapshot(
      '../../src/config/schema/defaults.generated.json',
    );
  });

  it('are exactly the full parse of an empty config, and name every section', () => {
    expect(generated).toStrictEqual(configSchema().parse({}));
    expect(Object.keys(generated)).toEqual(Object.keys(configSections));
  });

  it('a config parsed section by section equals the full parse', () => {
    const inputs: Record<string, unknown>[] = [
      {},
      { providers: { fake: { type: 'openai-compat', base_url: 'http://127.0.0.1:1/v1', api_key: 'k' } } },
      { models: { large: 'fake/m' }, options: { max_steps: 7 }, permissions: {}, contracts: {} },
      { log: { level: 'debug' }, tui: { compact: true }, store: {}, engine: {}, budget: {} },
    ];
    for (const input of inputs) {
      const full = configSchema().parse(structuredClone(input));
      const bySection = parseBySection(structuredClone(input));
      expect(bySection, JSON.stringify(input)).toStrictEqual(full);
      expect(Object.keys(bySection ?? {})).toEqual(Object.keys(full));
    }
  });

  it('leaves unknown keys and invalid values to the full parse (warnings, errors)', () => {
    expect(parseBySection({ nope: 1 })).toBeUndefined();
    expect(parseBySection({ options: { not_an_option: 1 } })).toBeUndefined();
    expect(parseBySection({ log: { level: 'loud' } })).toBeUndefined();
  });
});
