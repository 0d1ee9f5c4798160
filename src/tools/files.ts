/**
 * Core file tools (family core-files): `view`, `write`, `multiedit`, `ls`, `glob`, `grep`.
 * Handlers are thin: `app.ws` (src/workspace/) enforces containment, read-before-edit, guards,
 * approval with the diff, history and events.
 * @module
 */
import { z } from 'zod';
import type { EditOutcome, ImageView, TextView } from '../workspace/files';
import type { GrepResult } from '../workspace/search';
import { SEARCH_LIMITS } from '../workspace/search';
import type { MatchKind } from '../workspace/text-replace';
import { defineTool } from './core/define-tool';
import { opContext } from './core/op-context';
import type { ToolAttachment } from './core/tool-output';
import { type AfterEdit, renderAfterEdit, withDiagnostics } from './edit-diagnostics';
import { grepPrompt } from './grep.prompt';
import { viewPrompt } from './view.prompt';

const path = (what: string) => z.string().min(1).describe(`${what}, relative to the workspace root.`);

export const viewInput = () =>
  z.strictObject({
    path: path('File to read'),
    offset: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe(
        'First line to return, 0-based. Omit to start at the top; use next_offset from a truncated answer.',
      ),
    limit: z
      .number()
      .int()
      .min(1)
      .max(2000)
      .default(400)
      .describe('Most lines to return (default 400, at most 2000).'),
  });

export type ViewResult =
  | Omit<TextView, 'kind'>
  | (Omit<ImageView, 'kind' | 'data'> & { attachments: ToolAttachment[] });

export const view = defineTool({
  name: 'view',
  examples: [{ path: 'README.md' }],
  family: 'core-files',
  tag: 'primitive',
  description: viewPrompt,
  input: viewInput,
  mutates: false,
  // Audited (docs/performance-log.md, p-readsmore): reads the file; its read mark waits for `ctx.ahead`.
  readsOnly: true,
  surfaces: { mcp: 'svc_view' },
  async run(ctx, input): Promise<ViewResult> {
    const result = await ctx.app.ws.files.view(input, opContext(ctx, 'view'));
    if (result.kind === 'image') {
      const { kind: _k, data, ...rest } = result;
      return {
        ...rest,
        attachments: [{ type: 'image', media_type: result.media_type, data, path: result.path }],
      };
    }
    const { kind: _k, ...text } = result;
    return text;
  },
  toModelOutput(result) {
    if ('attachments' in result) {
      return `Image ${result.path} (${result.media_type}, ${result.size_bytes} bytes) is attached.`;
    }
    if (result.total_lines === 0) return `${result.path} is empty.`;
    const more = result.truncated
      ? `\n\n(${result.path}: showing lines ${result.start_line}–${result.end_line} of ${result.total_lines}; call view with offset ${result.next_offset} to read on.)`
      : '';
    return `${result.content}${more}`;
  },
});

export const writeInput = () =>
  z.strictObject({
    path: path('File to create or overwrite'),
    content: z.string().describe('The complete new content of the file.'),
  });

export const write = defineTool({
  name: 'write',
  family: 'core-files',
  tag: 'primitive',
  description:
    'Create a file, or replace the whole content of an existing one, in the workspace. Parent directories are created. Overwriting an existing file requires having viewed it in this session (and it must not have changed since). Prefer edit or multiedit to change part of a file. Asks for approval with the diff.',
  input: writeInput,
  mutates: true,
  // Asks itself (precise title, scope, safe hint): the agent loop does not ask again.
  asksPermission: true,
  surfaces: { mcp: 'svc_write' },
  run: async (ctx, input): Promise<EditOutcome & { diagnostics?: AfterEdit }> => {
    const result = await ctx.app.ws.files.write(input, opContext(ctx, 'write'));
    return result.change === 'none' ? result : withDiagnostics(ctx, result, [result.path]);
  },
  toModelOutput: (result) => describeEdit(result, 'Wrote') + renderAfterEdit(result.diagnostics),
});

const editEntry = () =>
  z.strictObject({
    old_string: z
      .string()
      .min(1)
      .describe(
        'Exact text to replace, whitespace included, without view line numbers. Must match once unless replace_all.',
      ),
    new_string: z.string().describe('Replacement text (may be empty to delete old_string).'),
    replace_all: z
      .boolean()
      .default(false)
      .describe('Replace every occurrence instead of exactly one. Default false.'),
  });

export const multieditInput = () =>
  z.strictObject({
    path: path('File to edit'),
    edits: z
      .array(editEntry())
      .min(1)
      .max(100)
      .describe(
        'Edits applied in order, each to the result of the previous one. If any edit fails, none is applied.',
      ),
  });

