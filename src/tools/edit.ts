/**
 * `edit` (family semantic): string replacement (the default mode; src/workspace/text-replace.ts), the structural
 * modes rename_symbol, replace_symbol_body, insert_before_symbol, insert_after_symbol over
 * tree-sitter symbols selected by name_path or symbol_key, and apply_patch (a multi-file Codex
 * patch or unified diff, src/quality/apply-patch.ts). Every mode asks with the diff and records
 * file history.
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import type { PatchResult } from '../quality/apply-patch';
import type { EditOutcome } from '../workspace/files';
import type { StructuralEditResult } from '../workspace/semantic';
import { defineTool } from './core/define-tool';
import { opContext } from './core/op-context';
import type { ToolContext } from './core/types';
import { editPrompt } from './edit.prompt';
import { type AfterEdit, renderAfterEdit, withDiagnostics } from './edit-diagnostics';
import { describeEdit } from './files';

export const editInput = () =>
  z.strictObject({
    path: z
      .string()
      .min(1)
      .optional()
      .describe(
        'File to edit, relative to the workspace root. Structural modes: the file (or directory) holding the symbol; optional with symbol_key. apply_patch: omit it (the patch names its files), except for a bare unified diff of only @@ hunks.',
      ),
    mode: z
      .enum([
        'replace',
        'rename_symbol',
        'replace_symbol_body',
        'insert_before_symbol',
        'insert_after_symbol',
        'apply_patch',
      ])
      .default('replace')
      .describe(
        'replace (default): string replacement (exact, small whitespace slips tolerated). apply_patch: apply patch to one or more files. The other modes act on a symbol chosen by name_path or symbol_key.',
      ),
    patch: z
      .string()
      .min(1)
      .optional()
      .describe(
        'apply_patch mode: the patch, either a Codex patch (*** Begin Patch, *** Add File / *** Update File / *** Delete File sections, *** End Patch) or a unified diff (--- a/path, +++ b/path, @@ hunks). Every file applies or none does. Giving patch alone selects apply_patch mode.',
      ),
    old_string: z
      .string()
      .optional()
      .describe(
        'replace mode: exact text to replace, whitespace included, without view line numbers. Empty creates a new file.',
      ),
    new_string: z
      .string()
      .optional()
      .describe(
        'replace mode: the replacement text. replace_symbol_body: the whole new definition. insert modes: the code to insert.',
      ),
    replace_all: z
      .boolean()
      .default(false)
      .describe('replace mode: change every occurrence instead of exactly one. Default false.'),
    name_path: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Structural modes: the symbol, as a name or dotted path ("UserService.save") from search symbol-overview.',
      ),
    symbol_key: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Structural modes: the exact symbol_key search returned; use it when name_path matches several symbols.',
      ),
    new_name: z.string().min(1).optional().describe('rename_symbol: the new identifier.'),
    scope: z
      .string()
      .min(1)
      .optional()
      .describe(
        'rename_symbol: directory or file whose references are renamed. Default: the whole workspace.',
      ),
  });

type EditResult = (EditOutcome | StructuralEditResult | PatchResult) & { diagnostics?: AfterEdit };

const NOT_FOR_PATCH = ['old_string', 'new_string', 'name_path', 'symbol_key', 'new_name', 'scope'] as const;

export const edit = defineTool({
  name: 'edit',
  family: 'semantic',
  tag: 'primitive',
  description: editPrompt,
  input: editInput,
  mutates: true,
  // Asks itself (precise title, scope, safe hint): the agent loop does not ask again.
  asksPermission: true,
  surfaces: { mcp: 'svc_edit' },
  async run(ctx, input): Promise<EditResult> {
    const result = await runEdit(ctx, input);
    return withDiagnostics(ctx, result, touchedFiles(result));
  },
  toModelOutput: (result) => describeResult(result) + renderAfterEdit(result.diagnostics),
});

/** The files an edit changed (not the deleted ones, not an edit that changed nothing). */
function touchedFiles(result: EditResult): string[] {
  if ('change' in result) return result.change === 'none' || result.change === 'delete' ? [] : [result.path];
  if (result.mode === 'apply_patch')
    return result.files.filter((f) => f.change !== 'delete' && !f.moved_to).map((f) => f.path);
  return result.files.map((f) => f.path);
}

