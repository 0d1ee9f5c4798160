/**
 * What the browser tests share: Debian's Chromium driven by playwright-core (never a downloaded
 * browser), the built `svc service start http` in a temp git workspace with the scripted fake
 * provider, and screenshots in test-results/web/ (printed, so a person can look at them).
 * @module
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, onTestFinished } from 'vitest';
import type { FakeProvider } from '../helpers/fake-provider';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { type SpawnedServer, spawnServer } from '../http/spawn-server';

export const CHROMIUM = '/usr/bin/chromium';
export const SHOTS = resolve(__dirname, '../../test-results/web');
export const TOKEN = 'web-test-token-4d1f9a';

const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

export function requireBuild(): void {
  const index = resolve(__dirname, '../../dist/web/index.html');
  if (!existsSync(index)) throw new Error(`${index} is missing: run npm run build (npm test does)`);
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`);
}

/**
 * Chromium, launched; a launch that hangs (seen once in CI on the loaded 2-core box: the file's
 * whole 30 s hook went by) is given up after 25 s and tried once more. The files' `beforeAll`
 * allow for both (LAUNCH_HOOK_MS).
 */
export async function launchBrowser(): Promise<Browser> {
  requireBuild();
  mkdirSync(SHOTS, { recursive: true });
  const launch = () =>
    chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 25_000 });
  try {
    return await launch();
  } catch (error) {
    console.log(`chromium did not start, trying once more: ${(error as Error).message.split('\n')[0]}`);
    return launch();
  }
}
export const LAUNCH_HOOK_MS = 60_000;

/** One Chromium for a test file: launched before its tests, closed after; call the getter in a test. */
export function browserForFile(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await launchBrowser();
  }, LAUNCH_HOOK_MS);
  afterAll(async () => {
    await browser?.close();
  });
  return () => {
    if (!browser) throw new Error('the browser did not launch (see the beforeAll hook)');
    return browser;
  };
}

/**
 * A fresh context (its own session storage) and page; console errors are collected. A failing test
 * prints what the page did (its requests and their answers or failures, navigations, console lines,
 * with ms since the page opened), its address and text: a step that timed out once in CI says what
 * the page was waiting for (p-flake2: a session page whose history read met the stopped server).
 */
export async function openPage(
  browser: Browser,
  options: { viewport?: { width: number; height: number } } = {},
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 900 } });
  const page = await context.newPage();
  // Generous: the whole suite shares two cores with these servers and browsers.
  page.setDefaultTimeout(30_000);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  const opened = Date.now();
  const trail: string[] = [];
  const note = (line: string) => trail.push(`${Date.now() - opened} ${line}`);
  page.on('request', (r) => note(`request ${r.method()} ${r.url()}`));
  page.on('response', (r) => note(`answer ${r.status()} ${r.url()}`));
  page.on('requestfailed', (r) => note(`failed ${r.url()}: ${r.failure()?.errorText}`));
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) note(`at ${frame.url()}`);
  });
  page.on('console', (message) => note(`console ${message.type()}: ${message.text()}`));
  onTestFinished(async ({ task }) => {
    if (task.result?.state === 'fail') {
      const text = await page
        .locator('body')
        .textContent({ timeout: 2_000 })
        .catch((error: Error) => `(unread: ${error.message.split('\n')[0]})`);
      console.log(
        `the page at the failure: ${page.url()}\n${text}\nwhat it did:\n${trail.slice(-80).join('\n')}`,
      );
    }
    await context.close().catch(() => {});
  });
  return { context, page, errors };
}