export const multiedit = defineTool({
  name: 'multiedit',
  family: 'core-files',
  tag: 'primitive',
  description:
    'Make several exact-string replacements in one file atomically: the edits apply in order, each to the result of the one before, and if any fails (old_string missing or ambiguous) the file is left untouched. Same rules as edit: view the file first in this session; old_string must match exactly (whitespace included, no line numbers) and once, unless replace_all; small whitespace slips are tolerated when they leave one place, and the result field matches says how each edit matched. Asks for approval with the combined diff.',
  input: multieditInput,
  mutates: true,
  // Asks itself (precise title, scope, safe hint): the agent loop does not ask again.
  asksPermission: true,
  surfaces: { mcp: 'svc_multiedit' },
  run: async (ctx, input): Promise<EditOutcome & { diagnostics?: AfterEdit }> => {
    const result = await ctx.app.ws.files.multiedit(input, opContext(ctx, 'multiedit'));
    return result.change === 'none' ? result : withDiagnostics(ctx, result, [result.path]);
  },
  toModelOutput: (result) => describeEdit(result, 'Edited') + renderAfterEdit(result.diagnostics),
});

export const lsInput = () =>
  z.strictObject({
    path: z
      .string()
      .min(1)
      .default('.')
      .describe('Directory to list, relative to the workspace root. Default: the root.'),
    depth: z
      .number()
      .int()
      .min(1)
      .max(20)
      .default(3)
      .describe('Directory levels to expand (default 3); deeper directories show their file count.'),
    ignore: z
      .array(z.string().min(1))
      .default([])
      .describe('Extra glob patterns to leave out, e.g. ["*.lock", "dist/**"].'),
    limit: z.number().int().min(1).max(5000).default(1000).describe('Most entries to show (default 1000).'),
  });

export const ls = defineTool({
  name: 'ls',
  family: 'core-files',
  tag: 'primitive',
  description:
    'List a directory of the workspace as an indented tree (directories end with /). Honors .gitignore, shows hidden files, skips .git. Directories without any visible file are not shown. Use glob to find files by name pattern, grep to search contents.',
  input: lsInput,
  mutates: false,
  // Audited (docs/performance-log.md, p-readsmore): ripgrep (read-only, killed on abort), no ask, no event.
  readsOnly: true,
  surfaces: { mcp: 'svc_ls' },
  run: async (ctx, input) => ctx.app.ws.search.ls(input, opContext(ctx, 'ls')),
  toModelOutput: (result) =>
    `${result.tree}${result.truncated ? '\n(listing truncated: give a deeper path, a smaller depth or ignore patterns)' : ''}`,
});

