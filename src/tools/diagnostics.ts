/**
 * `diagnostics` (family core-code): errors and warnings for a file from its language server
 * (configured under `[lsp.<id>]` or built-in and found). Registered only when some server is
 * available. `lsp_status` (`svc config show-lsp`): which servers were found, which are missing
 * and how to install them, which run.
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import { notFound, readTarget, statOrUndefined } from '../workspace/file-load';
import type { LspRuntimeStatus } from '../workspace/lsp';
import { defineTool } from './core/define-tool';

/** Errors carried by the `diagnostics.reported` ledger event. */
const MAX_REPORTED_ERRORS = 100;

export const diagnosticsInput = () =>
  z.strictObject({
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
    "Get a file's errors and warnings from its language server (type errors, unresolved imports, lint rules the server reports): line, column, severity, message. Use it after editing to check the change compiles. Uses the language server of the file's language: a built-in one (typescript, python, go, rust) when the workspace uses that language and it is installed, or one configured under [lsp.<id>].",
  input: diagnosticsInput,
  mutates: false,
  gate: ({ app }) =>
    app.ws.lsp.available()
      ? true
      : "no language server configured under [lsp.<id>] or found for the workspace's languages (svc config show-lsp)",
  surfaces: { mcp: 'svc_diagnostics' },
  // Answers come from a language server (an external process): nothing for the parity walker.
  parity: false,
  async run(ctx, input) {
    const target = ctx.app.ws.paths.resolve(input.path);
    const stat = statOrUndefined(target.abs);
    if (!stat) throw notFound(target, 'path');
    if (stat.isDirectory())
      throw new SvcError(
        'invalid_input',
        `path: ${target.rel} is a directory; diagnostics checks one file (ls lists the directory)`,
      );
    const text = readTarget(target, 'path').toString('utf8');
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
    const dropped = result.dropped ? `; ${result.dropped} more not kept (the most per file)` : '';
    return `${head}${lines.join('\n')}\n(${result.counts.error} errors, ${result.counts.warning} warnings${dropped})`;
  },
});

export const lspStatus = defineTool({
  name: 'lsp_status',
  family: 'core-code',
  tag: 'primitive',
  description:
    "The language servers of this workspace: configured ones ([lsp.<id>]), built-ins found for the languages it uses (whose program runs: svc's own, the workspace's when it is trusted, or one on PATH, and why), missing ones with the install command, and which are running (they start on first use and stop when idle).",
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: {
    mcp: 'svc_lsp_status',
    http: { method: 'GET', path: '/v1/lsp' },
    cli: {
      command: 'config show-lsp',
      description: 'language servers: found, missing (with the install command), running',
      text: (r: LspStatusResult) => renderLspStatus(r),
    },
  },
  // Running state depends on what this process started: nothing for the parity walker.
  parity: false,
  run: async (ctx): Promise<LspStatusResult> => {
    const { options } = ctx.app.config;
    return {
      auto: options.lsp.auto,
      diagnostics_after_edit: options.lsp.diagnostics_after_edit,
      servers: ctx.app.ws.lsp.status(),
    };
  },
});

interface LspStatusResult {
  auto: boolean;
  diagnostics_after_edit: boolean;
  servers: LspRuntimeStatus[];
}

function renderLspStatus(r: LspStatusResult): string {
  const relevant = r.servers.filter((s) => s.state !== 'not_needed');
  const lines = relevant.map((s) => {
    const what =
      s.state === 'missing'
        ? `missing (${s.note}); install: ${s.install}`
        : s.state === 'disabled'
          ? `disabled (${s.note})`
          : `${s.state}: ${[s.command, ...(s.args ?? [])].join(' ')}${s.running ? ' (running)' : ''}${
              s.broken
                ? ` (broken, not started again before ${s.retry_at}: ${s.broken})`
                : s.last_error
                  ? ` (last failure: ${s.last_error})`
                  : ''
            }${s.origin ? ` — ${s.note}` : ''}`;
    return `${s.id.padEnd(12)} ${s.source.padEnd(8)} .${s.extensions.join(' .')}  ${what}`;
  });
  if (lines.length === 0)
    lines.push(
      'No language server: the workspace uses none of typescript, python, go, rust, and [lsp] is empty.',
    );
  lines.push(
    `automatic start ${r.auto ? 'on' : 'off'} (options.lsp.auto); diagnostics after edits ${r.diagnostics_after_edit ? 'on' : 'off'} (options.lsp.diagnostics_after_edit)`,
  );
  return lines.join('\n');
}
