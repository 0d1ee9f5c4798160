/**
 * Language servers run inside the command sandbox with the scrubbed environment (found by probing,
 * stop 80): a server is a program the workspace can choose (its node_modules/.bin, an `[lsp.*]`
 * entry in its svc.toml; both writable by the agent's sandboxed commands), and svc started it
 * outside the sandbox with its own environment: a planted one wrote svc's provider keys to the
 * host. Pins: the server sees no secret, cannot write outside the workspace (and `allow_write`),
 * and still answers; a missing program is named before the sandbox is started.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toolHarness } from '../tools/harness';

const FAKE = resolve(import.meta.dirname, '../fixtures/coding-tools/fake-lsp.mjs');
const SECRET = 'sk-should-never-reach-a-language-server-4242';

describe('language servers in the command sandbox', () => {
  it('a server runs sandboxed: no secret in its environment, no write outside, and it still answers', async () => {
    const seen = mkdtempSync(join(tmpdir(), 'svc-lsp-seen-'));
    const outside = mkdtempSync(join(tmpdir(), 'svc-lsp-outside-'));
    const script = [
      `env > ${join(seen, 'env')}`,
      `echo escaped > ${join(outside, 'escaped')} 2>/dev/null`,
      'exec "$0" "$1"',
    ].join('; ');
    const h = await toolHarness({
      files: { 'a.ts': 'an ERROR here\n' },
      env: { ...process.env, OPENAI_API_KEY: SECRET } as Record<string, string>,
      config: {
        lsp: { fake: { command: 'sh', args: ['-c', script, process.execPath, FAKE], extensions: ['ts'] } },
        options: { sandbox: { mode: 'bwrap', allow_write: [seen] } },
      },
    });
    try {
      const result = await h.call('diagnostics', { path: 'a.ts' });
      expect(JSON.stringify(result)).toContain('found ERROR');
      const env = readFileSync(join(seen, 'env'), 'utf8');
      expect(env).toContain('SVC=1');
      expect(env).not.toContain(SECRET);
      expect(env).not.toContain('OPENAI_API_KEY');
      expect(existsSync(join(outside, 'escaped'))).toBe(false);
    } finally {
      await h.app.close();
    }
  });

  it('a missing program is named, not a bwrap error', async () => {
    const h = await toolHarness({
      files: { 'b.go': 'x\n' },
      config: {
        lsp: { missing: { command: 'no-such-language-server-xyz', extensions: ['go'] } },
        options: { sandbox: { mode: 'bwrap' } },
      },
    });
    try {
      await expect(h.call('diagnostics', { path: 'b.go' })).rejects.toThrow(
        /language server missing: cannot start "no-such-language-server-xyz"; is it installed and on PATH\?/,
      );
    } finally {
      await h.app.close();
    }
  });
});