export const globInput = () =>
  z.strictObject({
    pattern: z
      .string()
      .min(1)
      .describe(
        'Glob over paths relative to path: "*.ts" matches at any depth, "src/**/*.test.ts" under src, "*.{js,jsx}" either extension.',
      ),
    path: z
      .string()
      .min(1)
      .default('.')
      .describe('Directory to search in, relative to the workspace root. Default: the root.'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(SEARCH_LIMITS.maxResults)
      .default(SEARCH_LIMITS.globDefault)
      .describe('Most paths to return (default 100).'),
  });

export const glob = defineTool({
  name: 'glob',
  family: 'core-files',
  tag: 'primitive',
  description:
    'Find files by name pattern in the workspace; returns paths (relative to the workspace root), most recently modified first. Honors .gitignore, includes hidden files, skips .git. Use grep to search file contents.',
  input: globInput,
  mutates: false,
  // Audited (docs/performance-log.md, p-readsmore): ripgrep (read-only, killed on abort), no ask, no event.
  readsOnly: true,
  surfaces: { mcp: 'svc_glob' },
  examples: [{ pattern: '*.md' }],
  run: async (ctx, input) => ctx.app.ws.search.glob(input, opContext(ctx, 'glob')),
  toModelOutput: (result) => {
    if (result.files.length === 0) return `No files match ${result.pattern} under ${result.path}.`;
    const more = result.truncated
      ? `\n(${result.count} files match; showing ${result.files.length}. Narrow the pattern or the path.)`
      : '';
    return `${result.files.join('\n')}${more}`;
  },
});

export const grepInput = () =>
  z.strictObject({
    pattern: z
      .string()
      .min(1)
      .describe('Regular expression to search for (Rust regex syntax), or plain text with literal.'),
    path: z
      .string()
      .min(1)
      .default('.')
      .describe('File or directory to search, relative to the workspace root. Default: the root.'),
    glob: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Only search files whose path matches this glob, e.g. "*.ts" or "src/**/*.py". Omit for all files.',
      ),
    literal: z.boolean().default(false).describe('Treat pattern as plain text, not a regex. Default false.'),
    case_insensitive: z.boolean().default(false).describe('Ignore case. Default false.'),
    context: z
      .number()
      .int()
      .min(0)
      .max(10)
      .default(0)
      .describe('Lines of context around each match (content mode).'),
    multiline: z
      .boolean()
      .default(false)
      .describe('Let the pattern span lines (. matches newlines). Default false.'),
    output_mode: z
      .enum(['content', 'files', 'count'])
      .default('content')
      .describe('content: matching lines; files: only paths; count: matches per file. Default content.'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(SEARCH_LIMITS.maxResults)
      .default(SEARCH_LIMITS.grepDefault)
      .describe('Most matches (or files) to return. Default 100.'),
  });

export const grep = defineTool({
  name: 'grep',
  family: 'core-files',
  tag: 'primitive',
  description: grepPrompt,
  input: grepInput,
  mutates: false,
  // Audited (docs/performance-log.md, p-readsmore): ripgrep (read-only, killed on abort), no ask, no event.
  readsOnly: true,
  surfaces: { mcp: 'svc_grep' },
  examples: [{ pattern: 'svc', output_mode: 'files' }],
  run: async (ctx, input) => ctx.app.ws.search.grep(input, opContext(ctx, 'grep')),
  toModelOutput: renderGrep,
});

export function renderGrep(result: GrepResult): string {
  // A search stopped by its time limit says so, whatever it found: no match may not mean none.
  const note = result.note ? `\n(${result.note})` : '';
  const more = result.note
    ? note
    : result.truncated
      ? `\n(results truncated at the limit; narrow path, glob or pattern)`
      : '';
  if (result.total === 0) return `No matches for ${result.pattern} under ${result.path}.${note}`;
  if (result.output_mode === 'files') return `${result.files?.join('\n')}${more}`;
  if (result.output_mode === 'count') {
    return `${result.counts?.map((c) => `${c.path}: ${c.count}`).join('\n')}\n(${result.total} matches)${more}`;
  }
  const out: string[] = [];
  let current = '';
  for (const m of result.matches ?? []) {
    if (m.path !== current) {
      if (current) out.push('');
      out.push(`${m.path}:`);
      current = m.path;
    }
    out.push(`  ${m.line}${m.context ? '-' : ':'} ${m.text}`);
  }
  return `${out.join('\n')}\n(${result.total} match${result.total === 1 ? '' : 'es'})${more}`;
}

const MAX_DIFF_FOR_MODEL = 4000;

export function describeEdit(result: EditOutcome, verb: string): string {
  if (result.change === 'none') return `${result.path} already has that content; nothing changed.`;
  const what =
    result.change === 'create'
      ? `Created ${result.path}`
      : `${verb} ${result.path}${result.replacements ? ` (${result.replacements} replacement${result.replacements === 1 ? '' : 's'})` : ''}`;
  const diff =
    result.diff.length > MAX_DIFF_FOR_MODEL
      ? `${result.diff.slice(0, MAX_DIFF_FOR_MODEL)}\n… (diff cut)`
      : result.diff;
  return `${what}: +${result.additions} −${result.deletions} lines.${looseNote(result)}\n${diff}`;
}

const LOOSE_NOTE: Partial<Record<MatchKind, string>> = {
  line_endings: 'with its line endings converted to the file’s',
  trailing_whitespace: 'with trailing whitespace ignored',
  indentation: 'with indentation ignored; the new lines were re-indented to the file’s indentation',
  whitespace: 'with spacing ignored; the new lines were re-indented to the file’s indentation',
  block_anchor:
    'as a block whose first and last lines matched and whose other lines nearly did; the lines kept from old_string keep the file’s text',
  line_numbers: 'after taking off the line numbers view prints',
};

/** " old_string matched at line 12 with indentation ignored; …" when an edit did not match exactly. */
function looseNote(result: EditOutcome): string {
  const loose = (result.matches ?? (result.match ? [result.match] : []))
    .map((m, i) => ({ m, i }))
    .filter(({ m }) => m !== 'exact');
  if (loose.length === 0) return '';
  if (result.match) {
    const where = result.line ? ` at line ${result.line}` : '';
    return ` old_string matched${where} ${LOOSE_NOTE[result.match]}; check the diff, and copy text exactly next time.`;
  }
  const which = loose.map(({ m, i }) => `edits[${i}] ${LOOSE_NOTE[m]}`).join('; ');
  return ` Matched loosely: ${which}; check the diff.`;
}