async function runEdit(ctx: ToolContext, input: z.output<ReturnType<typeof editInput>>): Promise<EditResult> {
  const op = opContext(ctx, 'edit');
  const inferred = input.mode === 'replace' && input.patch !== undefined && input.old_string === undefined;
  if (input.mode === 'apply_patch' || inferred) {
    if (input.patch === undefined) {
      throw new SvcError('invalid_input', 'patch: apply_patch mode needs the patch text');
    }
    const stray = NOT_FOR_PATCH.find((field) => input[field] !== undefined);
    if (stray) {
      throw new SvcError(
        'invalid_input',
        `${stray}: not used by apply_patch mode; put every change in patch and leave ${stray} out`,
      );
    }
    return ctx.app.quality.patches.apply({ patch: input.patch, path: input.path }, op);
  }
  if (input.patch !== undefined) {
    throw new SvcError(
      'invalid_input',
      `patch: only apply_patch mode takes a patch; set mode to apply_patch (and leave ${input.mode === 'replace' ? 'old_string and new_string' : 'the symbol fields'} out)`,
    );
  }
  if (input.mode === 'replace') {
    if (!input.path) throw new SvcError('invalid_input', 'path: replace mode needs the file to edit');
    if (input.old_string === undefined)
      throw new SvcError('invalid_input', 'old_string: replace mode needs the text to replace');
    if (input.new_string === undefined)
      throw new SvcError('invalid_input', 'new_string: replace mode needs the replacement text');
    return ctx.app.ws.files.edit(
      {
        path: input.path,
        old_string: input.old_string,
        new_string: input.new_string,
        replace_all: input.replace_all,
      },
      op,
    );
  }
  if (!input.name_path && !input.symbol_key) {
    throw new SvcError(
      'invalid_input',
      `name_path: ${input.mode} needs name_path or symbol_key to choose the symbol`,
    );
  }
  return ctx.app.ws.semantic.structuralEdit(
    {
      mode: input.mode,
      path: input.symbol_key ? undefined : input.path,
      name_path: input.name_path,
      symbol_key: input.symbol_key,
      new_string: input.new_string,
      new_name: input.new_name,
      scope: input.scope,
    },
    op,
  );
}

function describeResult(result: EditResult): string {
  if ('change' in result) return describeEdit(result, 'Edited');
  if (result.mode === 'apply_patch') return describePatch(result);
  const files = result.files.map((f) => `${f.path} (+${f.additions} −${f.deletions})`).join(', ');
  const what =
    result.mode === 'rename_symbol'
      ? `Renamed ${result.symbol.name_path}: ${result.replacements} occurrence(s) in ${files}${result.engine ? ` (${result.engine === 'lsp' ? `language server ${result.server}` : 'tree-sitter, by name'})` : ''}${result.note ? `\nNote: ${result.note}` : ''}`
      : `${result.mode.replace(/_/g, ' ')} ${result.symbol.name_path}: ${files}`;
  const diff = result.diff.length > 4000 ? `${result.diff.slice(0, 4000)}\n… (diff cut)` : result.diff;
  return `${what}.\n${diff}`;
}

function describePatch(result: PatchResult): string {
  if (result.files.length === 0)
    return 'The patch applied but changed nothing (the files already had that content).';
  const files = result.files
    .map((f) => {
      if (f.moved_from) return `${f.path} (moved from ${f.moved_from}, +${f.additions} −${f.deletions})`;
      if (f.moved_to) return `${f.path} (moved to ${f.moved_to})`;
      if (f.change === 'create') return `${f.path} (created, +${f.additions})`;
      if (f.change === 'delete') return `${f.path} (deleted)`;
      return `${f.path} (+${f.additions} −${f.deletions})`;
    })
    .join(', ');
  const fuzzy = result.files.flatMap((f) =>
    (f.hunks ?? [])
      .filter((h) => h.fuzz !== 'exact')
      .map((h) => `${f.path} hunk ${h.index} at line ${h.line} (${h.fuzz.replace('_', ' ')})`),
  );
  const note = fuzzy.length
    ? `\nMatched loosely: ${fuzzy.join('; ')}. Context lines kept the file's own text; view the result if the hunks were meant elsewhere.`
    : '';
  const diff = result.diff.length > 4000 ? `${result.diff.slice(0, 4000)}\n… (diff cut)` : result.diff;
  return `Applied ${result.format} patch to ${result.files.length} file${result.files.length === 1 ? '' : 's'}: ${files}.${note}\n${diff}`;
}
