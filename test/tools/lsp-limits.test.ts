/**
 * A language server svc does not trust (test/fixtures/coding-tools/flood-lsp.mjs). Pins:
 * - a message announced over 16 MiB, or a header section over 8 KiB, stops the server with an
 *   error naming the size and the limit (nothing of the body is buffered);
 * - what is kept of one file's diagnostics is capped (errors first, long messages cut), and the
 *   answer says how many were not kept;
 * - a definition or reference the server places outside the workspace or in a protected location
 *   keeps its place, not its text, and says why.
 */
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toolHarness } from './harness';

const FLOOD = resolve(import.meta.dirname, '../fixtures/coding-tools/flood-lsp.mjs');
const lsp = (args: string[], env: Record<string, string> = {}) => ({
  lsp: { flood: { command: process.execPath, args: [FLOOD, ...args], extensions: ['ts'], env } },
});
const FILES = { 'src/a.ts': 'export const total = 1;\n', 'src/b.ts': 'export const other = total;\n' };

describe('limits on what a language server sends', () => {
  it('a message announced over 16 MiB stops the server with the size and the limit', async () => {
    const h = await toolHarness({ files: FILES, config: lsp(['--huge']) });
    await expect(h.call('diagnostics', { path: 'src/a.ts', wait_seconds: 30 })).rejects.toThrow(
      /language server flood sent a 60\.0 MiB message, over the 16\.0 MiB limit for one message; svc stopped it/,
    );
  });

  it('a header section over 8 KiB stops the server', async () => {
    const h = await toolHarness({ files: FILES, config: lsp(['--long-header']) });
    await expect(h.call('diagnostics', { path: 'src/a.ts', wait_seconds: 30 })).rejects.toThrow(
      /language server flood sent a message header over 8192 bytes/,
    );
  });

  it("keeps at most 1000 of one file's diagnostics, errors first, and says how many it dropped", async () => {
    const h = await toolHarness({ files: FILES, config: lsp(['--many=3000']) });
    const result = await h.call('diagnostics', { path: 'src/a.ts', wait_seconds: 30 });
    expect(result.diagnostics).toHaveLength(1000);
    expect(result.dropped).toBe(2000);
    expect(result.diagnostics.every((d: { severity: string }) => d.severity === 'error')).toBe(true);
    const long = result.diagnostics.find((d: { message: string }) => d.message.startsWith('problem 1 '));
    expect(long.message).toHaveLength(2001);
    expect(h.modelText('diagnostics', result)).toContain('(1000 errors, 0 warnings; 2000 more not kept');
  });
});

describe('locations a language server names', () => {
  it('outside the workspace or in a protected location: the place, not the text, and why', async () => {
    const outside = realpathSync(mkdtempSync(join(tmpdir(), 'svc-lsp-outside-')));
    writeFileSync(join(outside, 'far.ts'), 'export const FAR_SECRET = 1;\n');
    const dataDir = realpathSync(mkdtempSync(join(tmpdir(), 'svc-lsp-data-')));
    writeFileSync(join(dataDir, 'notes.ts'), 'DATA_DIR_SECRET\n');
    const h = await toolHarness({
      files: FILES,
      dataDir,
      config: {
        ...lsp([], {
          LOCATION_FILES: ['src/b.ts', join(outside, 'far.ts'), join(dataDir, 'notes.ts')].join(','),
        }),
        permissions: { allow_outside_workspace: true },
      },
    });
    const definition = await h.call('search', {
      mode: 'symbol-definition',
      path: 'src/a.ts',
      line: 1,
      column: 14,
    });
    expect(definition.engine).toBe('lsp');
    expect(definition.definitions).toEqual([
      expect.objectContaining({ path: 'src/b.ts', line: 1, text: 'export const other = total;' }),
      expect.objectContaining({
        path: join(outside, 'far.ts'),
        text: '',
        text_withheld: 'outside the workspace',
      }),
      expect.objectContaining({
        path: join(dataDir, 'notes.ts'),
        text: '',
        text_withheld: expect.stringMatching(/which svc's tools never read$/),
      }),
    ]);
    const shown = h.modelText('search', definition);
    expect(shown).not.toMatch(/FAR_SECRET|DATA_DIR_SECRET/);
    expect(shown).toContain(`${join(outside, 'far.ts')}:1:1: (text not read: outside the workspace)`);
  });
});
