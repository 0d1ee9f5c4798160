/**
 * The config parsed section by section (issue 17): building the whole config schema (~300 zod
 * schemas) was ~10 ms of every `svc run`, whose config usually names one or two sections. When
 * every top-level key is a known section and each present section is valid on its own, the
 * config is those sections parsed plus the defaults of the absent ones, as generated ahead of time
 * into `schema/defaults.generated.json` (`npm run docs`; test/docs/config-defaults.test.ts fails
 * when it differs from `configSchema().parse({})`). The top-level object has no rule across
 * sections, so this is the full parse's result. Anything else (an unknown key, an invalid value)
 * returns undefined: the caller runs the full parse, for its warnings and errors.
 * @module
 */
import { type Config, type ConfigSection, configSections } from './schema';
import generatedDefaults from './schema/defaults.generated.json';

const defaults: Readonly<Record<string, unknown>> = generatedDefaults;

function isSection(key: string): key is ConfigSection {
  return Object.hasOwn(configSections, key);
}

export function parseBySection(data: Record<string, unknown>): Config | undefined {
  for (const key of Object.keys(data)) if (!isSection(key)) return undefined;
  const config: Record<string, unknown> = {};
  // In the schema's key order, as the full parse gives them.
  for (const key of Object.keys(configSections)) {
    if (!isSection(key)) continue;
    if (data[key] === undefined) {
      if (!Object.hasOwn(defaults, key)) return undefined;
      config[key] = structuredClone(defaults[key]);
      continue;
    }
    const result = configSections[key]().safeParse(data[key], { jitless: true });
    if (!result.success) return undefined;
    config[key] = result.data;
  }
  // Each section is its schema's output and the object has exactly the schema's keys.
  return config as Config;
}
