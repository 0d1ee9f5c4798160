/**
 * What the model sees of the coding tools: names exactly as native-tools.tsv spells them, in the
 * families it gives, every input an object whose every field carries a description, and the
 * mutating ones marked so the funnel asks and plan mode withholds them.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allTools } from '../../src/tools/index';

const CODING: Record<string, { family: string; mutates: boolean }> = {
  view: { family: 'core-files', mutates: false },
  write: { family: 'core-files', mutates: true },
  multiedit: { family: 'core-files', mutates: true },
  ls: { family: 'core-files', mutates: false },
  glob: { family: 'core-files', mutates: false },
  grep: { family: 'core-files', mutates: false },
  bash: { family: 'core-shell', mutates: true },
  job_output: { family: 'core-shell', mutates: false },
  job_kill: { family: 'core-shell', mutates: true },
  fetch: { family: 'core-web', mutates: false },
  download: { family: 'core-web', mutates: true },
  todos: { family: 'planning', mutates: false },
  diagnostics: { family: 'core-code', mutates: false },
  search: { family: 'semantic', mutates: false },
  edit: { family: 'semantic', mutates: true },
  checkpoint_create: { family: 'checkpoints', mutates: false },
  checkpoint_list: { family: 'checkpoints', mutates: false },
  checkpoint_get: { family: 'checkpoints', mutates: false },
  checkpoint_update: { family: 'checkpoints', mutates: false },
  checkpoint_restore: { family: 'checkpoints', mutates: true },
  checkpoint_delete: { family: 'checkpoints', mutates: true },
  checkpoint_undo: { family: 'checkpoints', mutates: true },
};

type Schema = { type?: string; description?: string; properties?: Record<string, Schema>; items?: Schema };

function undescribed(schema: Schema, at: string): string[] {
  const missing: string[] = [];
  for (const [key, prop] of Object.entries(schema.properties ?? {})) {
    if (!prop.description) missing.push(`${at}.${key}`);
    if (prop.items?.properties) missing.push(...undescribed(prop.items, `${at}.${key}[]`));
  }
  return missing;
}

describe('coding tool schemas', () => {
  it('are defined with the native names, families and mutates flags', () => {
    const defined = Object.fromEntries(
      allTools.filter((t) => t.name in CODING).map((t) => [t.name, { family: t.family, mutates: t.mutates }]),
    );
    expect(defined).toEqual(CODING);
  });

  it('describe every field for the model', () => {
    for (const tool of allTools.filter((t) => t.name in CODING)) {
      const schema = z.toJSONSchema(tool.input, { io: 'input' }) as Schema;
      expect(schema.type, tool.name).toBe('object');
      expect(undescribed(schema, tool.name)).toEqual([]);
      expect(tool.description.length, tool.name).toBeGreaterThan(60);
    }
  });
});
