/**
 * `svc service start http|autopilot` as a built binary (GEN-03, GEN-04, CLI-17, CLI-18). Pins:
 * - one stdout line `svc: listening on <url>` once ready; port 0 shows the real port;
 * - the token (flag, [services.http], SVC_HTTP_TOKEN) is required and never printed or logged;
 * - SIGTERM/SIGINT with an open SSE stream: the stream ends, the process exits 0, the database is
 *   closed (no WAL file left behind);
 * - a non-loopback host without a token is refused with exit code 2; a bad --port is named.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/app';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { spawnServer } from './spawn-server';
import { sseReader } from './sse-reader';

const TOKEN = 'cli-secret-token-5678';
const auth = (token = TOKEN) => ({ authorization: `Bearer ${token}` });

function envFor(ws: string, extra: Record<string, string> = {}) {
  return { HOME: join(ws, '.home'), XDG_CONFIG_HOME: join(ws, '.home', '.config'), ...extra };
}

async function seedSession(ws: string): Promise<string> {
  const app = await createApp({ workspace: ws, env: envFor(ws) });
  try {
    return (await app.sessions.create({ title: 'e2e' })).id;
  } finally {
    await app.close();
  }
}

describe('svc service start http (built binary)', () => {
  it('GEN-03, CLI-17, CLI-18: starts, prints the URL, enforces --token, and stops on SIGTERM with an open stream', async () => {
    const ws = tmpWorkspace();
    const sessionId = await seedSession(ws);
    const server = spawnServer(
      ['service', 'start', 'http', '--port', '0', '--token', TOKEN, '--auth', 'bearer'],
      {
        cwd: ws,
        env: envFor(ws),
      },
    );
    const url = await server.ready;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(url).not.toMatch(/:0$/);
    expect(server.stdout()).toBe(`svc: listening on ${url}\n`);

    expect((await fetch(`${url}/v1/config-status`)).status).toBe(401);
    expect((await fetch(`${url}/v1/config-status`, { headers: auth('wrong-token-1234') })).status).toBe(401);
    const status = await fetch(`${url}/v1/config-status`, { headers: auth() });
    expect(status.status).toBe(200);
    expect(await status.text()).not.toContain(TOKEN);
    expect(await (await fetch(`${url}/healthz`)).json()).toMatchObject({ ok: true, ready: true });

    // The session was created by another process: its event is in the log, not in this
    // server's ring, so Last-Event-ID 0 resyncs from the log.
    const stream = await fetch(`${url}/v1/sessions/${sessionId}/events`, {
      headers: { ...auth(), 'last-event-id': '0' },
    });
    expect(stream.status).toBe(200);
    const reader = sseReader(stream);
    expect((await reader.take(3)).map((e) => e.event)).toEqual(['connected', 'resync', 'session.created']);

    server.child.kill('SIGTERM');
    expect((await reader.next(5000)).event).toBe('shutdown');
    expect(await reader.ended(5000)).toBe(true);
    expect(await server.exit).toBe(0);
    expect(server.stderr()).toContain('svc: shutting down (SIGTERM)');
    // The database was closed cleanly: SQLite removes the WAL file on the last close.
    expect(existsSync(join(ws, '.svc', 'svc.db'))).toBe(true);
    expect(existsSync(join(ws, '.svc', 'svc.db-wal'))).toBe(false);
    const log = readFileSync(join(ws, '.svc', 'logs', 'svc.log'), 'utf8');
    expect(log).toContain('"message":"http server stopped"');
    expect(log).toContain('"db_closed":true');
    for (const text of [server.stdout(), server.stderr(), log]) expect(text).not.toContain(TOKEN);
  });

  it('AUTH-44: requires the token from [services.http] and stops on SIGINT', async () => {
    const ws = tmpWorkspace({
      files: { 'svc.toml': `[services.http]\ntoken = "${TOKEN}"\nport = 0\n` },
    });
    const server = spawnServer(['service', 'start', 'http'], { cwd: ws, env: envFor(ws) });
    const url = await server.ready;
    expect((await fetch(`${url}/v1/workflow-tools`)).status).toBe(401);
    expect((await fetch(`${url}/v1/workflow-tools`, { headers: auth() })).status).toBe(200);
    server.child.kill('SIGINT');
    expect(await server.exit).toBe(0);
    expect(server.stdout() + server.stderr()).not.toContain(TOKEN);
  });

  it('takes the token from SVC_HTTP_TOKEN', async () => {
    const ws = tmpWorkspace();
    const server = spawnServer(['service', 'start', 'http', '--port', '0'], {
      cwd: ws,
      env: envFor(ws, { SVC_HTTP_TOKEN: TOKEN }),
    });
    const url = await server.ready;
    expect((await fetch(`${url}/v1/config-status`)).status).toBe(401);
    expect((await fetch(`${url}/v1/config-status`, { headers: auth() })).status).toBe(200);
    server.child.kill('SIGTERM');
    expect(await server.exit).toBe(0);
  });

  it('CLI-18: a SIGTERM sent the moment the listening line is written still shuts down cleanly (exit 0)', async () => {
    const ws = tmpWorkspace();
    const preload = join(import.meta.dirname, '../fixtures/sigterm-on-listening.cjs');
    const server = spawnServer(['service', 'start', 'http', '--port', '0'], {
      cwd: ws,
      env: envFor(ws, { SVC_HTTP_TOKEN: TOKEN, NODE_OPTIONS: `--require ${preload}` }),
    });
    await server.ready;
    expect(await server.exit, server.stderr()).toBe(0);
    expect(server.child.signalCode).toBeNull();
    expect(server.stderr()).toContain('svc: shutting down (SIGTERM)');
    // The shutdown ran: the service's registry row says it stopped, on SIGTERM.
    const app = await createApp({ workspace: ws, env: envFor(ws) });
    try {
      const [daemon] = await app.daemons.list({ includeStopped: true });
      expect(daemon).toMatchObject({ kind: 'http', alive: false });
      expect(JSON.stringify(daemon)).toContain('SIGTERM');
    } finally {
      await app.close();
    }
  });

  it('warns when no token is configured and --auth bearer closes every route', async () => {
    const ws = tmpWorkspace();
    const server = spawnServer(['service', 'start', 'http', '--port', '0'], { cwd: ws, env: envFor(ws) });
    const url = await server.ready;
    const response = await fetch(`${url}/v1/config-status`);
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({
      error: { message: 'authentication required', type: 'unauthorized' },
    });
    expect(server.stderr()).toContain('svc: warning: no token configured and --auth bearer');
    server.child.kill('SIGTERM');
    expect(await server.exit).toBe(0);
  });

  it('GEN-04: svc service start autopilot also starts the HTTP server', async () => {
    const ws = tmpWorkspace();
    const server = spawnServer(['service', 'start', 'autopilot', '--port', '0', '--auth', 'none'], {
      cwd: ws,
      env: envFor(ws),
    });
    const url = await server.ready;
    expect((await fetch(`${url}/v1/models`)).status).toBe(200);
    const status = (await (await fetch(`${url}/v1/autopilot/status`)).json()) as any;
    expect(status.this_process).toMatchObject({ worker_running: true });
    server.child.kill('SIGTERM');
    expect(await server.exit).toBe(0);
  });

  it('refuses a non-loopback host without a token (exit 2) and names a bad --port', async () => {
    const ws = tmpWorkspace();
    const open = await runBin(['service', 'start', 'http', '--host', '0.0.0.0', '--port', '0'], {
      cwd: ws,
      env: envFor(ws),
    });
    expect(open.code).toBe(2);
    expect(open.stdout).toBe('');
    expect(open.stderr).toBe(
      'svc: refusing to listen on 0.0.0.0 without a token: set --token, [services.http].token or SVC_HTTP_TOKEN' +
        ' (unauthenticated access is only allowed on a loopback host such as 127.0.0.1)\n',
    );
    const badPort = await runBin(['service', 'start', 'http', '--port', 'eighty'], {
      cwd: ws,
      env: envFor(ws),
    });
    expect(badPort).toMatchObject({
      code: 2,
      stderr: 'svc: --port: expected an integer 0-65535, got "eighty"\n',
    });
    const badAuth = await runBin(['service', 'start', 'http', '--auth', 'maybe'], {
      cwd: ws,
      env: envFor(ws),
    });
    expect(badAuth.code).toBe(2);
    expect(badAuth.stderr).toContain("argument 'maybe' is invalid");
  });
});
