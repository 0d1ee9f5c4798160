/**
 * `svc web` (the built binary). Pins: it listens on 127.0.0.1 with a fresh token, prints the page
 * address with the token in the fragment, that address signs the page in (and the token leaves
 * the address bar), the token works as a bearer and never reaches the log; no browser is
 * launched where none can be (no display), and that is not an error.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openBrowser } from '../../src/surfaces/cli/commands/web';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { spawnServer } from '../http/spawn-server';
import { browserForFile, openPage, shot } from './harness';

const browser = browserForFile();

describe('svc web', () => {
  it('prints a loopback address whose fragment token signs the page in', { timeout: 90_000 }, async () => {
    const ws = tmpWorkspace();
    const server = spawnServer(['web'], { cwd: ws, timeoutMs: 60_000 });
    const url = await server.ready;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await expect.poll(() => server.stdout()).toContain('svc: web UI at');
    const page = /^svc: web UI at (\S+)$/m.exec(server.stdout())?.[1] ?? '';
    const token = /#token=([A-Za-z0-9_-]{32})$/.exec(page)?.[1] ?? '';
    expect(page).toBe(`${url}/#token=${token}`);
    expect(token).toHaveLength(32);

    expect((await fetch(`${url}/v1/sessions`)).status).toBe(401);
    expect(
      (await fetch(`${url}/v1/sessions`, { headers: { authorization: `Bearer ${token}` } })).status,
    ).toBe(200);

    const { page: tab } = await openPage(browser());
    await tab.goto(page);
    await tab.getByRole('heading', { name: 'Sessions' }).waitFor();
    expect(tab.url()).toBe(`${url}/#/`);
    await shot(tab, '40-svc-web');

    server.child.kill('SIGTERM');
    expect(await server.exit).toBe(0);
    const log = readFileSync(join(ws, '.svc', 'logs', 'svc.log'), 'utf8');
    expect(log).toContain('http server listening');
    expect(log).not.toContain(token);
    expect(server.stderr()).not.toContain(token);
  });

  it('opens no browser where there is no display, without failing', () => {
    const written: string[] = [];
    const io = { env: {}, stderr: { write: (text: string) => written.push(text) } };
    expect(openBrowser('http://127.0.0.1:1/#token=x', { io: io as never }, 'linux')).toBe(false);
    expect(written).toEqual([]);
  });
});
