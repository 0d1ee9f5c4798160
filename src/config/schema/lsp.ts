/**
 * `[lsp.<id>]`: a language server for the diagnostics tool.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';

export const lspServerSchema = lazy(() =>
  z.strictObject({
    command: z.string().min(1).describe('Language server executable, e.g. typescript-language-server.'),
    args: z
      .array(z.string())
      .default([])
      .describe('Arguments, e.g. ["--stdio"]. The server speaks LSP over stdio.'),
    extensions: z
      .array(z.string().min(1))
      .min(1)
      .describe('File extensions it handles, without the dot: ["ts", "tsx"].'),
    language_id: z
      .string()
      .optional()
      .describe('LSP languageId sent for opened files; default derived from the extension.'),
    env: z.record(z.string(), z.string()).optional().describe('Extra environment variables for the server.'),
    initialization_options: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('Sent as initializationOptions.'),
    disabled: z.boolean().default(false),
  }),
);
