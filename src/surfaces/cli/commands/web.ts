/**
 * `svc web`: the HTTP service on loopback with a fresh random token, for the browser UI. It
 * prints the page's address with the token in the URL fragment (`#token=…`): a fragment never
 * leaves the browser, so the token reaches no server or proxy log; the page moves it to the
 * tab's session storage and removes it from the address bar. It opens a browser when one is
 * there (a desktop session with xdg-open, macOS, Windows) and otherwise only prints.
 * @module
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { CliContext, CliRegistrar } from '../context';
import { runServer } from './service-http';

interface WebOptions {
  port?: string;
  open: boolean;
}

export const registerWeb: CliRegistrar = (program, ctx) => {
  program
    .command('web')
    .description(
      'start the HTTP service on 127.0.0.1 with a fresh token and open the web UI (or print its address)',
    )
    .option('--port <port>', 'port to listen on (default 0: a free one)')
    .option('--no-open', 'only print the address; do not try to open a browser')
    .action(async (options: WebOptions) => {
      const token = randomBytes(24).toString('base64url');
      await runServer(
        ctx,
        'http',
        { host: '127.0.0.1', port: options.port ?? '0', token, auth: 'bearer' },
        (url) => {
          const page = `${url}/#token=${token}`;
          ctx.out(`svc: listening on ${url}`);
          ctx.out(`svc: web UI at ${page}`);
          ctx.io.stderr.write(
            'svc: the token is new for this run; anyone with the link can use svc until you stop it\n',
          );
          if (options.open) openBrowser(page, ctx);
        },
      );
    });
};

/** Best effort: only where a browser can be there at all, and never an error if it is not. */
export function openBrowser(url: string, ctx: Pick<CliContext, 'io'>, platform = process.platform): boolean {
  const env = ctx.io.env;
  let command: string[] | undefined;
  if (platform === 'darwin') command = ['open', url];
  else if (platform === 'win32') command = ['cmd', '/c', 'start', '""', url];
  else if (env.DISPLAY || env.WAYLAND_DISPLAY) command = ['xdg-open', url];
  if (!command) return false;
  try {
    const child = spawn(command[0], command.slice(1), {
      stdio: 'ignore',
      detached: true,
      env: env as NodeJS.ProcessEnv,
    });
    child.on('error', () => {
      ctx.io.stderr.write('svc: could not open a browser; open the address above yourself\n');
    });
    child.unref();
    return true;
  } catch {
    return false;
  }
}
