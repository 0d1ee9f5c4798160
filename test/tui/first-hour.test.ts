/**
 * Issue 16, met the way a new user meets it: the built `svc` under tmux against the scripted fake
 * provider. Pins:
 * - a failed run shows what failed (provider, model) and the next step, and /why the details;
 * - a spinner and the elapsed time while a run works;
 * - at 80 columns the status line shortens the path with an ellipsis and keeps it apart from the
 *   model; /help wraps descriptions; /provider-status lists the ready provider first;
 * - at 40x12 the permission dialog shows the changed lines; a denied call says so with a next step;
 * - saving an API key in onboarding is confirmed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { STEP_MS, svcInTmux } from '../helpers/tmux';

const fast = { 'retry-after-ms': '5' };
const statusRow = (screen: string) => screen.trimEnd().split('\n').at(-1) ?? '';

describe('the TUI in the first hour', () => {
  it('says why a run failed and what to do, shows progress, and fits 80 columns', {
    timeout: 10 * STEP_MS,
  }, async () => {
    const provider = await fakeProvider([
      reply().httpError(500, { error: { message: 'upstream exploded' } }, fast),
      reply().httpError(500, { error: { message: 'upstream exploded' } }, fast),
      reply().httpError(500, { error: { message: 'upstream exploded' } }, fast),
      reply().hang(2500).text('slow answer'),
    ]);
    const root = tmpWorkspace({ files: {} });
    const ws = join(root, 'a-rather-long-project-directory', 'with-more-depth', 'my-service');
    mkdirSync(ws, { recursive: true });
    writeFileSync(
      join(ws, 'svc.toml'),
      stringify({
        providers: { fake: { type: 'openai-compat', base_url: provider.url } },
        models: { large: 'fake/m1' },
      }),
    );
    const t = svcInTmux({ cwd: ws, columns: 80, rows: 24 });
    const first = await t.until(
      (s) => s.includes('ask anything') && statusRow(s).includes('fake/m1'),
      'the prompt',
    );

    // The status line: the path gives way with an ellipsis, two spaces at least before the model.
    const status = statusRow(first);
    expect(status.length).toBeLessThanOrEqual(80);
    expect(status).toContain('…');
    expect(status).toContain('my-service');
    expect(status).toMatch(/ {2}fake\/m1 · /);

    t.type('first', 'Enter');
    const failed = await t.until((s) => s.includes('next:'), 'the failure line');
    expect(failed.replace(/\n/g, ' ').replace(/\s+/g, ' ')).toContain(
      '✗ the provider failed on its side (HTTP 500, 3 attempts): "upstream exploded" (provider fake, model fake/m1)',
    );
    expect(failed).toContain('next: retry later');
    expect(failed).not.toContain('run failed: provider_error');

    t.type('/why', 'Enter');
    const why = await t.until((s) => s.includes('code: provider_server_error'), 'the /why details');
    expect(why).toContain('status: 500');
    t.type('G');
    await t.until((s) => s.includes('attempts: 3') && s.includes('svc logs --level warn'), 'the end of /why');
    t.type('', 'Escape');
    await t.until((s) => s.includes('ask anything'), 'the prompt again');

    // A spinner and the elapsed time while the run works.
    t.type('second', 'Enter');
    const working = await t.until(
      (s) => /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] running [1-9]s/.test(statusRow(s)),
      'the spinner and elapsed time',
    );
    expect(statusRow(working).length).toBeLessThanOrEqual(80);
    await t.until((s) => s.includes('slow answer') && statusRow(s).includes('○ idle'), 'the answer');

    // /help wraps: the end of a long description is on the screen.
    t.type('/help', 'Enter');
    await t.until((s) => s.includes('Slash commands') || s.includes('Keys'), 'the help');
    t.type('G');
    const help = await t.until((s) => s.includes('/quit'), 'the end of the help');
    expect(help).toContain('each prompt)');
    t.type('', 'Escape');
    await t.until((s) => s.includes('ask anything'), 'the prompt again');

    // /provider-status: the one ready provider is the first row.
    t.type('/provider-status', 'Enter');
    const readout = await t.until((s) => /│ fake\s+configured, ready/.test(s), 'the provider status');
    const rows = readout.split('\n').filter((l) => /^│ \S/.test(l));
    expect(rows[1], readout).toMatch(/^│ fake\s+configured, ready/);
    expect(provider.unexpected).toEqual([]);
  });

  it('at 40x12 the permission dialog shows the changed lines; a denial says what to do', {
    timeout: 6 * STEP_MS,
  }, async () => {
    const provider = await fakeProvider([
      reply().toolCall('view', { path: 'hello.txt' }),
      reply().toolCall('edit', { path: 'hello.txt', old_string: 'hello world', new_string: 'goodbye world' }),
      reply().text('Left it.'),
    ]);
    const ws = tmpWorkspace({ files: { 'hello.txt': 'hello world\n' } });
    writeFileSync(
      join(ws, 'svc.toml'),
      stringify({
        providers: { fake: { type: 'openai-compat', base_url: provider.url } },
        models: { large: 'fake/m1' },
      }),
    );
    const t = svcInTmux({ cwd: ws, columns: 40, rows: 12 });
    await t.until((s) => s.includes('ask anything'), 'the prompt');
    t.type('change it', 'Enter');
    const dialog = await t.until(
      (s) => s.includes('Permission: edit') && s.includes('esc deny'),
      'the dialog',
    );
    expect(dialog).toContain('-hello world');
    expect(dialog).toContain('+goodbye world');
    for (const line of dialog.split('\n')) expect(line.length).toBeLessThanOrEqual(40);
    t.type('n');
    await t.until((s) => s.includes('Left it.'), 'the answer after the denial');
    const flat = t.history().replace(/\s+/g, ' ');
    expect(flat).toContain('edit was denied by the operator');
    expect(flat).toContain('next: allow it for the session when asked again');
  });

  it('confirms an API key saved in onboarding', { timeout: 4 * STEP_MS }, async () => {
    const ws = tmpWorkspace({ files: {} });
    // No provider, no local model server: onboarding opens.
    writeFileSync(join(ws, 'svc.toml'), stringify({ options: { local_probe: { enabled: false } } }));
    const t = svcInTmux({ cwd: ws, columns: 100, rows: 30 });
    // Enter once the provider list has loaded (before, the only row is "another provider").
    await t.until(
      (s) => s.includes('connect a model provider') && /│ +›? *anthropic/.test(s),
      'the provider list',
    );
    t.type('', 'Enter');
    const prompt = await t.until((s) => /API key for (\S+):/.test(s), 'the key prompt');
    const id = /API key for (\S+):/.exec(prompt)![1];
    t.type('sk-test-0123456789abcdefghij', 'Enter');
    const saved = await t.until((s) => s.includes(`API key saved for ${id}`), 'the confirmation');
    expect(saved.replace(/\s+/g, ' ')).toContain(
      `API key saved for ${id} in the credential store: ${id} is ready`,
    );
    expect(saved).not.toContain('sk-test-0123456789abcdefghij');
  });
});
