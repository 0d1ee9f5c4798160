/**
 * Local models (issue 16 items 2 and 3). Pins:
 * - the context window is learned from the server (Ollama /api/show num_ctx, then model_info
 *   *.context_length; LM Studio /api/v0/models; llama.cpp /props n_ctx; vLLM max_model_len in
 *   /v1/models), cached per provider and model in <data dir>/cache/context-windows.json (a second
 *   turn asks nothing) and in the user cache dir (a new workspace asks nothing), a window set in config wins with no probe, the catalog is the fallback,
 *   and a server that hangs does not fail the turn;
 * - the learned window is what the run uses: a large one sends every tool, an unknown one defers
 *   to the essential tools with the rest listed by name;
 * - a configured provider with no model: the only served model is used, several are named in the
 *   error with the [models] line to add (the real binary, against a server on 127.0.0.1).
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { clearWindowCache, windowCachePath } from '../../src/providers/context-window';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

type Route = (req: IncomingMessage, body: string) => { status?: number; json: unknown } | 'hang' | undefined;

/** A loopback server answering the probe endpoints; chat completions go to `chat` (the fake provider). */
async function modelServer(routes: Record<string, Route>, chat?: string) {
  const hits: string[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const key = `${req.method} ${req.url}`;
    hits.push(key);
    if (chat && req.url?.includes('/chat/completions')) {
      const upstream = await fetch(`${chat}${req.url}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      res.writeHead(upstream.status, {
        'content-type': upstream.headers.get('content-type') ?? 'text/plain',
      });
      res.end(Buffer.from(await upstream.arrayBuffer()));
      return;
    }
    const answer = routes[key]?.(req, body);
    if (answer === 'hang') return; // never answers; closed with the server
    res.writeHead(answer?.status ?? (answer ? 200 : 404), { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer?.json ?? { error: 'no route' }));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  onTestFinished(
    () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  );
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url: `${origin}/v1`, origin, hits };
}

async function appFor(baseUrl: string, extra: Record<string, unknown> = {}, workspace = tmpWorkspace()) {
  return makeTestApp({
    workspace,
    // Its own cache dir: the windows learned there are shared by every data dir, and these
    // servers (same provider and model, ephemeral ports) answer differently.
    env: isolatedEnv(workspace, { XDG_CACHE_HOME: join(workspace, '.home', '.cache') }),
    config: {
      providers: { local: { type: 'openai-compat', base_url: baseUrl } },
      models: { large: 'local/m1' },
      ...extra,
    },
  });
}

const ollamaShow =
  (parameters: string | undefined): Route =>
  (_req, body) => {
    expect(JSON.parse(body)).toMatchObject({ model: 'm1' });
    return {
      json: { parameters, model_info: { 'general.architecture': 'qwen2', 'qwen2.context_length': 32768 } },
    };
  };

describe('context window learned from the server', () => {
  it('Ollama: num_ctx from /api/show wins, is cached per provider and model, and a second turn asks nothing', async () => {
    const server = await modelServer({ 'POST /api/show': ollamaShow('stop "<|im_end|>"\nnum_ctx 8192') });
    const workspace = tmpWorkspace();
    const app = await appFor(server.url, {}, workspace);
    const first = await app.models.resolve();
    expect(first.info.context_window).toBe(8192);
    expect(first.window_source).toBe('ollama /api/show num_ctx');
    expect(server.hits.filter((h) => h === 'POST /api/show')).toHaveLength(1);
    const cache = JSON.parse(readFileSync(windowCachePath(app.providers.deps.dataDir), 'utf8'));
    expect(Object.values(cache)).toEqual([expect.objectContaining({ context_window: 8192 })]);
    expect(Object.keys(cache)[0]).toContain('local');
    expect(Object.keys(cache)[0]).toContain('m1');
    const again = await (await appFor(server.url, {}, workspace)).models.resolve();
    expect(again.info.context_window).toBe(8192);
    expect(server.hits.filter((h) => h === 'POST /api/show')).toHaveLength(1);
  });

  it('a new data dir of the same user asks nothing: the user cache dir keeps it too', async () => {
    const server = await modelServer({ 'POST /api/show': ollamaShow('num_ctx 4096') });
    const first = tmpWorkspace();
    const cacheHome = join(first, '.home', '.cache');
    const appIn = (workspace: string) =>
      makeTestApp({
        workspace,
        env: isolatedEnv(workspace, { XDG_CACHE_HOME: cacheHome }),
        config: {
          providers: { local: { type: 'openai-compat', base_url: server.url } },
          models: { large: 'local/m1' },
        },
      });
    expect((await (await appIn(first)).models.resolve()).info.context_window).toBe(4096);
    const other = await appIn(tmpWorkspace());
    const again = await other.models.resolve();
    expect(again.info.context_window).toBe(4096);
    expect(again.window_source).toBe('ollama /api/show num_ctx');
    expect(server.hits.filter((h) => h === 'POST /api/show')).toHaveLength(1);
    // update-providers clears both caches: the next turn asks again
    clearWindowCache(other.providers.deps.dataDir, other.providers.deps.env);
    await (await appIn(tmpWorkspace())).models.resolve();
    expect(server.hits.filter((h) => h === 'POST /api/show')).toHaveLength(2);
  });

  it('Ollama without num_ctx: the model_info context_length', async () => {
    const server = await modelServer({ 'POST /api/show': ollamaShow(undefined) });
    const resolved = await (await appFor(server.url)).models.resolve();
    expect(resolved.info.context_window).toBe(32768);
    expect(resolved.window_source).toBe('ollama /api/show qwen2.context_length');
  });

  it('LM Studio, llama.cpp and vLLM tell it their own way', async () => {
    const cases: [Record<string, Route>, number, string][] = [
      [
        {
          'GET /api/v0/models': () => ({
            json: {
              data: [
                { id: 'other', max_context_length: 4096 },
                { id: 'm1', max_context_length: 65536 },
              ],
            },
          }),
        },
        65536,
        'lmstudio max_context_length',
      ],
      [
        { 'GET /props': () => ({ json: { default_generation_settings: { n_ctx: 16384 } } }) },
        16384,
        'llama.cpp /props n_ctx',
      ],
      [
        {
          'GET /v1/models': () => ({ json: { data: [{ id: 'm1', object: 'model', max_model_len: 40960 }] } }),
        },
        40960,
        '/v1/models max_model_len',
      ],
    ];
    for (const [routes, window, source] of cases) {
      const resolved = await (await appFor((await modelServer(routes)).url)).models.resolve();
      expect({ window: resolved.info.context_window, source: resolved.window_source }).toEqual({
        window,
        source,
      });
    }
  });

  it('a window set in config wins and nothing is asked; the catalog is the fallback; a hanging server does not fail the turn', async () => {
    const server = await modelServer({ 'POST /api/show': ollamaShow('num_ctx 8192') });
    const configured = await makeTestApp({
      config: {
        providers: {
          local: {
            type: 'openai-compat',
            base_url: server.url,
            models: [{ id: 'm1', context_window: 12000 }],
          },
        },
        models: { large: 'local/m1' },
      },
    });
    expect((await configured.models.resolve()).info.context_window).toBe(12000);
    expect(server.hits).toEqual([]);

    const silent = await modelServer({});
    const catalog = await makeTestApp({
      config: {
        providers: { ollama: { base_url: silent.url } },
        models: { large: 'ollama/qwen2.5-coder:7b' },
      },
    });
    const fromCatalog = await catalog.models.resolve();
    expect(fromCatalog.info.context_window).toBe(32768);
    expect(fromCatalog.window_source).toBe('catalog');
    expect(silent.hits).toContain('POST /api/show');

    const hanging = await modelServer({ 'POST /api/show': () => 'hang', 'GET /props': () => 'hang' });
    const slow = await appFor(hanging.url, { options: { local_probe: { window_timeout_ms: 200 } } });
    const resolved = await slow.models.resolve();
    expect(resolved.info.context_window).toBeUndefined();
    expect(resolved.window_source).toBe('unknown');
    // The unknown answer is cached too: the next turn does not wait again.
    const hitsBefore = hanging.hits.length;
    await slow.models.resolve();
    expect(hanging.hits.length).toBe(hitsBefore);
  });

  it('the run uses it: a learned large window sends every tool, an unknown one only the essential tools', async () => {
    const names = (body: any) => (body.tools as { function: { name: string } }[]).map((t) => t.function.name);
    const fake = await fakeProvider([reply().text('one'), reply().text('two')]);
    const large = await modelServer(
      { 'GET /v1/models': () => ({ json: { data: [{ id: 'm1', max_model_len: 2_000_000 }] } }) },
      fake.origin,
    );
    await (await appFor(large.url)).agent.run({ prompt: 'go' });
    expect(names(fake.requests[0].body).length).toBeGreaterThan(80);

    const unknown = await modelServer({}, fake.origin);
    await (await appFor(unknown.url)).agent.run({ prompt: 'go' });
    const sent = names(fake.requests[1].body);
    expect(sent).toEqual(expect.arrayContaining(['view', 'write', 'edit', 'bash', 'grep']));
    expect(sent.length).toBeLessThan(15);
    const system = (fake.requests[1].body.messages as { role: string; content: string }[])[0].content;
    expect(system).toContain('# More tools');
    expect(system).toMatch(/list_tool_capabilities/);
    expect(system).toMatch(/\bget_workflow_phase\b/);
  });
});

describe('a configured provider that cannot serve a turn', () => {
  it('is named with its reason instead of "no model provider is configured"', async () => {
    const app = await makeTestApp({
      config: {
        providers: {
          corp: {
            type: 'openai-compat',
            base_url: 'https://llm.corp.example/v1',
          },
        },
        options: { local_probe: { enabled: false } },
      },
    });
    const error = await app.models.resolve().catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(
      /^providers\.corp is configured but cannot serve a turn: .*key/i,
    );
    expect((error as Error).message).toContain('svc config show-provider-status');
    expect((error as Error).message).not.toContain('no model provider is configured');
  });
});

describe('a configured provider with no model set (svc run, the real binary)', () => {
  const env = (ws: string) => ({
    HOME: join(ws, '.home'),
    XDG_CONFIG_HOME: join(ws, '.home', '.config'),
    XDG_DATA_HOME: join(ws, '.home', '.local', 'share'),
  });
  const workspace = (url: string) =>
    tmpWorkspace({
      files: { 'svc.toml': `[providers.local]\ntype = "openai-compat"\nbase_url = "${url}"\n` },
    });

  it('uses the only model the server lists, and show-model-selection says so beforehand', async () => {
    const fake = await fakeProvider([reply().text('hello from the only model')]);
    const ws = workspace(fake.url);
    const selection = await runBin(['config', 'show-model-selection'], { cwd: ws, env: env(ws) });
    expect(selection.stdout).toContain('providers.local is configured but names no model');
    const result = await runBin(['run', 'say hello'], { cwd: ws, env: env(ws) });
    expect(result.stderr).not.toContain('no model provider is configured');
    expect(result).toMatchObject({ code: 0, stdout: 'hello from the only model\n' });
    expect(fake.requests[0].body.model).toBe('fake-model');
  });

  it('with several models (Ollama /api/tags), names them and the exact [models] line to add', async () => {
    const server = await modelServer({
      'GET /api/tags': () => ({ json: { models: [{ name: 'qwen2.5-coder:7b' }, { name: 'llama3.1:8b' }] } }),
    });
    const ws = workspace(server.url);
    const status = await runBin(['config', 'show-provider-status', '--provider', 'local', '--json'], {
      cwd: ws,
      env: env(ws),
    });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/"ready": true/);
    const result = await runBin(['run', 'say hello'], { cwd: ws, env: env(ws) });
    expect(result.code).toBe(2);
    expect(result.stderr).not.toContain('no model provider is configured');
    expect(result.stderr).toContain('qwen2.5-coder:7b, llama3.1:8b');
    expect(result.stderr).toContain('[models] large = "local/qwen2.5-coder:7b"');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('with a server that lists none, says so and how to go on', async () => {
    const server = await modelServer({ 'GET /v1/models': () => ({ json: { data: [] } }) });
    const ws = workspace(server.url);
    const result = await runBin(['run', 'say hello'], { cwd: ws, env: env(ws) });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `no model is set for providers.local, and its server at ${server.url} listed none`,
    );
    expect(result.stderr).toContain('[models] large = "local/<model>"');
  });
});
