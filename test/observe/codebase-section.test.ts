/**
 * The codebase summary's system-prompt section (issue 17 item 3): every run's prompt reads the
 * cached row, but parses and renders it again only when its text or time changed; a row another
 * process wrote is what the next section shows.
 * @module
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Config } from '../../src/config/schema';
import { createCodebaseCacheStore } from '../../src/observe/codebase-cache-store';
import { createCodebaseContext } from '../../src/observe/codebase-context';
import type { CodebaseSummary } from '../../src/observe/codebase-summary';
import { openDb } from '../../src/store/db';
import { tmpWorkspace } from '../helpers/tmp-workspace';

afterEach(() => {
  vi.restoreAllMocks();
});

const summary = (files: number): CodebaseSummary => ({
  files: { total: files, truncated: false },
  languages: [{ language: 'typescript', files }],
  primary_language: 'typescript',
  top_level: [{ name: 'src', type: 'dir', files }],
  top_level_more: 0,
  manifests: [{ path: 'package.json', kind: 'npm' }],
  commands: { test: [], lint: [], typecheck: [], build: [] } as unknown as CodebaseSummary['commands'],
});

describe('codebase summary prompt section', () => {
  it('STORE-66 parses the cached row once while it is unchanged; another process its rewrite shows', async () => {
    const dataDir = tmpWorkspace();
    const mine = openDb({ dataDir });
    const context = createCodebaseContext({
      codebaseCache: createCodebaseCacheStore(() => mine),
      clock: { now: () => 0 },
      config: () => ({}) as Config,
      workspace: '/ws',
      ws: () => {
        throw new Error('not computed here');
      },
    });
    expect(await context.promptSection()).toBeUndefined();
    const other = createCodebaseCacheStore(() => openDb({ dataDir })); // a second svc
    await other.put('/ws', { summary: JSON.stringify(summary(7)), computed_at: 86_400_000, compute_ms: 3 });

    const parse = vi.spyOn(JSON, 'parse');
    const first = await context.promptSection();
    const second = await context.promptSection();
    const parsesOfRow = () =>
      parse.mock.calls.filter(([text]) => String(text).includes('"top_level"')).length;
    expect(parsesOfRow()).toBe(1); // main: once per section
    expect(second).toEqual(first);
    expect(first?.text).toContain('Files: 7; languages: typescript 7');
    expect(first?.text).toContain('cached 1970-01-02 00:00 UTC');

    await other.put('/ws', {
      summary: JSON.stringify(summary(9)),
      computed_at: 2 * 86_400_000,
      compute_ms: 3,
    });
    const rewritten = await context.promptSection();
    expect(rewritten?.text).toContain('Files: 9; languages: typescript 9');
    expect(rewritten?.text).toContain('cached 1970-01-03 00:00 UTC');
    expect(parsesOfRow()).toBe(2);
    expect(await context.promptSection()).toEqual(rewritten);
  });
});
