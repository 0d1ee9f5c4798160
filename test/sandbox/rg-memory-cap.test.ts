/**
 * ripgrep runs outside the sandbox and reads every directory's ignore files whole: a sparse
 * `.gitignore` (`truncate -s 10G sub/.gitignore`, a second's work for a command) took it past
 * 22 GB of memory for 1 GB (found by probing). On Linux it now runs under a data limit
 * (options.search.memory_limit_mb, src/workspace/child-limits.ts): the search ends with an error
 * naming the likely cause and the next step, svc's own memory untouched, and a search within the
 * limit answers as before.
 */
import { truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toolHarness } from '../tools/harness';

const MiB = 1024 * 1024;

describe.runIf(process.platform === 'linux')('ripgrep under a memory limit', () => {
  it('a sparse 64 MiB sub/.gitignore: ls, glob and grep refuse naming the likely cause; svc stays small', async () => {
    const h = await toolHarness({
      files: { 'a.txt': 'needle\n', 'sub/b.txt': 'needle\n', 'long.txt': `${'x'.repeat(MiB)} needle\n` },
      config: { options: { search: { memory_limit_mb: 256 } } },
    });
    try {
      // Within the limit: a megabyte-long line is searched as before.
      expect(await h.call('grep', { pattern: 'needle', output_mode: 'files' })).toMatchObject({
        files: ['a.txt', 'long.txt', 'sub/b.txt'],
      });
      const ignore = join(h.app.workspace, 'sub', '.gitignore');
      writeFileSync(ignore, '');
      truncateSync(ignore, 64 * MiB);
      const before = process.memoryUsage().rss;
      for (const [tool, input] of [
        ['grep', { pattern: 'needle' }],
        ['glob', { pattern: '**/*.txt' }],
        ['ls', {}],
      ] as const) {
        const outcome = await h.call(tool, input).then(
          (value) => value,
          (error: Error) => error,
        );
        expect(outcome, tool).toBeInstanceOf(Error);
        expect(outcome, tool).toMatchObject({
          code: 'conflict',
          details: { reason: 'memory', memory_limit_bytes: 256 * MiB },
        });
        expect((outcome as Error).message, tool).toMatch(
          /^the search was stopped: ripgrep ran out of its 256 MiB memory limit\. Most likely an ignore file it reads is oversized .*Remove or shrink that file, or narrow path or glob; to allow more, raise options\.search\.memory_limit_mb$/,
        );
      }
      // ripgrep's memory was its own: svc's grew by no more than the test's own allocations.
      expect(process.memoryUsage().rss - before).toBeLessThan(64 * MiB);
    } finally {
      await h.app.close();
    }
  }, 60_000);
});
