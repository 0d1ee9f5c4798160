/**
 * Pack files read after a check, with a FIFO swapped in between the check and the read
 * (test/helpers/fifo-swap.ts: the stat still says "a regular file"). A blocking read of the FIFO
 * stopped svc's whole process until a writer came; now the manifest and the hook files hashed into
 * the approval digest are opened without waiting and checked as opened (`readRegularFile`): a
 * manifest that is a FIFO cannot be read, saying what it is; a hook script that is one is not
 * pinned. In each the FIFO's writer is still waiting afterwards: nothing opened it for a read.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import type { PermissionRequest } from '../../src/tools/core/define-tool';
import { plantSwappedFifo } from '../helpers/fifo-swap';
import { packFiles, packsApp } from './fixtures';

vi.mock('node:fs', async (importOriginal) =>
  (await import('../helpers/fifo-swap')).swappedFs(await importOriginal()),
);

const HOOKED = [
  'name = "hooked"',
  '[[hooks]]',
  'event = "tool.finished"',
  'command = "sh scripts/pipe.sh && node scripts/check.mjs"',
  '',
].join('\n');

describe.runIf(process.platform !== 'win32')('a pack file swapped for a FIFO after the check', () => {
  it('a manifest that became a FIFO: the activation fails naming it, and is never waited on', async () => {
    const app = await packsApp();
    mkdirSync(join(app.workspace, 'elsewhere', 'pipe'), { recursive: true });
    const rescuer = plantSwappedFifo(join(app.workspace, 'elsewhere', 'pipe', 'pack.toml'));
    const session = await app.sessions.create();
    await expect(
      invokeTool(
        app,
        'session_set_pack',
        { pack_path_or_name: 'elsewhere/pipe' },
        { surface: 'agent', sessionId: session.id },
      ),
    ).rejects.toMatchObject({ code: 'invalid_input' });
    expect(rescuer.rescued()).toBe(false);
    expect((await app.packs!.snapshot(session.id)).diagnostics).toEqual([
      {
        section: 'pack',
        field: 'pack.toml',
        level: 'error',
        message: 'cannot read the manifest (it is a FIFO (named pipe), not a regular file)',
      },
    ]);
  });

  it('a hook script that became a FIFO is not pinned in the approval, and is never waited on', async () => {
    const app = await packsApp({
      files: packFiles({ '.svc/packs/hooked/pack.toml': HOOKED, 'scripts/check.mjs': 'console.log("ok")\n' }),
    });
    const rescuer = plantSwappedFifo(join(app.workspace, 'scripts', 'pipe.sh'));
    const session = await app.sessions.create();
    const asks: PermissionRequest[] = [];
    await invokeTool(
      app,
      'session_set_pack',
      { pack_path_or_name: 'hooked' },
      { surface: 'agent', sessionId: session.id, ask: async (request) => void asks.push(request) },
    );
    expect(rescuer.rescued()).toBe(false);
    expect((asks[0].details as { hook_files: unknown }).hook_files).toEqual([
      { path: 'scripts/check.mjs', sha256: expect.any(String) },
    ]);
  });
});
