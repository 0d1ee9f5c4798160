/**
 * The permission keys of `svc run` on a terminal (the built binary in tmux, issue 16 item 5): the
 * same single keypress as the TUI dialog (src/permissions/keys.ts), no Enter, shown the same way.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PERMISSION_KEYS, permissionChoices } from '../../src/permissions/keys';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { svcInTmux } from '../helpers/tmux';

async function editRun(key: string) {
  const provider = await fakeProvider([
    reply().toolCall('view', { path: 'hello.txt' }),
    reply().toolCall('edit', { path: 'hello.txt', old_string: 'hello world', new_string: 'goodbye world' }),
    reply().text('Done editing.'),
  ]);
  const ws = tmpWorkspace({ files: { 'hello.txt': 'hello world\n' } });
  writeFileSync(
    join(ws, 'svc.toml'),
    `[providers.fake]\ntype = "openai-compat"\nbase_url = "${provider.url}"\n[models]\nlarge = "fake/m1"\n[options.sandbox]\nmode = "off"\n`,
  );
  const t = svcInTmux({ cwd: ws, columns: 120, rows: 30, args: ['run', 'change the greeting in hello.txt'] });
  const asked = await t.until((s) => s.includes('? allow edit'), 'the permission prompt');
  expect(asked).toContain(permissionChoices());
  t.type(key); // one key, no Enter
  const done = await t.until((s) => s.includes('svc-exit='), 'svc run to exit');
  return { ws, done };
}

describe('svc run permission keys (tmux)', () => {
  it('the keys are the same set on every surface: y once, s session, n deny', () => {
    expect(PERMISSION_KEYS.map((k) => [k.key, k.decision])).toEqual([
      ['y', 'allow_once'],
      ['s', 'allow_session'],
      ['n', 'deny'],
    ]);
    expect(permissionChoices()).toBe('[y] allow once  [s] allow for this session  [n] deny');
  });

  it('y allows the edit with a single keypress (no Enter) and names the answer', {
    timeout: 150_000,
  }, async () => {
    const { ws, done } = await editRun('y');
    expect(done).toContain(`${permissionChoices()} allow once`);
    expect(done).toContain('Done editing.');
    expect(done).toContain('svc-exit=0');
    expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('goodbye world\n');
  });

  it('n denies with a single keypress and the file stays as it was', { timeout: 150_000 }, async () => {
    const { ws, done } = await editRun('n');
    expect(done).toContain(`${permissionChoices()} deny`);
    expect(done).toContain('svc: run refused: edit was denied by the operator');
    expect(done).toContain('svc-exit=3');
    expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('hello world\n');
  });
});

describe('svc run shows what it asks to run, not what the model dressed it as (tmux)', () => {
  it('the whole command, every line, with its control characters shown; the model text moves no cursor and sets no title', {
    timeout: 150_000,
  }, async () => {
    const ESC = '\u001b';
    // A command that rewrites its own prompt line (ESC [2K, ESC [1G) to read as `ls -la`, with a
    // second command hidden after a newline behind a long comment.
    const command = `touch PWNED_ONE # ${ESC}[2K${ESC}[1G? allow bash: ls -la ${'x'.repeat(120)}\ntouch PWNED_TWO`;
    const provider = await fakeProvider([
      reply().toolCall('bash', { command }),
      reply().text(`Done.${ESC}]0;PWNED-TITLE\u0007${ESC}]52;c;aGFja2Vk\u0007 ok`),
    ]);
    const ws = tmpWorkspace({ files: { 'hello.txt': 'hello\n' } });
    writeFileSync(
      join(ws, 'svc.toml'),
      `[providers.fake]\ntype = "openai-compat"\nbase_url = "${provider.url}"\n[models]\nlarge = "fake/m1"\n[options.sandbox]\nmode = "off"\n`,
    );
    const t = svcInTmux({ cwd: ws, columns: 200, rows: 40, args: ['run', 'list the files'] });
    const asked = await t.until((s) => s.includes(permissionChoices()), 'the permission prompt');
    expect(asked).toContain('$ touch PWNED_ONE # ^[[2K^[[1G? allow bash: ls -la');
    expect(asked).toMatch(/^ {4}touch PWNED_TWO$/m);
    t.type('y');
    const done = await t.until((s) => s.includes('svc-exit='), 'svc run to exit');
    // What ran is what was shown: both lines.
    expect(existsSync(join(ws, 'PWNED_ONE'))).toBe(true);
    expect(existsSync(join(ws, 'PWNED_TWO'))).toBe(true);
    expect(done).toContain('Done. ok');
    expect(t.run('display-message', '-p', '-t', 'svc', '#{pane_title}')).not.toContain('PWNED-TITLE');
    expect(t.run('list-buffers')).not.toContain('aGFja2Vk');
    expect(done).toContain('svc-exit=0');
  });
});
