/** The pack example of docs/operating-mode.md is a valid pack (docs that do not parse are a defect). */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseManifestText } from '../../src/packs/manifest';

describe('docs/operating-mode.md pack example', () => {
  it('validates without errors', () => {
    const readme = readFileSync(new URL('../../docs/operating-mode.md', import.meta.url), 'utf8');
    const example = readme.split('# .svc/packs/review/pack.toml\n')[1]?.split('```')[0];
    expect(example).toBeDefined();
    const parsed = parseManifestText(example!, { expectedName: 'review' });
    expect(parsed.diagnostics).toEqual([]);
    expect(parsed.manifest).toMatchObject({ name: 'review', choreography: 'executor_reviewer' });
    expect(parsed.manifest?.hooks).toHaveLength(2);
  });
});
