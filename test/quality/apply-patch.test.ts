/**
 * `edit` in apply_patch mode, called as the agent calls it. Pins:
 * - a Codex patch and a unified diff each change several files (update, add, delete, move) in one
 *   approval that shows every file's diff, with one file history row and one file.changed per file,
 *   and the session counts as having read what it wrote;
 * - a hunk that does not apply is refused with nothing written, no approval asked and no history,
 *   and the error names the file and the hunk; a denied approval writes nothing either;
 * - get_apply_patch_status counts applied and failed patches and lists the failures (TOOLS-32).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toolHarness } from '../tools/harness';

const FILES = {
  'src/greet.py':
    'import sys\n\ndef greet(name):\n    print("Hi", name)\n    return name\n\ndef main():\n    greet(sys.argv[1])\n',
  'src/util.ts':
    'export function add(a: number, b: number) {\n  return a + b;\n}\n\nexport const ZERO = 0;\n',
  'notes/old.md': '# Old notes\n',
  'README.md': '# demo\n',
};

const codexPatch = [
  '*** Begin Patch',
  '*** Update File: src/greet.py',
  '@@ def greet(name):',
  '-    print("Hi", name)',
  '+    print("Hello", name)',
  '     return name',
  '*** Update File: src/util.ts',
  '*** Move to: src/math.ts',
  '@@',
  ' export function add(a: number, b: number) {',
  '-  return a + b;',
  '+  return b + a;',
  ' }',
  '*** Add File: src/new.ts',
  '+export const NEW = true;',
  '*** Delete File: notes/old.md',
  '*** End Patch',
].join('\n');

const unifiedPatch = [
  'diff --git a/src/greet.py b/src/greet.py',
  '--- a/src/greet.py',
  '+++ b/src/greet.py',
  '@@ -7,2 +7,3 @@ def greet(name):',
  ' def main():',
  '-    greet(sys.argv[1])',
  '+    for name in sys.argv[1:]:',
  '+        greet(name)',
  'diff --git a/README.md b/README.md',
  '--- a/README.md',
  '+++ b/README.md',
  '@@ -1 +1,2 @@',
  ' # demo',
  '+More text.',
  'diff --git a/docs/guide.md b/docs/guide.md',
  'new file mode 100644',
  '--- /dev/null',
  '+++ b/docs/guide.md',
  '@@ -0,0 +1,2 @@',
  '+# Guide',
  '+Read me.',
  '',
].join('\n');

describe('edit apply_patch', () => {
  it('applies a Codex patch across files in one approval, with history, events and read tracking', async () => {
    const h = await toolHarness({ files: FILES });
    const result = await h.call('edit', { mode: 'apply_patch', patch: codexPatch });

    expect(result).toMatchObject({ mode: 'apply_patch', format: 'codex', fuzzy_hunks: 0 });
    expect(result.files.map((f: any) => [f.path, f.change, f.moved_from ?? f.moved_to ?? null])).toEqual([
      ['src/greet.py', 'modify', null],
      ['src/util.ts', 'delete', 'src/math.ts'],
      ['src/math.ts', 'create', 'src/util.ts'],
      ['src/new.ts', 'create', null],
      ['notes/old.md', 'delete', null],
    ]);
    expect(h.read('src/greet.py')).toBe(FILES['src/greet.py'].replace('"Hi"', '"Hello"'));
    expect(h.read('src/math.ts')).toBe(FILES['src/util.ts'].replace('a + b', 'b + a'));
    expect(h.read('src/new.ts')).toBe('export const NEW = true;\n');
    expect(existsSync(join(h.app.workspace, 'src/util.ts'))).toBe(false);
    expect(existsSync(join(h.app.workspace, 'notes/old.md'))).toBe(false);

    // One approval showing every file's diff.
    expect(h.asks).toHaveLength(1);
    expect(h.asks[0].title).toBe(
      'apply_patch: 5 files (src/greet.py, src/util.ts, src/math.ts, src/new.ts, notes/old.md)',
    );
    const diff = String(h.asks[0].details?.diff);
    for (const line of [
      '+    print("Hello", name)',
      '+  return b + a;',
      '+export const NEW = true;',
      '-# Old notes',
    ]) {
      expect(diff).toContain(line);
    }
    // History and events, one per file; the session has read what it wrote.
    const history = await h.app.ws.history.list({ sessionId: h.sessionId });
    expect(history.map((c) => [c.tool, c.path, c.change, c.run_id])).toEqual([
      ['edit', 'src/greet.py', 'modify', 'run_test'],
      ['edit', 'src/util.ts', 'delete', 'run_test'],
      ['edit', 'src/math.ts', 'create', 'run_test'],
      ['edit', 'src/new.ts', 'create', 'run_test'],
      ['edit', 'notes/old.md', 'delete', 'run_test'],
    ]);
    expect(result.files.map((f: any) => f.history_id)).toEqual(history.map((c) => c.id));
    expect(h.busEvents.filter((e) => e.type === 'file.changed').map((e) => e.payload.path)).toEqual([
      'src/greet.py',
      'src/util.ts',
      'src/math.ts',
      'src/new.ts',
      'notes/old.md',
    ]);
    await h.call('edit', { path: 'src/new.ts', old_string: 'true', new_string: 'false' });
    expect(h.read('src/new.ts')).toBe('export const NEW = false;\n');
    expect(h.events.filter((e) => e.type.startsWith('apply_patch.'))).toEqual([
      {
        type: 'apply_patch.applied',
        payload: { patch_id: 1, format: 'codex', files: 5, additions: 7, deletions: 7, fuzzy_hunks: 0 },
      },
    ]);
    expect(h.modelText('edit', result)).toMatch(
      /^Applied codex patch to 5 files: src\/greet.py \(\+1 −1\), src\/util.ts \(moved to src\/math.ts\), src\/math.ts \(moved from src\/util.ts, \+5 −0\), src\/new.ts \(created, \+1\), notes\/old.md \(deleted\)\./,
    );
  });

  it('applies a unified diff across files, patch alone selecting the mode', async () => {
    const h = await toolHarness({ files: FILES });
    const result = await h.call('edit', { patch: unifiedPatch });
    expect(result.format).toBe('unified');
    expect(result.files.map((f: any) => [f.path, f.change, f.additions, f.deletions])).toEqual([
      ['src/greet.py', 'modify', 2, 1],
      ['README.md', 'modify', 1, 0],
      ['docs/guide.md', 'create', 2, 0],
    ]);
    expect(h.read('src/greet.py')).toBe(
      FILES['src/greet.py'].replace(
        '    greet(sys.argv[1])\n',
        '    for name in sys.argv[1:]:\n        greet(name)\n',
      ),
    );
    expect(h.read('README.md')).toBe('# demo\nMore text.\n');
    expect(h.read('docs/guide.md')).toBe('# Guide\nRead me.\n');
    expect(h.asks).toHaveLength(1);
    expect(await h.app.ws.history.list({ sessionId: h.sessionId })).toHaveLength(3);
  });

  it('refuses a hunk that does not apply: nothing written, nothing asked, the file and hunk named', async () => {
    const h = await toolHarness({ files: FILES });
    const broken = codexPatch.replace('-  return a + b;', '-  return a - b;');
    const error = await h.call('edit', { mode: 'apply_patch', patch: broken }).catch((e) => e);
    expect(error.code).toBe('invalid_input');
    expect(error.message).toBe(
      'patch: src/util.ts, hunk 1 of 1 (@@) did not apply: its 3 context and removed lines were not found in src/util.ts. Closest: lines 1–3 (2 of 3 lines match), where line 2 is "  return a + b;" but the hunk expects "  return a - b;". Nothing was written; view the file and redo the patch against its current content',
    );
    // The first file section applied in memory only: every file is as it was.
    for (const [path, content] of Object.entries(FILES)) expect(h.read(path)).toBe(content);
    expect(existsSync(join(h.app.workspace, 'src/new.ts'))).toBe(false);
    expect(h.asks).toHaveLength(0);
    expect(await h.app.ws.history.list()).toHaveLength(0);
    expect(h.busEvents.filter((e) => e.type === 'file.changed')).toHaveLength(0);
    expect(h.events).toEqual([
      {
        type: 'apply_patch.failed',
        payload: {
          patch_id: 1,
          format: 'codex',
          code: 'invalid_input',
          reason: 'context_not_found',
          path: 'src/util.ts',
          hunk: 1,
        },
      },
    ]);
  });

  it('writes nothing when the approval is denied', async () => {
    const h = await toolHarness({ files: FILES });
    h.denyAll();
    await expect(h.call('edit', { patch: codexPatch })).rejects.toMatchObject({ code: 'forbidden' });
    for (const [path, content] of Object.entries(FILES)) expect(h.read(path)).toBe(content);
    expect(await h.app.ws.history.list()).toHaveLength(0);
  });

  it('refuses section errors by name: Add onto an existing file, Update of a missing one, stray fields', async () => {
    const h = await toolHarness({ files: FILES });
    const add = await h
      .call('edit', { patch: '*** Begin Patch\n*** Add File: README.md\n+x\n*** End Patch' })
      .catch((e) => e);
    expect(add.message).toBe(
      'patch: Add File README.md: the file already exists; change it with an Update File section (or delete it first). Nothing was written',
    );
    const update = await h
      .call('edit', { patch: '*** Begin Patch\n*** Update File: nope.txt\n-a\n+b\n*** End Patch' })
      .catch((e) => e);
    expect(update.details).toEqual({ path: 'nope.txt', reason: 'file_not_found' });
    const stray = await h
      .call('edit', { mode: 'apply_patch', patch: codexPatch, old_string: 'x' })
      .catch((e) => e);
    expect(stray.message).toBe(
      'old_string: not used by apply_patch mode; put every change in patch and leave old_string out',
    );
    const outside = await h
      .call('edit', { patch: '*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch' })
      .catch((e) => e);
    expect(outside.code).toBe('forbidden');
  });

  it('TOOLS-32: get_apply_patch_status is registered and counts applied and failed patches', async () => {
    const h = await toolHarness({ files: FILES });
    expect(h.app.tools.get('get_apply_patch_status')).toBeDefined();
    await h.call('edit', { patch: unifiedPatch });
    await h
      .call('edit', { patch: codexPatch.replace('-  return a + b;', '-  return nothing;') })
      .catch(() => {});
    await h.call('edit', { patch: 'not a patch at all' }).catch(() => {});
    const status = await h.call('get_apply_patch_status', {});
    expect(status.counts).toEqual({
      total: 3,
      applied: 1,
      failed: 2,
      files_changed: 3,
      fuzzy_hunks: 0,
      by_format: {
        codex: { applied: 0, failed: 1 },
        unified: { applied: 1, failed: 0 },
        unknown: { applied: 0, failed: 1 },
      },
      failed_by_reason: { context_not_found: 1, unknown_format: 1 },
    });
    expect(status.recent_failures.map((f: any) => [f.patch_id, f.format, f.reason, f.path, f.hunk])).toEqual([
      [3, 'unknown', 'unknown_format', null, null],
      [2, 'codex', 'context_not_found', 'src/util.ts', 1],
    ]);
    expect(status.formats.map((f: any) => f.format)).toEqual(['codex', 'unified']);
    expect(status.entry_point).toEqual({ tool: 'edit', mode: 'apply_patch', field: 'patch' });
  });
});
