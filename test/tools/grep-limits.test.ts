/**
 * grep's limits: a pattern that is slow on what it searches is stopped after a time limit and
 * answers with what it found, saying so (ripgrep was only stopped by a cancel or its output cap:
 * `x{1000}{1000}` over one 10 MB line never returned); a pattern too long to pass to ripgrep is
 * refused naming the limit (it was `internal error: spawn E2BIG`).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPathResolver } from '../../src/workspace/paths';
import { createSearchOps, SEARCH_LIMITS } from '../../src/workspace/search';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { toolHarness } from './harness';

describe('grep limits', () => {
  it('a catastrophic pattern is stopped at the time limit with what was found and a note', async () => {
    const root = tmpWorkspace({ files: { 'a.txt': 'needle\n' } });
    mkdirSync(join(root, 'z'));
    writeFileSync(join(root, 'z', 'huge.txt'), `${'x'.repeat(10 * 1024 * 1024)}\n`);
    const paths = createPathResolver({ root, allowOutside: () => false });
    const ops = createSearchOps({ paths, dataDir: join(root, '.svc'), timeLimitMs: 200 });
    let started = Date.now();
    const content = await ops.grep({ pattern: 'x{1000}{1000}' }, { tool: 'grep' });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(content).toMatchObject({
      total: 0,
      truncated: true,
      note: 'stopped after 200 ms: the pattern is slow on this workspace; these are the results found until then. Narrow path or glob, or simplify the pattern',
    });
    // About 8 s unstopped; two seconds are time to compile the pattern and find the needle in a.txt
    // (one was, on a quiet box), and what was found before the time ran out is in the answer.
    const slower = createSearchOps({ paths, dataDir: join(root, '.svc'), timeLimitMs: 2_000 });
    started = Date.now();
    const files = await slower.grep(
      { pattern: 'needle|x{300}{100}', output_mode: 'files' },
      { tool: 'grep' },
    );
    expect(Date.now() - started).toBeLessThan(7_000);
    expect(files).toMatchObject({
      files: ['a.txt'],
      truncated: true,
      note: expect.stringMatching(/^stopped after 2 s: /),
    });
    // A search that ends within its limit has no note. Its limit is not 200 ms: on a loaded box (CI's
    // Node 24 leg) even a one-file search took longer than that once.
    const roomy = createSearchOps({ paths, dataDir: join(root, '.svc'), timeLimitMs: 60_000 });
    expect(await roomy.grep({ pattern: 'needle', path: 'a.txt' }, { tool: 'grep' })).not.toHaveProperty(
      'note',
    );
  });

  it('the model reads the note, found matches or none', async () => {
    const h = await toolHarness({ files: { 'a.txt': 'x\n' } });
    const note = 'stopped after 30 s: the pattern is slow';
    const base = { pattern: 'p', path: '.', truncated: true, note };
    expect(h.modelText('grep', { ...base, output_mode: 'content', matches: [], total: 0 })).toBe(
      `No matches for p under ..\n(${note})`,
    );
    expect(h.modelText('grep', { ...base, output_mode: 'files', files: ['a.txt'], total: 1 })).toBe(
      `a.txt\n(${note})`,
    );
  });

  it('a pattern or glob over 64 KiB is invalid input naming the limit, not spawn E2BIG', async () => {
    const h = await toolHarness({ files: { 'a.txt': 'x\n' } });
    const long = 'a'.repeat(130 * 1024);
    const refusal =
      /^pattern: 133120 bytes is over the 64 KiB limit for a search pattern; search for a shorter/;
    await expect(h.call('grep', { pattern: long })).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(refusal),
    });
    await expect(h.call('search', { mode: 'text', pattern: long })).rejects.toThrow(refusal);
    await expect(h.call('glob', { pattern: long })).rejects.toThrow(refusal);
    await expect(h.call('grep', { pattern: 'x', glob: long })).rejects.toThrow(
      /^glob: 133120 bytes is over the 64 KiB limit/,
    );
    await expect(h.call('ls', { ignore: [long] })).rejects.toThrow(
      /^ignore: 133120 bytes is over the 64 KiB limit/,
    );
    // At the limit it runs.
    const atLimit = 'x'.repeat(SEARCH_LIMITS.maxPatternBytes);
    expect(await h.call('grep', { pattern: atLimit, literal: true })).toMatchObject({ total: 0 });
  });
});
