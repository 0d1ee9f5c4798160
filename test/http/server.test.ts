/**
 * The server lifecycle (startHttpServer), in process on 127.0.0.1:0. Pins:
 * - it listens before the App exists: protected routes answer 503 `App not ready`, /healthz
 *   ready=false, until the App is built; then the runtime says http, server, ready;
 * - host/port/auth settings: non-loopback without a token is refused; flag conflicts are named;
 * - a port in use is a clear error;
 * - shutdown with an open SSE stream: the stream gets `shutdown` and ends, new requests are
 *   refused, the worker is stopped, the App's teardown hooks run (where the agent marks runs
 *   interrupted) and the database is closed.
 */
import { describe, expect, it } from 'vitest';
import { SvcError } from '../../src/errors';
import { isLoopbackHost, resolveHttpSettings, startHttpServer } from '../../src/surfaces/http/server';
import { makeTestApp } from '../helpers/make-test-app';
import { sseReader } from './sse-reader';

const TOKEN = 'server-test-token-42';
const auth = { authorization: `Bearer ${TOKEN}` };

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('startHttpServer', () => {
  it('DASH-59 style: listens first and answers 503 App not ready until the App is built', async () => {
    const app = await makeTestApp({ ready: false, config: { services: { http: { token: TOKEN } } } });
    const gate = deferred<void>();
    const built = deferred<void>();
    const listening = deferred<string>();
    const starting = startHttpServer({
      config: app.config,
      flags: { port: 0 },
      onListening: listening.resolve,
      createApp: async () => {
        built.resolve();
        await gate.promise;
        return app;
      },
    });
    await built.promise;
    const address = await listening.promise;
    const notReady = await fetch(`${address}/v1/config-status`, { headers: auth });
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({ error: { message: 'App not ready', type: 'unavailable' } });
    expect((await fetch(`${address}/v1/config-status`)).status).toBe(401);
    expect(await (await fetch(`${address}/healthz`)).json()).toMatchObject({ ok: true, ready: false });
    gate.resolve();
    const server = await starting;
    try {
      expect(server.url).toBe(address);
      expect((await fetch(`${server.url}/v1/config-status`, { headers: auth })).status).toBe(200);
      expect(app.runtime).toMatchObject({ ready: true, server: true, stopping: false, httpUrl: server.url });
      expect(app.runtime.surfaces.has('http')).toBe(true);
    } finally {
      await server.close();
    }
  });

  it('refuses a non-loopback host without a token, with a message naming the fix', async () => {
    const app = await makeTestApp();
    const attempt = startHttpServer({
      config: app.config,
      flags: { host: '0.0.0.0', port: 0 },
      createApp: async () => app,
    });
    await expect(attempt).rejects.toSatisfy(
      (error: unknown) =>
        SvcError.is(error) &&
        error.code === 'config_error' &&
        error.exitCode === 2 &&
        error.message.startsWith('refusing to listen on 0.0.0.0 without a token: set --token'),
    );
    expect(() => resolveHttpSettings(app.config, { host: '0.0.0.0', auth: 'none' })).toThrow(
      /without a token/,
    );
    expect(resolveHttpSettings(app.config, { host: '0.0.0.0', token: TOKEN })).toMatchObject({
      host: '0.0.0.0',
      tokenSource: 'flag',
      loopback: false,
    });
  });

  it('resolves host, port and token source from flags over config', async () => {
    const app = await makeTestApp({
      config: { services: { http: { host: '127.0.0.2', port: 8123, token: TOKEN } } },
    });
    expect(resolveHttpSettings(app.config)).toEqual({
      host: '127.0.0.2',
      port: 8123,
      tokenSource: 'config',
      loopback: true,
    });
    expect(resolveHttpSettings(app.config, { host: '::1', port: 0 })).toMatchObject({ host: '::1', port: 0 });
    expect(() => resolveHttpSettings(app.config, { token: 'x-token-123', auth: 'none' })).toThrow(
      '--auth none conflicts with --token',
    );
    expect(() => resolveHttpSettings(app.config, { port: 70000 })).toThrow(
      '--port: expected an integer 0-65535',
    );
    const defaults = await makeTestApp();
    expect(resolveHttpSettings(defaults.config)).toEqual({
      host: '127.0.0.1',
      port: 7420,
      tokenSource: 'none',
      loopback: true,
    });
  });

  it('knows loopback hosts', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
    for (const host of ['0.0.0.0', '::', '192.168.1.4', 'example.com', '128.0.0.1']) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });

  it('reports a port in use clearly', async () => {
    const first = await makeTestApp();
    const server = await startHttpServer({
      config: first.config,
      flags: { port: 0, auth: 'none' },
      createApp: async () => first,
    });
    try {
      const second = await makeTestApp();
      let created = false;
      await expect(
        startHttpServer({
          config: second.config,
          flags: { port: server.port },
          createApp: async () => {
            created = true;
            return second;
          },
        }),
      ).rejects.toThrow(`cannot listen on 127.0.0.1:${server.port}: address already in use`);
      expect(created).toBe(false);
    } finally {
      await server.close();
    }
  });

  it('shuts down gracefully with an open SSE stream: stream ends, hooks run, db closed', async () => {
    const app = await makeTestApp({ config: { services: { http: { token: TOKEN } } } });
    const order: string[] = [];
    // What the agent layer registers: mark active runs interrupted while the db is still open.
    app.onClose(() => {
      order.push(`teardown db_open=${app.hasDb()} stopping=${app.runtime.stopping}`);
    });
    const workerStopped = deferred<void>();
    const server = await startHttpServer({
      config: app.config,
      flags: { port: 0 },
      createApp: async () => app,
      http: { sseHeartbeatMs: 0 },
      worker: () => ({
        name: 'test-worker',
        run: (signal) =>
          new Promise<void>((resolve) => {
            order.push('worker started');
            signal.addEventListener('abort', () => {
              order.push('worker stopped');
              workerStopped.resolve();
              resolve();
            });
          }),
      }),
    });
    const session = await app.sessions.create();
    const response = await fetch(`${server.url}/v1/sessions/${session.id}/events`, { headers: auth });
    expect(response.status).toBe(200);
    const reader = sseReader(response);
    await reader.take(2);
    expect(server.streams.size).toBe(1);

    const closing = server.close('test');
    const shutdown = await reader.next();
    expect(shutdown.event).toBe('shutdown');
    expect(await reader.ended()).toBe(true);
    await closing;
    await workerStopped.promise;
    expect(order).toEqual(['worker started', 'worker stopped', 'teardown db_open=true stopping=true']);
    expect(app.hasDb()).toBe(false);
    expect(app.runtime.ready).toBe(false);
    expect(server.streams.size).toBe(0);
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
    // close() is idempotent.
    await server.close('again');
    expect(app.memoryLog.records.find((r) => r.message === 'http server stopped')).toMatchObject({
      reason: 'test',
      db_closed: true,
    });
  });

  it('never logs the token', async () => {
    const app = await makeTestApp();
    const server = await startHttpServer({
      config: app.config,
      flags: { port: 0, token: 'flag-secret-token-987' },
      createApp: async () => app,
    });
    await server.close();
    const logged = JSON.stringify(app.memoryLog.records);
    expect(logged).toContain('http server listening');
    expect(logged).not.toContain('flag-secret-token-987');
    expect(app.redactor.string('Authorization flag-secret-token-987')).toBe('Authorization [REDACTED]');
  });
});
