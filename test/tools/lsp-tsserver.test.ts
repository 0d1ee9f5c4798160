/**
 * Diagnostics of a server that passes requests on to tsserver (typescript-language-server offers
 * `typescript.tsserverRequest`), against the fake language server (test/fixtures/coding-tools/
 * fake-lsp.mjs `--tsserver`: it pushes in stages, the empty syntactic list at once and the whole
 * list later, as typescript-language-server does). Pins:
 * - the three lists are asked of tsserver after the text is sent, so an answer never ends between
 *   the stages (the official CI's LSP-04 failure: a loaded machine type-checked for longer than the
 *   quiet period after the empty syntactic list, and the answer said no errors);
 * - a clean file changed to a clean file answers at once, with no close and open again;
 * - a server that cannot answer those requests is driven by its pushes, and not asked again.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LspClient } from '../../src/workspace/lsp-client';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const FAKE = resolve(import.meta.dirname, '../fixtures/coding-tools/fake-lsp.mjs');

/** The methods the fake server read, in order, from `--log=<file>`, without the handshake. */
const methods = (log: string) =>
  readFileSync(log, 'utf8')
    .split('\n')
    .filter((m) => m.startsWith('textDocument/') || m.startsWith('workspace/execute') || m === 'svc/barrier');

async function fakeTsserver(mode: '--tsserver' | '--tsserver=fail', delayMs: number) {
  const dir = tmpWorkspace();
  const log = join(dir, 'methods.log');
  const server = {
    command: process.execPath,
    args: [FAKE, mode, `--delay=${delayMs}`, `--log=${log}`],
    extensions: ['ts'],
    disabled: false,
  };
  // The quirk of typescript-language-server is on, as for the real one.
  const client = await LspClient.start('fake', server, dir, process.env, { reopenWhenClean: true });
  const uri = pathToFileURL(join(dir, 'a.ts')).href;
  const check = (text: string) => client.diagnose(uri, 'typescript', text, { waitMs: 20_000 });
  return { client, log, check };
}

describe('diagnostics asked of tsserver', { timeout: 60_000 }, () => {
  it('LSP-35: the lists are asked for, not waited out between the pushed stages; clean → clean answers at once', async () => {
    // The whole list is pushed 1.5 s after the empty syntactic one: five quiet periods later.
    const { client, log, check } = await fakeTsserver('--tsserver', 1_500);
    try {
      const broken = await check('const a = 1;\nan ERROR here\nunused WARN\n');
      expect(broken.complete).toBe(true);
      expect(broken.diagnostics).toEqual([
        {
          line: 2,
          column: 4,
          end_line: 2,
          end_column: 9,
          severity: 'error',
          message: 'found ERROR',
          source: 'typescript',
          code: 2322,
        },
        {
          line: 3,
          column: 8,
          end_line: 3,
          end_column: 12,
          severity: 'hint',
          message: 'found WARN',
          source: 'typescript',
          code: 6133,
        },
      ]);
      expect(await check('fixed\n')).toEqual({ diagnostics: [], complete: true });
      expect(await check('still fine\n')).toEqual({ diagnostics: [], complete: true });
      const asked = ['workspace/executeCommand', 'workspace/executeCommand', 'workspace/executeCommand'];
      expect(methods(log)).toEqual([
        'textDocument/didOpen',
        ...asked,
        'textDocument/didChange',
        ...asked,
        'textDocument/didChange',
        ...asked,
      ]);
    } finally {
      await client.stop();
    }
  });

  it('LSP-36: a server that cannot answer them is driven by its pushes, and asked once only', async () => {
    const { client, log, check } = await fakeTsserver('--tsserver=fail', 50);
    try {
      const broken = await check('an ERROR here\n');
      expect(broken.complete).toBe(true);
      expect(broken.diagnostics).toEqual([
        expect.objectContaining({ line: 1, message: 'found ERROR', source: 'fake-lsp' }),
      ]);
      const fixed = await check('fixed\n');
      expect(fixed).toEqual({ diagnostics: [], complete: true });
      expect(methods(log).filter((m) => m === 'workspace/executeCommand')).toHaveLength(3);
    } finally {
      await client.stop();
    }
  });
});
