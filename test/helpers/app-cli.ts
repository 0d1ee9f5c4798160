/**
 * `svc <args>` run in-process against a test app's workspace and data dir, its output collected;
 * `onStderr` sees the stderr so far after each write (a test that answers a prompt as it appears).
 */
import type { App } from '../../src/app';
import { runCli } from '../../src/surfaces/cli/index';

export async function appCli(app: App, args: string[], onStderr?: (text: string) => void) {
  let stdout = '';
  let stderr = '';
  const code = await runCli([...args, '--cwd', app.workspace, '--data-dir', app.dataDir], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: {
      write: (s: string) => {
        stderr += s;
        onStderr?.(stderr);
      },
    },
    env: app.env as Record<string, string | undefined>,
    cwd: app.workspace,
  });
  return { code, stdout, stderr };
}
