/**
 * The web UI's files on the HTTP app (src/surfaces/http/web-ui.ts). Pins:
 * - `/` and `/assets/*` answer without a token; `/v1/*` still needs one;
 * - index.html is no-cache with an etag (304 on a match); hashed assets are immutable;
 * - every answer has the strict CSP and nosniff; gzip when accepted;
 * - a name that is not a plain file name is 404; an unbuilt UI answers 503 saying how to build it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../../src/surfaces/http/index';
import { WEB_CSP } from '../../src/surfaces/http/web-ui';
import { makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const TOKEN = 'web-ui-secret-1234';
const INDEX = '<!doctype html><title>svc</title><script type="module" src="./assets/index-abc.js"></script>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(2000))});`;

async function setup(files = true) {
  const root = tmpWorkspace();
  if (files) {
    mkdirSync(join(root, 'assets'));
    writeFileSync(join(root, 'index.html'), INDEX);
    writeFileSync(join(root, 'assets', 'index-abc.js'), SCRIPT);
    writeFileSync(join(root, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  }
  const app = await makeTestApp();
  app.runtime.ready = true;
  return createHttpApp(app, { token: TOKEN, webRoot: root });
}

describe('web UI files', () => {
  it('serves index.html without a token, no-cache with an etag, under the CSP', async () => {
    const hono = await setup();
    const response = await hono.request('/');
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(INDEX);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('content-security-policy')).toBe(WEB_CSP);
    expect(WEB_CSP).toContain("script-src 'self'");
    expect(WEB_CSP).toContain("connect-src 'self'");
    expect(WEB_CSP).not.toContain('unsafe-inline');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    const etag = response.headers.get('etag')!;
    expect((await hono.request('/', { headers: { 'if-none-match': etag } })).status).toBe(304);
    expect((await hono.request('/index.html')).status).toBe(200);
  });

  it('serves hashed assets as immutable, gzipped when accepted', async () => {
    const hono = await setup();
    const plain = await hono.request('/assets/index-abc.js');
    expect(plain.status).toBe(200);
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(plain.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await plain.text()).toBe(SCRIPT);
    const gzipped = await hono.request('/assets/index-abc.js', {
      headers: { 'accept-encoding': 'gzip, br' },
    });
    expect(gzipped.headers.get('content-encoding')).toBe('gzip');
    expect(gunzipSync(Buffer.from(await gzipped.arrayBuffer())).toString()).toBe(SCRIPT);
    expect((await hono.request('/favicon.svg')).headers.get('content-type')).toBe('image/svg+xml');
  });

  it('HTTP-PROBE-3: keeps /v1 behind the token and refuses names that are not plain files with the JSON 404', async () => {
    const hono = await setup();
    expect((await hono.request('/v1/sessions')).status).toBe(401);
    expect(
      (await hono.request('/v1/sessions', { headers: { authorization: `Bearer ${TOKEN}` } })).status,
    ).toBe(200);
    for (const path of [
      '/assets/..%2Findex.html',
      '/assets/.hidden.js',
      '/assets/missing-1.js',
      '/assets/x.exe',
    ]) {
      const response = await hono.request(path);
      expect(response.status, path).toBe(404);
      // The usual JSON error body, as every other route's (it was plain text; found by probing).
      expect(await response.json(), path).toEqual({
        error: { type: 'not_found', message: expect.stringMatching(/^no web UI file ".+": reload the page/) },
      });
    }
  });

  it('answers 503 with how to build it when the UI is not built', async () => {
    const hono = await setup(false);
    const response = await hono.request('/');
    expect(response.status).toBe(503);
    expect(await response.text()).toContain('npm run build');
  });
});
