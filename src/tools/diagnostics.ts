/**
 * `diagnostics` (family core-code): errors and warnings for a file from the language server
 * configured for it under `[lsp.<id>]`. Registered only when at least one server is configured.
 * @module
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { SvcError } from '../errors';
import { defineTool } from './core/define-tool';

/** Errors carried by the `diagnostics.reported` ledger event. */
const MAX_REPORTED_ERRORS = 100;

export const diagnosticsInput = z.strictObject({
  path: z
    .string()
    .min(1)
    .describe('File to check, relative to the workspace root. Its current content on disk is sent.'),
  wait_seconds: z
    .number()
    .min(1)
    .max(60)
    .default(10)
    .describe(
      'How long to wait for the language server (default 10; the first call also starts the server).',
    ),
});

export const diagnostics = defineTool({
  name: 'diagnostics',
  family: 'core-code',
  tag: 'primitive',
  description:
    "Get a file's errors and warnings from its language server (type errors, unresolved imports, lint rules the server reports): line, column, severity, message. Use it after editing to check the change compiles. Needs a language server configured for the file type under [lsp.<id>].",
  input: diagnosticsInput,
  mutates: false,
  gate: ({ app }) =>
    Object.values(app.config.lsp).some((s) => !s.disabled)
      ? true
      : 'no language server configured under [lsp.<id>]',
  surfaces: { mcp: 'svc_diagnostics' },
  // Answers come from a language server (an external process): nothing for the parity walker.
  parity: false,
  async run(ctx, input) {
    const target = ctx.app.ws.paths.resolve(input.path);
    let text: string;
    try {
      text = readFileSync(target.abs, 'utf8');
    } catch {
      throw new SvcError('not_found', `path: ${target.rel} does not exist`);
    }
    const result = await ctx.app.ws.lsp.diagnostics(target, text, {
      waitMs: input.wait_seconds * 1000,
      signal: ctx.signal,
    });
    // The finding lifecycle opens a finding per error and fixes those a later check no longer reports.
    ctx.event?.('diagnostics.reported', {
      path: result.path,
      server: result.server,
      complete: result.complete,
      counts: result.counts,
      truncated: result.counts.error > MAX_REPORTED_ERRORS,
      errors: result.diagnostics
        .filter((d) => d.severity === 'error')
        .slice(0, MAX_REPORTED_ERRORS)
        .map((d) => ({
          line: d.line,
          column: d.column,
          message: d.message,
          ...(d.source ? { source: d.source } : {}),
          ...(d.code !== undefined ? { code: String(d.code) } : {}),
        })),
    });
    return result;
  },
  toModelOutput(result) {
    const head = result.complete
      ? ''
      : '(the language server did not finish in time; the list may be incomplete)\n';
    if (result.diagnostics.length === 0)
      return `${head}No problems reported for ${result.path} by ${result.server}.`;
    const lines = result.diagnostics.map(
      (d) =>
        `${result.path}:${d.line}:${d.column} ${d.severity}: ${d.message}${d.source ? ` [${d.source}${d.code !== undefined ? ` ${d.code}` : ''}]` : ''}`,
    );
    return `${head}${lines.join('\n')}\n(${result.counts.error} errors, ${result.counts.warning} warnings)`;
  },
});
