/**
 * Run `svc …` in-process against a test App's workspace, data dir and env, with stdin, captured
 * output, and a hook on stderr lines (where `svc auth` prints codes and URLs).
 * @module
 */
import { Readable } from 'node:stream';
import type { App } from '../../../src/app';
import { runCli } from '../../../src/surfaces/cli/index';

export interface SvcResult {
  code: number;
  stdout: string;
  stderr: string;
  json?: any;
}

export async function svc(
  app: Pick<App, 'workspace' | 'dataDir' | 'env'>,
  argv: string[],
  options: {
    stdin?: string;
    onStderrLine?: (line: string) => void;
    env?: Record<string, string | undefined>;
  } = {},
): Promise<SvcResult> {
  let stdout = '';
  let stderr = '';
  let partial = '';
  const code = await runCli([...argv, '--cwd', app.workspace, '--data-dir', app.dataDir], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: {
      write: (s: string) => {
        stderr += s;
        partial += s;
        let nl = partial.indexOf('\n');
        while (nl >= 0) {
          options.onStderrLine?.(partial.slice(0, nl));
          partial = partial.slice(nl + 1);
          nl = partial.indexOf('\n');
        }
      },
    },
    stdin: Readable.from([options.stdin ?? '']) as unknown as NodeJS.ReadableStream,
    env: { ...(app.env as Record<string, string | undefined>), ...options.env },
    cwd: app.workspace,
  });
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    json = undefined;
  }
  return { code, stdout, stderr, json };
}

/** The first http URL in a line. */
export function urlIn(line: string): string | undefined {
  return /https?:\/\/\S+/.exec(line)?.[0];
}
