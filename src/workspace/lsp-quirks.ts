/**
 * What svc knows about particular language servers that the protocol leaves open. Diagnostics
 * wait for a server's `publishDiagnostics` after a change; typescript-language-server (v5,
 * `FileDiagnostics.update`) publishes nothing for a change that leaves an empty list empty, and
 * signals nothing else when its check is done, so an edit that keeps a file clean would wait out
 * the whole diagnostics wait. It does publish every list of a document it has just opened, empty
 * ones included: for it, a document whose last list was empty is closed and opened again with the
 * new text instead of changed (lsp-client.ts `reopen`). Other servers are driven as the protocol
 * says, with didChange. (A typescript-language-server that offers `typescript.tsserverRequest` is
 * asked for tsserver's lists instead, and its pushes are not waited on: lsp-client.ts
 * `askTsserver`; this quirk serves one that cannot answer them.)
 * @module
 */

import type { LspServerConfig } from '../config/schema';
import { SvcError } from '../errors';

export interface LspQuirks {
  /**
   * Publishes a document's diagnostics only when a list changes, and all of them after a didOpen:
   * re-check a document whose last published list was empty by closing and opening it again.
   */
  reopenWhenClean: boolean;
}

export const NO_QUIRKS: LspQuirks = { reopenWhenClean: false };

/**
 * typescript-language-server, however it is run: its bin (`typescript-language-server`, on PATH or
 * in node_modules/.bin) or node on its `lib/cli.mjs` (svc's built-in), under any `[lsp.<id>]` id.
 */
export function quirksOf(server: Pick<LspServerConfig, 'command' | 'args'>): LspQuirks {
  const names = [server.command, ...server.args];
  const typescriptLanguageServer = names.some(
    (name) =>
      /(^|[\\/])typescript-language-server(\.cmd|\.exe)?$/i.test(name) ||
      /(^|[\\/])typescript-language-server[\\/]lib[\\/]cli\.mjs$/.test(name),
  );
  return { reopenWhenClean: typescriptLanguageServer };
}

/** A language server whose program is not there (svc's error, before or after the spawn). */
export const cannotStart = (id: string, command: string) =>
  new SvcError(
    'unavailable',
    `language server ${id}: cannot start "${command}"; is it installed and on PATH?`,
  );
