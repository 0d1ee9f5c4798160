/**
 * Checkpoint tools (family checkpoints): git-backed snapshots of the working tree under private
 * refs (`refs/svc/checkpoints/<id>`), never touching the user's index, HEAD or branch; and
 * `checkpoint_undo`, a hard reset of HEAD by N commits (N default 1, `confirm: true` required).
 * Logic in src/workspace/checkpoints.ts.
 * @module
 */
import { z } from 'zod';
import { defineTool } from './core/define-tool';
import { opContext } from './core/op-context';

const id = () =>
  z.string().min(1).describe('Checkpoint id, as checkpoint_create or checkpoint_list return it (ckpt_…).');

export const checkpointCreateInput = () =>
  z.strictObject({
    name: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('A short name ("before refactoring auth"). Omit for a timestamp.'),
    description: z
      .string()
      .max(2000)
      .optional()
      .describe('Longer note on what the snapshot holds. Optional.'),
  });

export const checkpointCreate = defineTool({
  name: 'checkpoint_create',
  // Each call creates a new checkpoint.
  parity: false,
  family: 'checkpoints',
  tag: 'primitive',
  description:
    "Snapshot the workspace's working tree (tracked and untracked files; .gitignored files excluded) as a checkpoint you can restore later. Needs a git repository. Does not touch the git index, HEAD, the branch or any file: the snapshot is stored under a private ref. Take one before risky or wide changes.",
  input: checkpointCreateInput,
  mutates: false,
  surfaces: { http: { method: 'POST', path: '/v1/checkpoints' }, mcp: 'svc_checkpoint_create' },
  run: async (ctx, input) => ctx.app.ws.checkpoints.create(input, opContext(ctx, 'checkpoint_create')),
  toModelOutput: (c) => `Checkpoint ${c.id} "${c.name}" created (commit ${c.commit.slice(0, 12)}).`,
});

export const checkpointList = defineTool({
  name: 'checkpoint_list',
  family: 'checkpoints',
  tag: 'primitive',
  description:
    'List the checkpoints of this repository, newest first, with id, name, when and from which HEAD they were taken. Automatic ones (taken before a restore or an undo) are marked automatic.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: { http: { method: 'GET', path: '/v1/checkpoints' }, mcp: 'svc_checkpoint_list' },
  run: async (ctx) => ({ checkpoints: await ctx.app.ws.checkpoints.list() }),
});

export const checkpointGet = defineTool({
  name: 'checkpoint_get',
  // Needs a checkpoint id, which differs per workspace; covered by the checkpoint tests.
  parity: false,
  family: 'checkpoints',
  tag: 'primitive',
  description:
    'Show one checkpoint and how the workspace differs from it now (changed_since: the files a restore would create, modify or delete).',
  input: () => z.strictObject({ id: id() }),
  mutates: false,
  surfaces: { mcp: 'svc_checkpoint_get' },
  run: async (ctx, input) => ctx.app.ws.checkpoints.get(input.id),
});

export const checkpointUpdate = defineTool({
  name: 'checkpoint_update',
  // Each call renames.
  parity: false,
  family: 'checkpoints',
  tag: 'primitive',
  description:
    'Rename a checkpoint (and optionally change its description). The snapshot itself does not change.',
  input: () =>
    z.strictObject({
      id: id(),
      name: z.string().min(1).max(200).optional().describe('The new name.'),
      description: z.string().max(2000).optional().describe('The new description. Omit to keep it.'),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_checkpoint_update' },
  run: async (ctx, input) =>
    ctx.app.ws.checkpoints.update(input.id, { name: input.name, description: input.description }),
});

export const checkpointRestore = defineTool({
  name: 'checkpoint_restore',
  family: 'checkpoints',
  tag: 'primitive',
  description:
    'Restore the working tree to a checkpoint: files changed or deleted since are written back, files created since are removed (.gitignored files are left alone). The git index, HEAD and branch do not move. A safety checkpoint of the current state is taken first (its id is returned), so the restore can be undone. Asks for approval.',
  input: () => z.strictObject({ id: id() }),
  mutates: true,
  // Asks itself (precise title, scope, safe hint): the agent loop does not ask again.
  asksPermission: true,
  surfaces: {
    http: { method: 'POST', path: '/v1/checkpoints/:id/restore', params: { id: 'id' } },
    mcp: 'svc_checkpoint_restore',
  },
  run: async (ctx, input) => ctx.app.ws.checkpoints.restore(input.id, opContext(ctx, 'checkpoint_restore')),
  toModelOutput: (r) =>
    r.safety_checkpoint === null
      ? `The workspace already matches checkpoint ${r.checkpoint.id}; nothing changed.`
      : `Restored checkpoint ${r.checkpoint.id} "${r.checkpoint.name}": ${r.restored.length} file(s) written back, ${r.deleted.length} removed.${skippedNote(r.skipped)} The previous state is checkpoint ${r.safety_checkpoint}.`,
});

export const checkpointDelete = defineTool({
  name: 'checkpoint_delete',
  family: 'checkpoints',
  tag: 'primitive',
  description:
    'Delete a checkpoint (its private ref). Files in the workspace are not touched. Asks for approval.',
  input: () => z.strictObject({ id: id() }),
  mutates: true,
  // Asks itself (precise title, scope, safe hint): the agent loop does not ask again.
  asksPermission: true,
  surfaces: { mcp: 'svc_checkpoint_delete' },
  run: async (ctx, input) => ctx.app.ws.checkpoints.delete(input.id, opContext(ctx, 'checkpoint_delete')),
});

export const checkpointUndoInput = () =>
  z.strictObject({
    n: z.number().int().min(1).max(100).default(1).describe('How many commits to rewind HEAD by. Default 1.'),
    confirm: z
      .boolean()
      .default(false)
      .describe(
        'Must be true: this is git reset --hard HEAD~n, which moves the branch and discards uncommitted changes.',
      ),
  });

export const checkpointUndo = defineTool({
  name: 'checkpoint_undo',
  family: 'checkpoints',
  tag: 'primitive',
  description:
    'Destructive: rewind git commits with a hard reset of HEAD by n (default 1): the branch moves back and the working tree and index are reset, discarding uncommitted changes to tracked files. Refused unless confirm is true. A safety checkpoint (which keeps the undone commits and the uncommitted work reachable) is taken first. Asks for approval.',
  input: checkpointUndoInput,
  mutates: true,
  // Asks itself (precise title, scope, safe hint): the agent loop does not ask again.
  asksPermission: true,
  surfaces: { mcp: 'svc_checkpoint_undo' },
  run: async (ctx, input) => ctx.app.ws.checkpoints.undo(input, opContext(ctx, 'checkpoint_undo')),
  toModelOutput: (r) =>
    `HEAD moved from ${r.head_before.slice(0, 12)} to ${r.head_after.slice(0, 12)}, undoing ${r.undone.length} commit(s): ${r.undone.map((c) => c.subject).join('; ')}. Safety checkpoint: ${r.safety_checkpoint}.`,
});

/** The files a restore left alone, for the model: each with why (never followed through a symlink). */
function skippedNote(skipped: readonly { path: string; reason: string }[]): string {
  if (skipped.length === 0) return '';
  const listed = skipped.slice(0, 10).map((s) => `${s.path} (${s.reason})`);
  const more = skipped.length > 10 ? ` and ${skipped.length - 10} more` : '';
  return ` ${skipped.length} file(s) to remove were left alone: ${listed.join(', ')}${more}.`;
}
