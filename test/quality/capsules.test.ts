/**
 * Edit capsules over real agent runs (the loop driven by the fake provider). Pins:
 * - options.edit_capsules toggles get_edit_capsules_status.enabled (CFG-28);
 * - with the option on, a run's edits (edit, apply_patch across files) become one capsule at run
 *   end: files with net line stats, the run, and a checkpoint taken before the first change that
 *   holds the workspace as it was;
 * - revert_edit_capsule writes every file back through the mutation path (one approval, history,
 *   file.changed), and is refused with nothing written when a file changed after the run;
 * - with the option off there is no capsule and no checkpoint; without git the capsule has no
 *   checkpoint but still reverts from file history.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { SvcError } from '../../src/errors';
import { invokeTool } from '../../src/tools/core/call-tool';
import type { PermissionRequest } from '../../src/tools/core/define-tool';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';

const FILES = {
  'src/a.ts': 'export const a = 1;\nexport const b = 2;\n',
  'docs/old.md': '# old\n',
};

const PATCH = [
  '*** Begin Patch',
  '*** Add File: src/new.ts',
  "+export const made = 'by the run';",
  '*** Delete File: docs/old.md',
  '*** End Patch',
].join('\n');

const editScript = () => [
  reply().toolCall('view', { path: 'src/a.ts' }),
  reply().toolCall('edit', { path: 'src/a.ts', old_string: 'b = 2', new_string: 'b = 3' }),
  reply().toolCall('edit', { patch: PATCH }),
  reply().text('edited'),
];

const read = (app: App, path: string) => readFileSync(join(app.workspace, path), 'utf8');

async function status(app: App) {
  return (await invokeTool(app, 'get_edit_capsules_status', {}, { surface: 'agent' })) as any;
}

describe('edit capsules', () => {
  it('CFG-28: toggling options.edit_capsules changes get_edit_capsules_status', async () => {
    const app = await makeTestApp();
    expect((await status(app)).enabled).toBe(false);
    await invokeTool(
      app,
      'config',
      { action: 'set', key: 'options.edit_capsules', value: true },
      { surface: 'cli' },
    );
    expect(await status(app)).toMatchObject({ enabled: true, option: 'options.edit_capsules' });
    await invokeTool(app, 'config', { action: 'unset', key: 'options.edit_capsules' }, { surface: 'cli' });
    expect((await status(app)).enabled).toBe(false);
  });

  it("groups a real run's edits into a capsule with a checkpoint, and reverts it through the mutation path", async () => {
    const { app, events } = await agentApp(editScript(), {
      git: true,
      files: FILES,
      extraConfig: { options: { edit_capsules: true } },
    });
    const run = await app.agent.run({ prompt: 'change things', yolo: true });
    expect(run.status).toBe('completed');
    expect(read(app, 'src/a.ts')).toContain('b = 3');

    const after = await status(app);
    expect(after.counts).toEqual({
      total: 1,
      recording: 0,
      open: 1,
      reverted: 0,
      with_checkpoint: 1,
      files: 3,
      additions: 2,
      deletions: 2,
    });
    const capsule = after.recent[0];
    expect(capsule).toMatchObject({
      session_id: run.session_id,
      run_id: run.run_id,
      status: 'open',
      run_status: 'completed',
      checkpoint_note: null,
    });
    expect(
      capsule.files.map((f: any) => [
        f.path,
        f.change,
        f.additions,
        f.deletions,
        f.edits,
        f.tools,
        f.revertible,
      ]),
    ).toEqual([
      ['src/a.ts', 'modify', 1, 1, 1, ['edit'], true],
      ['src/new.ts', 'create', 1, 0, 1, ['edit'], true],
      ['docs/old.md', 'delete', 0, 1, 1, ['edit'], true],
    ]);
    const created = events.find((e) => e.type === 'edit_capsule.created');
    expect(created?.payload).toEqual({
      session_id: run.session_id,
      capsule_id: capsule.id,
      run_id: run.run_id,
      files: 3,
      additions: 2,
      deletions: 2,
      checkpoint_id: capsule.checkpoint_id,
    });

    // The checkpoint holds the workspace from before the run's first change.
    const checkpoint = await app.ws.checkpoints.get(capsule.checkpoint_id);
    expect(checkpoint.automatic).toBe(true);
    expect(checkpoint.changed_since.map((c) => [c.path, c.change]).sort()).toEqual([
      ['docs/old.md', 'delete'],
      ['src/a.ts', 'modify'],
      ['src/new.ts', 'create'],
    ]);

    const shown = (await invokeTool(
      app,
      'edit_capsule',
      { action: 'show', capsule_id: capsule.id },
      { surface: 'agent' },
    )) as any;
    expect(shown.diff).toContain('-export const b = 2;');
    expect(shown.diff).toContain("+export const made = 'by the run';");
    expect(shown.diff).toContain('-# old');
    expect(shown.restore_hint).toContain(`checkpoint_restore ${capsule.checkpoint_id}`);

    const asks: PermissionRequest[] = [];
    const reverted = (await invokeTool(
      app,
      'revert_edit_capsule',
      { capsule_id: capsule.id },
      { surface: 'agent', sessionId: run.session_id, ask: async (request) => void asks.push(request) },
    )) as any;
    expect(read(app, 'src/a.ts')).toBe(FILES['src/a.ts']);
    expect(read(app, 'docs/old.md')).toBe(FILES['docs/old.md']);
    expect(existsSync(join(app.workspace, 'src/new.ts'))).toBe(false);
    expect(asks).toHaveLength(1);
    expect(asks[0].title).toBe(`revert edit capsule ${capsule.id} (run ${run.run_id}, 3 files)`);
    expect(reverted.capsule).toMatchObject({ status: 'reverted', reverted_by_session_id: run.session_id });
    const history = (await app.ws.history.list({ sessionId: run.session_id })).filter(
      (c) => c.tool === 'revert_edit_capsule',
    );
    expect(history.map((c) => [c.path, c.change])).toEqual([
      ['src/a.ts', 'modify'],
      ['src/new.ts', 'delete'],
      ['docs/old.md', 'create'],
    ]);
    expect(reverted.capsule.revert_history_ids).toEqual(history.map((c) => c.id));
    expect(events.filter((e) => e.type === 'edit_capsule.reverted')).toHaveLength(1);
    await expect(
      invokeTool(app, 'revert_edit_capsule', { capsule_id: capsule.id }, { surface: 'agent' }),
    ).rejects.toMatchObject({
      code: 'conflict',
      message: `capsule_id: edit capsule ${capsule.id} was already reverted`,
    });
  });

  it('refuses to revert, writing nothing, when a file changed after the run', async () => {
    const { app } = await agentApp(editScript(), {
      git: true,
      files: FILES,
      extraConfig: { options: { edit_capsules: true } },
    });
    const run = await app.agent.run({ prompt: 'change things', yolo: true });
    const [capsule] = await app.quality.capsules.list();
    writeFileSync(join(app.workspace, 'src/a.ts'), 'export const a = 99;\n');
    const error = await invokeTool(
      app,
      'revert_edit_capsule',
      { capsule_id: capsule.id },
      { surface: 'agent' },
    ).catch((e: SvcError) => e);
    if (!SvcError.is(error)) throw new Error('expected the revert to be refused');
    expect(error.code).toBe('conflict');
    expect(error.message).toBe(
      `capsule_id: src/a.ts changed after run ${run.run_id} (a later edit or outside svc), so edit capsule ${capsule.id} cannot be reverted safely; revert later capsules first (checkpoint_restore ${capsule.checkpoint_id} restores the whole workspace to before the run). Nothing was written`,
    );
    expect(read(app, 'src/a.ts')).toBe('export const a = 99;\n');
    expect(existsSync(join(app.workspace, 'src/new.ts'))).toBe(true);
    expect(existsSync(join(app.workspace, 'docs/old.md'))).toBe(false);
    expect((await app.quality.capsules.get(capsule.id)).status).toBe('open');
  });

  it('makes no capsule and no checkpoint when the option is off', async () => {
    const { app } = await agentApp(editScript(), { git: true, files: FILES });
    await app.agent.run({ prompt: 'change things', yolo: true });
    expect((await status(app)).counts.total).toBe(0);
    expect(await app.ws.checkpoints.list()).toEqual([]);
  });

  it('without git the capsule has no checkpoint and still reverts from file history', async () => {
    const { app } = await agentApp(editScript(), {
      files: FILES,
      extraConfig: { options: { edit_capsules: true } },
    });
    await app.agent.run({ prompt: 'change things', yolo: true });
    const [capsule] = await app.quality.capsules.list();
    expect(capsule.checkpoint_id).toBeNull();
    expect(capsule.checkpoint_note).toMatch(/^no checkpoint \(checkpoints need a git repository/);
    await invokeTool(app, 'revert_edit_capsule', { capsule_id: capsule.id }, { surface: 'cli' });
    expect(read(app, 'src/a.ts')).toBe(FILES['src/a.ts']);
    expect(existsSync(join(app.workspace, 'src/new.ts'))).toBe(false);
  });

  it('a run that changes nothing leaves no capsule', async () => {
    const { app } = await agentApp(
      [reply().toolCall('view', { path: 'src/a.ts' }), reply().text('read only')],
      {
        git: true,
        files: FILES,
        extraConfig: { options: { edit_capsules: true } },
      },
    );
    await app.agent.run({ prompt: 'look', yolo: true });
    expect((await status(app)).counts.total).toBe(0);
    expect(await app.ws.checkpoints.list()).toEqual([]);
  });
});
