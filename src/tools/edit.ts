/**
 * `edit` (family semantic): exact string replacement (the default mode), and the structural
 * modes rename_symbol, replace_symbol_body, insert_before_symbol, insert_after_symbol over
 * tree-sitter symbols selected by name_path or symbol_key. Every mode asks with the diff and
 * records file history.
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import type { EditOutcome } from '../workspace/files';
import type { StructuralEditResult } from '../workspace/semantic';
import { defineTool } from './define-tool';
import { editPrompt } from './edit.prompt';
import { describeEdit } from './files';
import { opContext } from './op-context';

export const editInput = z.strictObject({
  path: z
    .string()
    .min(1)
    .optional()
    .describe(
      'File to edit, relative to the workspace root. Structural modes: the file (or directory) holding the symbol; optional with symbol_key.',
    ),
  mode: z
    .enum(['replace', 'rename_symbol', 'replace_symbol_body', 'insert_before_symbol', 'insert_after_symbol'])
    .default('replace')
    .describe(
      'replace (default): exact string replacement. The other modes act on a symbol chosen by name_path or symbol_key.',
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
    .describe('rename_symbol: directory or file whose references are renamed. Default: the whole workspace.'),
});

type EditResult = EditOutcome | StructuralEditResult;

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
    const op = opContext(ctx, 'edit');
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
  },
  toModelOutput(result) {
    if ('change' in result) return describeEdit(result, 'Edited');
    const files = result.files.map((f) => `${f.path} (+${f.additions} −${f.deletions})`).join(', ');
    const what =
      result.mode === 'rename_symbol'
        ? `Renamed ${result.symbol.name_path}: ${result.replacements} occurrence(s) in ${files}`
        : `${result.mode.replace(/_/g, ' ')} ${result.symbol.name_path}: ${files}`;
    const diff = result.diff.length > 4000 ? `${result.diff.slice(0, 4000)}\n… (diff cut)` : result.diff;
    return `${what}.\n${diff}`;
  },
});
