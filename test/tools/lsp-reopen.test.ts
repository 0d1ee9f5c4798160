/**
 * Re-checking a clean document by opening it again, against the fake language server
 * (test/fixtures/coding-tools/fake-lsp.mjs `--silent-unchanged`: it pushes a list only when it
 * changed, an empty list at a didClose, and every list after a didOpen, as
 * typescript-language-server does). Pins:
 * - with the quirk (lsp-quirks.ts), clean → clean answers complete and clean → broken reports the
 *   error even when the check takes longer than the quiet period: the empty list published at the
 *   close is not taken for the answer; the server is sent didClose, a barrier, didOpen;
 * - a server without the quirk is driven as before: didOpen then didChange only, and a silent
 *   one still answers incomplete after its wait;
 * - the quirk is typescript-language-server's however it is run, and no other server's.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LspClient } from '../../src/workspace/lsp-client';
import { quirksOf } from '../../src/workspace/lsp-quirks';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { toolHarness } from './harness';

const FAKE = resolve(import.meta.dirname, '../fixtures/coding-tools/fake-lsp.mjs');

/** The methods the fake server read, in order, from `--log=<file>`. */
const methods = (log: string) =>
  readFileSync(log, 'utf8')
    .split('\n')
    .filter((m) => m.startsWith('textDocument/did') || m === 'svc/barrier');

describe('re-checking a clean document by opening it again', { timeout: 60_000 }, () => {
  it('LSP-32: with the quirk, the close’s empty list is not the answer; clean → clean is complete', async () => {
    const dir = tmpWorkspace();
    const log = join(dir, 'methods.log');
    // Each check takes 800 ms, longer than the 300 ms quiet period after a publish.
    const server = {
      command: process.execPath,
      args: [FAKE, '--silent-unchanged', '--delay=800', `--log=${log}`],
      extensions: ['ts'],
      disabled: false,
    };
    const client = await LspClient.start('fake', server, dir, process.env, { reopenWhenClean: true });
    try {
      const uri = pathToFileURL(join(dir, 'a.ts')).href;
      const check = (text: string) => client.diagnose(uri, 'typescript', text, { waitMs: 20_000 });
      expect(await check('all fine\n')).toEqual({ diagnostics: [], complete: true });
      // Last list empty: closed and opened again. The empty list the close publishes comes first;
      // taken for the answer, this would say "complete, no problems" before the check.
      const broken = await check('all fine\nan ERROR now\n');
      expect(broken.complete).toBe(true);
      expect(broken.diagnostics).toEqual([expect.objectContaining({ line: 2, message: 'found ERROR' })]);
      // Last list not empty: changed as usual; the server publishes the emptied list.
      expect(await check('fixed\n')).toEqual({ diagnostics: [], complete: true });
      // Clean → clean: the server would stay silent after a change; opened again, it publishes.
      expect(await check('still fine\n')).toEqual({ diagnostics: [], complete: true });
      expect(methods(log)).toEqual([
        'textDocument/didOpen',
        'textDocument/didClose',
        'svc/barrier',
        'textDocument/didOpen',
        'textDocument/didChange',
        'textDocument/didClose',
        'svc/barrier',
        'textDocument/didOpen',
      ]);
    } finally {
      await client.stop();
    }
  });

  it('LSP-33: a server without the quirk gets didOpen and didChange only; a silent one still answers incomplete', async () => {
    const dir = tmpWorkspace();
    const log = join(dir, 'methods.log');
    const h = await toolHarness({
      files: { 'src/a.ts': 'all fine\n' },
      config: {
        // The fake server logs outside the workspace: a path the command sandbox must let it write.
        options: { sandbox: { allow_write: [dir] } },
        lsp: {
          fake: {
            command: process.execPath,
            args: [FAKE, '--silent-unchanged', `--log=${log}`],
            extensions: ['ts'],
          },
        },
      },
    });
    expect(await h.call('diagnostics', { path: 'src/a.ts', wait_seconds: 10 })).toMatchObject({
      complete: true,
      diagnostics: [],
    });
    writeFileSync(join(h.app.workspace, 'src/a.ts'), 'still fine\n');
    expect(await h.call('diagnostics', { path: 'src/a.ts', wait_seconds: 1 })).toMatchObject({
      complete: false,
      diagnostics: [],
    });
    expect(methods(log)).toEqual(['textDocument/didOpen', 'textDocument/didChange']);
  });

  it('LSP-34: the quirk is typescript-language-server’s, run by its bin or by node on its cli.mjs', () => {
    const quirk = (command: string, args: string[] = []) => quirksOf({ command, args }).reopenWhenClean;
    expect(quirk('typescript-language-server', ['--stdio'])).toBe(true);
    expect(quirk('/w/node_modules/.bin/typescript-language-server', ['--stdio'])).toBe(true);
    expect(quirk('C:\\bin\\typescript-language-server.cmd', ['--stdio'])).toBe(true);
    expect(quirk('npx', ['typescript-language-server', '--stdio'])).toBe(true);
    expect(
      quirk(process.execPath, ['/svc/node_modules/typescript-language-server/lib/cli.mjs', '--stdio']),
    ).toBe(true);
    expect(quirk(process.execPath, [FAKE, '--silent-unchanged'])).toBe(false);
    expect(quirk('pyright-langserver', ['--stdio'])).toBe(false);
    expect(quirk('vtsls', ['--stdio'])).toBe(false);
  });
});
