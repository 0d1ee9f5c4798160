/** The configuration examples of docs/adaptive-orchestration.md parse with the config schema. */
import { readFileSync } from 'node:fs';
import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema';

function tomlAfter(file: string, heading: string): string {
  const text = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
  const section = text.split(heading)[1];
  const block = section?.split('```toml\n')[1]?.split('```')[0];
  if (!block) throw new Error(`no toml block after ${heading} in ${file}`);
  return block;
}

describe('adaptive orchestration docs', () => {
  it('the configuration example of docs/adaptive-orchestration.md is valid', () => {
    const config = configSchema().parse(
      parse(tomlAfter('docs/adaptive-orchestration.md', '## Configuration')),
    );
    expect(config.options.adaptive_orchestration).toMatchObject({
      enabled: true,
      classifier: 'heuristic',
      monitor: { cadence: 1, regulatory_history_max_events: 32 },
      eval_shadow: { min_evaluations: 3 },
    });
  });

  it('the short example of docs/adaptive-orchestration.md is valid', () => {
    const config = configSchema().parse(parse(tomlAfter('docs/adaptive-orchestration.md', '## In short')));
    expect(config.options.adaptive_orchestration.enabled).toBe(true);
  });
});
