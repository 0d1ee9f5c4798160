/**
 * A language server started through bash (a wrapper script, `bash -c "exec …"`) gets a socket as
 * stdin; with no SHLVL in its environment (svc started by systemd, say) bash sources ~/.bashrc,
 * whose output on stdout would be read as the protocol's. svc gives its servers SHLVL=1.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LspClient } from '../../src/workspace/lsp-client';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { FAKE_LSP } from './fake-lsp-server';

describe('a language server behind a bash wrapper', () => {
  it('LSP-SHELL-1: starts without sourcing ~/.bashrc and answers', { timeout: 60_000 }, async () => {
    const home = tmpWorkspace();
    const marker = join(home, 'bashrc-ran');
    writeFileSync(join(home, '.bashrc'), `echo "welcome from .bashrc"\necho sourced >> '${marker}'\n`);
    const dir = tmpWorkspace({ files: { 'a.ts': 'ERROR\n' } });
    const server = {
      command: 'bash',
      args: ['-c', `exec '${process.execPath}' '${FAKE_LSP}' --pull`],
      env: { HOME: home },
      extensions: ['ts'],
      disabled: false,
    };
    // svc's environment without SHLVL.
    const env = { PATH: process.env.PATH };
    const client = await LspClient.start('fake', server, dir, env, { reopenWhenClean: false });
    try {
      const uri = pathToFileURL(join(dir, 'a.ts')).href;
      client.sync(uri, 'typescript', 'ERROR\n');
      const answer = (await client.request('textDocument/diagnostic', { textDocument: { uri } }, 10_000)) as {
        items: unknown[];
      };
      expect(answer.items.length).toBeGreaterThan(0);
      expect(existsSync(marker)).toBe(false);
    } finally {
      await client.stop();
    }
  });
});