export async function shot(page: Page, name: string): Promise<string> {
  const path = join(SHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  console.log(`screenshot: ${path}`);
  return path;
}

export interface Service {
  url: string;
  port: number;
  workspace: string;
  server: SpawnedServer;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<void>;
  /** Start again on the same port (optionally with another token). */
  restart(token?: string): Promise<void>;
}

/**
 * `svc service start http` (the built binary) in a git workspace wired to the fake provider;
 * `toml` is appended to its svc.toml.
 */
export async function startService(provider: FakeProvider, token = TOKEN, toml = ''): Promise<Service> {
  const workspace = tmpWorkspace({
    git: true,
    files: {
      'svc.toml': `[providers.fake]\ntype = "openai-compat"\nbase_url = "${provider.url}"\n[models]\nlarge = "fake/m1"\n${toml}`,
      '.gitignore': '.svc/\n.home/\n',
      'README.md': '# demo\n',
    },
  });
  const env = {
    HOME: join(workspace, '.home'),
    XDG_CONFIG_HOME: join(workspace, '.home', '.config'),
    XDG_DATA_HOME: join(workspace, '.home', '.local', 'share'),
  };
  const launch = (port: number, t: string) =>
    spawnServer(['service', 'start', 'http', '--port', String(port), '--token', t], {
      cwd: workspace,
      env,
      timeoutMs: 120_000,
    });
  let server = launch(0, token);
  const url = await server.ready;
  const port = Number(new URL(url).port);
  const service: Service = {
    url,
    port,
    workspace,
    server,
    async stop() {
      if (server.child.exitCode === null) server.child.kill('SIGTERM');
      await server.exit;
    },
    async restart(newToken = token) {
      await service.stop();
      server = launch(port, newToken);
      service.server = server;
      await server.ready;
    },
  };
  onTestFinished(() => service.stop());
  return service;
}

/** Signs in through the form (the token field is labelled). */
export async function signIn(page: Page, token = TOKEN): Promise<void> {
  await page.getByLabel('Access token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/**
 * Signs in with the token in the URL and opens the session's page; with `live`, waits (up to
 * `live` ms) until its event stream is live.
 */
export async function openSession(
  page: Page,
  service: Service,
  sessionId: string,
  live?: number,
): Promise<void> {
  await page.goto(`${service.url}/#token=${TOKEN}`);
  await page.getByRole('heading', { name: 'Sessions' }).waitFor();
  await page.goto(`${service.url}/#/s/${sessionId}`);
  if (live !== undefined) await page.getByText('live', { exact: true }).waitFor({ timeout: live });
}

/**
 * A raw client's event stream of the session (attach=0: not an attached client), read until the
 * server lets it in (`connected`; then kept read, so it never falls behind, until `close`) or
 * refuses it (`dropped`, when it has `sse_max_streams_per_session` open; `in` false, closed).
 */
export async function rawStream(
  service: Service,
  sessionId: string,
): Promise<{ in: boolean; lastEventId: number; close(): void }> {
  const controller = new AbortController();
  const close = () => controller.abort();
  const response = await fetch(`${service.url}/v1/sessions/${sessionId}/events?attach=0`, {
    headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream' },
    signal: controller.signal,
  });
  if (!response.ok || !response.body) throw new Error(`events: ${response.status}`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const connected = /event: connected\n(?:.*\n)*?data: (.*)\n/.exec(text);
    if (connected) {
      void (async () => {
        for (;;) if ((await reader.read()).done) return;
      })().catch(() => {});
      return { in: true, lastEventId: Number(JSON.parse(connected[1] ?? '{}').last_event_id), close };
    }
    if (/event: dropped\n/.test(text)) {
      close();
      return { in: false, lastEventId: -1, close };
    }
    const { done, value } = await reader.read();
    if (done) throw new Error(`the stream ended with neither connected nor dropped: ${text}`);
    text += decoder.decode(value, { stream: true });
  }
}

/** Whether `url` is the event stream of `sessionId` (a page's requests, watched). */
export const isEventsUrl = (url: string, sessionId: string) =>
  new URL(url).pathname === `/v1/sessions/${sessionId}/events`;

/**
 * The event stream connections the page opens for `sessionId`, from now on: the `Last-Event-ID`
 * each sent ('' for none; a WebSocket's `last_event_id` parameter, a fetched stream's header) and
 * how each went (`socket` or `fetch`).
 */
export function watchStreams(page: Page, sessionId: string): { lastEventIds: string[]; over: string[] } {
  const watched = { lastEventIds: [] as string[], over: [] as string[] };
  page.on('websocket', (socket) => {
    if (!isEventsUrl(socket.url(), sessionId)) return;
    watched.lastEventIds.push(new URL(socket.url()).searchParams.get('last_event_id') ?? '');
    watched.over.push('socket');
  });
  page.on('request', (request) => {
    if (!isEventsUrl(request.url(), sessionId)) return;
    watched.lastEventIds.push(request.headers()['last-event-id'] ?? '');
    watched.over.push('fetch');
  });
  return watched;
}

/**
 * From the sessions page: a new session (titled when `title` is given), live, and `prompt` sent
 * with Enter.
 */
export async function promptNewSession(page: Page, prompt: string, title?: string): Promise<void> {
  if (title !== undefined) await page.getByPlaceholder('Title (optional)').fill(title);
  await page.getByRole('button', { name: 'New session' }).click();
  if (title !== undefined) await page.getByRole('heading', { name: title }).waitFor();
  await page.getByText('live', { exact: true }).waitFor();
  await page.getByLabel('Prompt').fill(prompt);
  await page.getByLabel('Prompt').press('Enter');
}

/**
 * A reverse proxy that serves the service under `/svc/` (strips the prefix, streams the answer),
 * as nginx or Caddy would in front of it; like one not set up to pass WebSocket upgrades on, it
 * answers them 502.
 */
export async function prefixProxy(target: string, prefix = '/svc'): Promise<string> {
  const { createServer, request } = await import('node:http');
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    if (!path.startsWith(`${prefix}/`)) {
      res.writeHead(path === prefix ? 301 : 404, path === prefix ? { location: `${prefix}/` } : {});
      res.end();
      return;
    }
    const forward = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: path.slice(prefix.length),
        headers: { ...req.headers, host: upstream.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(forward);
  });
  server.on('upgrade', (_req, socket) => {
    socket.on('error', () => {});
    socket.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const address = server.address() as { port: number };
  return `http://127.0.0.1:${address.port}${prefix}/`;
}

/** Waits until the session has no active run (polling the API). */
export async function waitIdle(service: Service, sessionId: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const response = await fetch(`${service.url}/v1/sessions/${sessionId}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const body = (await response.json()) as {
      session: { state: string };
      last_run: { status: string } | null;
    };
    if (body.session.state === 'idle' && body.last_run && body.last_run.status !== 'running') return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`session ${sessionId} did not go idle in ${timeoutMs} ms`);
}

export async function api<T = any>(
  service: Service,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const response = await fetch(`${service.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}
