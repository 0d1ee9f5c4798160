/**
 * Diagnostics after an edit: once edit, write or multiedit has changed files, the language server
 * of each touched file (configured or built-in) is asked for that file's diagnostics, and the
 * result carries them (errors first, capped at options.lsp.max_diagnostics) so the model sees the
 * type error it just caused, as opencode does. Off with options.lsp.diagnostics_after_edit =
 * false. A server that is missing, slow or crashing never fails the edit: the note says so.
 * @module
 */

import { readTarget } from '../workspace/file-load';
import type { Diagnostic } from '../workspace/lsp';
import type { ToolContext } from './core/types';

export interface FileDiagnostics {
  path: string;
  server: string;
  /** Errors first, then warnings; at most options.lsp.max_diagnostics over all files. */
  diagnostics: Diagnostic[];
  counts: Record<Diagnostic['severity'], number>;
  complete: boolean;
}

export interface AfterEdit {
  files: FileDiagnostics[];
  /** Why some file has no diagnostics (server missing, did not answer). */
  notes: string[];
  /** Diagnostics left out by the cap. */
  omitted: number;
}

const RANK: Record<Diagnostic['severity'], number> = { error: 0, warning: 1, information: 2, hint: 3 };
/** Information and hints are noise after an edit: only errors and warnings are reported. */
const REPORTED = new Set<Diagnostic['severity']>(['error', 'warning']);

/** The diagnostics of the touched files, or undefined when turned off or no server handles them. */
export async function diagnosticsAfterEdit(
  ctx: ToolContext,
  paths: string[],
): Promise<AfterEdit | undefined> {
  const { app } = ctx;
  const options = app.config.options.lsp;
  if (!options.diagnostics_after_edit) return undefined;
  const targets = [...new Set(paths)]
    .map((p) => app.ws.paths.resolve(p))
    .filter((t) => app.ws.lsp.serverFor(t.abs) !== undefined);
  if (targets.length === 0) return undefined;
  const out: AfterEdit = { files: [], notes: [], omitted: 0 };
  let budget = options.max_diagnostics;
  // One wait for the whole edit, however many files it touched.
  const deadline = Date.now() + options.diagnostics_wait_seconds * 1000;
  for (const target of targets) {
    const waitMs = deadline - Date.now();
    if (waitMs <= 0) {
      out.notes.push(
        `${target.rel}: not checked (the ${options.diagnostics_wait_seconds} s wait, options.lsp.diagnostics_wait_seconds, ran out; run diagnostics on it)`,
      );
      continue;
    }
    let text: string;
    try {
      text = readTarget(target, 'path').toString('utf8');
    } catch {
      continue; // deleted by the edit, or no regular file now
    }
    try {
      const result = await app.ws.lsp.diagnostics(target, text, {
        waitMs,
        signal: ctx.signal,
      });
      const sorted = result.diagnostics
        .filter((d) => REPORTED.has(d.severity))
        .sort((a, b) => RANK[a.severity] - RANK[b.severity] || a.line - b.line);
      const kept = sorted.slice(0, Math.max(0, budget));
      budget -= kept.length;
      out.omitted += sorted.length - kept.length;
      out.files.push({ ...result, diagnostics: kept });
      if (!result.complete)
        out.notes.push(`${result.path}: ${result.server} did not finish in time; the list may be partial`);
    } catch (error) {
      out.notes.push(
        `${target.rel}: no diagnostics (${error instanceof Error ? error.message : String(error)})`,
      );
    }
  }
  return out;
}

/** The text appended to an edit's model output. */
export function renderAfterEdit(after: AfterEdit | undefined): string {
  if (!after) return '';
  const lines: string[] = [];
  for (const file of after.files) {
    if (file.diagnostics.length === 0 && file.complete) continue;
    for (const d of file.diagnostics) {
      lines.push(
        `${file.path}:${d.line}:${d.column} ${d.severity}: ${d.message}${d.source ? ` [${d.source}${d.code !== undefined ? ` ${d.code}` : ''}]` : ''}`,
      );
    }
  }
  if (after.omitted > 0) lines.push(`… ${after.omitted} more (run diagnostics on the file for all of them)`);
  lines.push(...after.notes);
  const errors = after.files.reduce((n, f) => n + f.counts.error, 0);
  if (lines.length === 0)
    return `\n\nDiagnostics: no errors in ${after.files.map((f) => f.path).join(', ')}.`;
  return `\n\nDiagnostics after this change (${errors} error${errors === 1 ? '' : 's'}):\n${lines.join('\n')}`;
}

/** The result with `diagnostics` added when there are any to add. */
export async function withDiagnostics<T extends object>(
  ctx: ToolContext,
  result: T,
  paths: string[],
): Promise<T & { diagnostics?: AfterEdit }> {
  const after = await diagnosticsAfterEdit(ctx, paths);
  return after ? { ...result, diagnostics: after } : result;
}
