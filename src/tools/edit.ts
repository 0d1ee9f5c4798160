/**
 * `edit` (family semantic): exact string replacement by default.
 * @module
 */
import { z } from 'zod';
import { defineTool } from './define-tool';
import { editPrompt } from './edit.prompt';
import { describeEdit } from './files';
import { opContext } from './op-context';

export const editInput = z.strictObject({
  path: z.string().min(1).describe('File to edit, relative to the workspace root.'),
  old_string: z
    .string()
    .describe(
      'Exact text to replace, whitespace included, without view line numbers. Empty creates a new file.',
    ),
  new_string: z.string().describe('Replacement text (empty deletes old_string).'),
  replace_all: z
    .boolean()
    .default(false)
    .describe('Replace every occurrence instead of exactly one. Default false.'),
});

export const edit = defineTool({
  name: 'edit',
  family: 'semantic',
  tag: 'primitive',
  description: editPrompt,
  input: editInput,
  mutates: true,
  surfaces: { mcp: 'svc_edit' },
  run: (ctx, input) => ctx.app.ws.files.edit(input, opContext(ctx, 'edit')),
  toModelOutput: (result) => describeEdit(result, 'Edited'),
});
