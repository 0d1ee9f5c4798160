/**
 * The `initialize` handshake's parameters (what svc tells a language server it can do) and how
 * long the server has to answer it.
 * @module
 */
import { pathToFileURL } from 'node:url';
import type { LspServerConfig } from '../config/schema';

/**
 * `startMs`: how long a server has to answer `initialize` before its start fails. A caller waits
 * for a start no longer than its own wait (lsp.ts); the start goes on meanwhile. `stallMs`: how
 * long a running server has to answer any request (its caller may have stopped waiting) before it
 * counts as hung: it is killed, and started again on the next use (lsp-requests.ts `watch`).
 * Mutable for tests only.
 */
export const LSP_TIMEOUTS = { startMs: 30_000, stallMs: 120_000 };

export function initializeParams(root: string, server: LspServerConfig, sandboxed: boolean) {
  return {
    // Sandboxed, svc's pid is not in the server's pid namespace (a server watching it would stop).
    processId: sandboxed ? null : process.pid,
    rootUri: pathToFileURL(root).href,
    workspaceFolders: [{ uri: pathToFileURL(root).href, name: 'workspace' }],
    capabilities: {
      textDocument: {
        publishDiagnostics: { relatedInformation: false },
        diagnostic: { dynamicRegistration: false },
        synchronization: { didSave: false },
        rename: { prepareSupport: false },
        references: {},
        definition: { linkSupport: false },
      },
      workspace: {
        configuration: true,
        workspaceFolders: true,
        workspaceEdit: { documentChanges: true },
      },
    },
    initializationOptions: server.initialization_options,
  };
}
