/**
 * The browser UI's files (built by Vite into dist/web, sources in src/surfaces/web): served at
 * `/` without the bearer token, because the page itself carries no data — every API call it
 * makes sends the token. Hashed assets are immutable; index.html is revalidated on every load.
 * Every answer carries a strict Content-Security-Policy: scripts, styles and connections only
 * from this origin, no inline script, no framing.
 * @module
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Context, Hono } from 'hono';

export const WEB_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': WEB_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  woff2: 'font/woff2',
  json: 'application/json',
  webmanifest: 'application/manifest+json',
};
const COMPRESSIBLE = new Set(['html', 'js', 'css', 'svg', 'json', 'webmanifest']);
const ASSET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*\.([a-z0-9]+)$/;

export interface WebUiOptions {
  /** Directory of the built UI (with index.html); default dist/web next to the running code. */
  root?: string;
  /** Asked first by every file route: a refusal it returns is the answer (the Host check with no token). */
  refuse?: (c: Context) => Response | undefined;
}

interface CachedFile {
  body: Uint8Array;
  gzip?: Uint8Array;
  etag: string;
  type: string;
}

export function mountWebUi(hono: Hono, options: WebUiOptions = {}): void {
  const root = options.root ?? defaultWebRoot();
  const assets = new Map<string, CachedFile>();
  const refuse = options.refuse;
  const guard =
    (handler: (c: Context) => Response) =>
    (c: Context): Response =>
      refuse?.(c) ?? handler(c);

  const index = (c: Context) => {
    const file = root ? readCached(join(root, 'index.html'), 'html') : undefined;
    if (!file) {
      return new Response(notBuiltPage(root), {
        status: 503,
        headers: { ...SECURITY_HEADERS, 'content-type': TYPES.html, 'cache-control': 'no-store' },
      });
    }
    return send(c, file, 'no-cache');
  };
  hono.get('/', guard(index));
  hono.get('/index.html', guard(index));

  const asset = (dir: string, cache: string, fixed?: string) => (c: Context) => {
    const name = fixed ?? c.req.param('file') ?? '';
    const match = ASSET_NAME.exec(name);
    const type = match ? TYPES[match[1]] : undefined;
    if (!root || !match || !type) return notFound(name);
    const key = `${dir}/${name}`;
    let file = assets.get(key);
    if (!file) {
      file = readCached(join(root, dir, name), match[1]);
      if (!file) return notFound(name);
      // Hashed names never change content: keep them; the rest is small and re-read on restart.
      assets.set(key, file);
    }
    return send(c, file, cache);
  };
  hono.get('/assets/:file', guard(asset('assets', 'public, max-age=31536000, immutable')));
  // A literal path, not `/:file{favicon\\.svg}`: a regexp parameter beside literal routes makes
  // Hono's SmartRouter give up its RegExpRouter for the slower TrieRouter on every request.
  hono.get('/favicon.svg', guard(asset('.', 'public, max-age=3600', 'favicon.svg')));
}

/** dist/web beside the bundle (dist/*.js), or the repository's dist/web when run from sources. */
export function defaultWebRoot(): string | undefined {
  const here = fileURLToPath(new URL('.', import.meta.url));
  for (const candidate of [resolve(here, 'web'), resolve(here, '../../../dist/web')]) {
    if (existsSync(join(candidate, 'index.html'))) return candidate;
  }
  return undefined;
}

function readCached(path: string, extension: string): CachedFile | undefined {
  let body: Buffer;
  try {
    body = readFileSync(path);
  } catch {
    return undefined;
  }
  const compress = COMPRESSIBLE.has(extension) && body.length > 512;
  return {
    body,
    gzip: compress ? gzipSync(body, { level: 9 }) : undefined,
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
    type: TYPES[extension] ?? 'application/octet-stream',
  };
}

function send(c: Context, file: CachedFile, cacheControl: string): Response {
  const headers: Record<string, string> = {
    ...SECURITY_HEADERS,
    'content-type': file.type,
    'cache-control': cacheControl,
    etag: file.etag,
    vary: 'accept-encoding',
  };
  const match = c.req.header('if-none-match');
  if (match?.split(/\s*,\s*/).includes(file.etag)) return new Response(null, { status: 304, headers });
  const gzip = file.gzip && /\bgzip\b/.test(c.req.header('accept-encoding') ?? '');
  const body = gzip ? file.gzip! : file.body;
  if (gzip) headers['content-encoding'] = 'gzip';
  headers['content-length'] = String(body.length);
  return new Response(c.req.method === 'HEAD' ? null : (body as Uint8Array<ArrayBuffer>), { headers });
}

/** The usual JSON error body (docs/http.md), saying what to do: a page older than the server asks for assets it no longer has. */
function notFound(name: string): Response {
  const message = `no web UI file ${JSON.stringify(name)}: reload the page (the web UI may have been updated since it was loaded)`;
  return new Response(JSON.stringify({ error: { message, type: 'not_found' } }), {
    status: 404,
    headers: {
      ...SECURITY_HEADERS,
      'content-type': 'application/json',
      'cache-control': 'no-store',
    },
  });
}

function notBuiltPage(root: string | undefined): string {
  const where = root ? ` (looked in ${escapeHtml(root)})` : '';
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>svc: web UI not built</title></head>' +
    `<body><h1>The svc web UI is not built</h1><p>This svc has no built web UI${where}. ` +
    'Build it with <code>npm run build</code> in the svc checkout (npm install does it too), then reload. ' +
    'The HTTP API under <code>/v1</code> works without it.</p></body></html>'
  );
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
