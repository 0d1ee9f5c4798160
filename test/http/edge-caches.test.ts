/**
 * What the HTTP edge computes once instead of per request (issue 17 item 3) must still see every
 * change the next request should see:
 * - the service token's hash is kept per token value: a rotated token refuses the old bearer;
 * - the credential file is parsed again whenever it changed (in place or replaced), not per read;
 * - the body limit decides from the declared length without building a Web Request, and still
 *   counts a chunked body;
 * - the redactor's shortcut for strings without a secret's shape still scrubs every shape.
 */

import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { createAdaptorServer } from '@hono/node-server';
import { afterEach, describe, expect, it } from 'vitest';
import { createCredentialStore, credentialFilePath } from '../../src/providers/credential-store';
import { createRedactor } from '../../src/redact';
import { createHttpApp } from '../../src/surfaces/http/index';
import { utcDay } from '../../src/telemetry/cost-ledger';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

async function serve(hono: ReturnType<typeof createHttpApp>): Promise<string> {
  const server = createAdaptorServer({ fetch: hono.fetch }) as Server;
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A POST whose body is sent chunked (no content-length). */
function postChunked(url: string, chunks: string[]): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        let body = '';
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

describe('HTTP edge: what is computed once still follows changes', () => {
  it('ENGINE-EDGE-1: a rotated service token refuses the old bearer on the next request', async () => {
    const app = await makeTestApp();
    let token = 'first-token-0000000000';
    const hono = createHttpApp(app, { token: () => token });
    const get = (bearer: string) =>
      hono.request('/v1/config-status', { headers: { authorization: `Bearer ${bearer}` } });
    expect((await get('first-token-0000000000')).status).toBe(200);
    expect((await get('second-token-000000000')).status).toBe(401);
    token = 'second-token-000000000';
    const old = await get('first-token-0000000000');
    expect(old.status).toBe(401);
    expect(((await old.json()) as any).error.message).toBe('authentication required: invalid bearer token');
    expect((await get('second-token-000000000')).status).toBe(200);
  });

  it('ENGINE-EDGE-2: an edited or replaced credentials file is seen by the next read', () => {
    const env = isolatedEnv(tmpWorkspace());
    const path = credentialFilePath(env);
    const store = createCredentialStore({ env, backend: 'file' });
    expect(store.get('lab')).toBeUndefined();
    const write = (value: string) => {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(
        path,
        JSON.stringify({ version: 1, credentials: { lab: { kind: 'api_key', value, stored_by: 'test' } } }),
      );
    };
    write('lab-key-aaaaaaaaaaaa');
    expect(store.get('lab')?.value).toBe('lab-key-aaaaaaaaaaaa');
    // Edited in place by a user, same size: still seen.
    write('lab-key-bbbbbbbbbbbb');
    expect(store.get('lab')?.value).toBe('lab-key-bbbbbbbbbbbb');
    // Replaced by another process (svc auth writes a temp file and renames it).
    const other = createCredentialStore({ env, backend: 'file' });
    other.set('lab', { kind: 'api_key', value: 'lab-key-cccccccccccc', stored_by: 'other' } as any);
    expect(store.get('lab')?.value).toBe('lab-key-cccccccccccc');
    // This store's own writes, and a read's result changed by its caller, leave the file's view intact.
    store.set('hub', { kind: 'api_key', value: 'hub-key-dddddddddddd', stored_by: 'test' } as any);
    expect(store.list()).toEqual(['hub', 'lab']);
    expect(JSON.parse(readFileSync(path, 'utf8')).credentials.lab.value).toBe('lab-key-cccccccccccc');
    rmSync(path);
    expect(store.get('lab')).toBeUndefined();
    expect(store.list()).toEqual([]);
  });

  it('ENGINE-EDGE-3: over the Node adapter a declared or a chunked body over the limit is 413, a small one is read', async () => {
    const app = await makeTestApp();
    const url = await serve(createHttpApp(app, { allowNoAuth: true, maxBodyBytes: 1024 }));
    const declared = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'y'.repeat(2000) }] }),
    });
    expect(declared.status).toBe(413);
    expect(await declared.json()).toEqual({ error: 'request body over the 1024-byte limit', code: 413 });
    const chunked = await postChunked(`${url}/v1/chat/completions`, [
      '{"model":"x",',
      `"pad":"${'z'.repeat(2000)}"}`,
    ]);
    expect(chunked.status).toBe(413);
    expect(JSON.parse(chunked.body)).toEqual({ error: 'request body over the 1024-byte limit', code: 413 });
    // Under the limit the body reaches the handler (which names what is wrong with it).
    const small = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'x' }),
    });
    expect(small.status).toBe(400);
    const smallChunked = await postChunked(`${url}/v1/chat/completions`, ['{"model":', '"x"}']);
    expect(smallChunked.status).toBe(400);
    expect(smallChunked.body).toBe(
      await (
        await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'x' }),
        })
      ).text(),
    );
  });

  it('ENGINE-EDGE-4: every secret shape is still scrubbed, and text without one is returned as is', () => {
    const redactor = createRedactor();
    const shapes = [
      'sk-abcdefghijklmnop1234',
      'sk-ant-abcdefghijklmnop1234',
      'ghp_abcdefghijklmnopqrstu1234',
      'AKIAABCDEFGHIJKLMNOP',
      'xoxb-1234567890-abc',
      'hf_abcdefghijklmnopqrstu1234',
    ];
    for (const shape of shapes) expect(redactor.string(`key ${shape} end`), shape).toBe('key [REDACTED] end');
    expect(redactor.string('auth: bearer\tabcdefghijklmnop')).toBe('auth: bearer\t[REDACTED]');
    const plain = 'run finished: 3 steps, sk_ok, gh_ok, Bearer';
    expect(redactor.string(plain)).toBe(plain);
    redactor.add('plain-secret-value');
    expect(redactor.string('x plain-secret-value y')).toBe('x [REDACTED] y');
  });

  it('ENGINE-EDGE-5: the UTC day of a model call turns at midnight, whatever day was asked before', () => {
    const midnight = Date.UTC(2026, 10, 30);
    expect(utcDay(midnight - 1)).toBe('2026-11-29');
    expect(utcDay(midnight)).toBe('2026-11-30');
    expect(utcDay(midnight - 1)).toBe('2026-11-29');
    expect(utcDay(midnight + 86_400_000 - 1)).toBe('2026-11-30');
    expect(utcDay(midnight + 86_400_000)).toBe('2026-12-01');
    expect(utcDay(-1)).toBe('1969-12-31');
    expect(utcDay(0)).toBe('1970-01-01');
  });
});
