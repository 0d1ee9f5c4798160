/**
 * The CLI's text output on a terminal carries what others wrote (a session's title comes from the
 * model or a client): none of their escape sequences reaches the terminal; `--json` and output
 * that is not a terminal stay exact.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/surfaces/cli/index';
import { callTool } from '../../src/tools/core/call-tool';
import { makeTestApp } from '../helpers/make-test-app';

const ESC = '\u001b';
const TITLE = `fix ${ESC}]0;PWNED${ESC}\\the bug${ESC}[2K\u202e`;

async function list(app: Awaited<ReturnType<typeof makeTestApp>>, tty: boolean, ...extra: string[]) {
  let stdout = '';
  const code = await runCli(
    ['session', 'list', ...extra, '--cwd', app.workspace, '--data-dir', app.dataDir],
    {
      stdout: { write: (s: string) => (stdout += s), isTTY: tty },
      stderr: { write: () => true },
      env: app.env as Record<string, string | undefined>,
      cwd: app.workspace,
    },
  );
  return { code, stdout };
}

describe('CLI text output on a terminal', () => {
  it('a session title with escape sequences is listed without them on a terminal, exact when piped or --json', async () => {
    const app = await makeTestApp();
    const created = await callTool(app, 'create_session', { title: TITLE }, { surface: 'cli' });
    expect(created.ok).toBe(true);
    await app.close();

    const terminal = await list(app, true);
    expect(terminal.code).toBe(0);
    expect(terminal.stdout).toContain('fix the bug<U+202E>');
    expect(terminal.stdout).not.toContain(ESC);

    const piped = await list(app, false);
    expect(piped.stdout).toContain(TITLE);

    const json = await list(app, true, '--json');
    expect(JSON.parse(json.stdout).sessions.map((s: { title: string }) => s.title)).toContain(TITLE);
  });
});
