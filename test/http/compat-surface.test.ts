/**
 * The compat surface beyond the happy path, against a real server with the fake provider. Pins:
 * - the compat run ledger: runs is null when empty, one entry per request (keyed by the completion
 *   id) with its events; an unknown request_id answers 200 with total 0 and events null; nothing is
 *   recorded without [options.openai_compat] (TOOLS-24);
 * - the tool policy: a denied tool is not offered and, when called anyway, not run; pending tool
 *   calls the client sent run through svc's tool path under the same policy;
 * - errors: a failing run mid-stream ends the stream with the nested invalid_request_error chunk
 *   then [DONE]; a failing non-streaming run is a flat 502 with x-should-retry false;
 * - a client that disconnects mid-stream cancels its run;
 * - the auth matrix on compat routes with flat bodies; sibling APIs answer 404;
 * - /v1/completions is 404 while edit predictions are off and a FIM proxy when on; the posture.
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { getRequest } from '../../src/surfaces/http/compat/ledger';
import { createHttpApp } from '../../src/surfaces/http/index';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { compatServer, sseData } from './compat-helpers';

const ask = (content: string) => ({ model: 'fake/m1', messages: [{ role: 'user' as const, content }] });

async function waitFor(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('compat run ledger', () => {
  it('COMPAT-02 COMPAT-03 COMPAT-04 COMPAT-11: runs is null when empty, then lists each request with its events', async () => {
    const { get, client } = await compatServer([reply().text('one')]);
    const empty = await get('/v1/openai-compat/runs');
    expect(empty.status).toBe(200);
    expect(await empty.json()).toMatchObject({ runs: null, total: 0, ledger: { enabled: true } });

    const completion = await client.chat.completions.create({ ...ask('first'), temperature: 0.2 } as never);
    const id = (completion as OpenAI.Chat.Completions.ChatCompletion).id;
    const listed = (await (await get('/v1/openai-compat/runs')).json()) as any;
    expect(listed.total).toBe(1);
    expect(listed.runs).toHaveLength(1);
    expect(listed.runs[0]).toMatchObject({
      request_id: id,
      model: 'fake/m1',
      requested_model: 'fake/m1',
      model_source: 'requested',
      stream: false,
      session_binding: 'new',
      message_count: 1,
      ignored_fields: ['temperature'],
      status: 'completed',
      run_status: 'completed',
      finish_reason: 'stop',
      http_status: 200,
    });

    const events = (await (await get(`/v1/openai-compat/runs/${id}/events`)).json()) as any;
    expect(events.request_id).toBe(id);
    expect(typeof events.total).toBe('number');
    expect(events.total).toBe(events.events.length);
    const types = events.events.map((e: { type: string }) => e.type);
    expect(types).toContain('run.started');
    expect(types).toContain('openai_compat.request');
    expect(types).toContain('step.finished');
    expect(types.at(-1)).toBe('openai_compat.response');
  });

  it('COMPAT-05 COMPAT-24: an unknown request_id answers 200 with total 0 and events null', async () => {
    const { get } = await compatServer([]);
    const response = await get('/v1/openai-compat/runs/chatcmpl-nope/events');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      request_id: 'chatcmpl-nope',
      run_id: null,
      total: 0,
      events: null,
    });
  });

  it('TOOLS-24: without [options.openai_compat] compat requests are served but not recorded', async () => {
    const { get, client } = await compatServer([reply().text('served')], { compat: false });
    const completion = await client.chat.completions.create(ask('x'));
    expect(completion.choices[0].message.content).toBe('served');
    expect(await (await get('/v1/openai-compat/runs')).json()).toMatchObject({
      runs: null,
      total: 0,
      ledger: { enabled: false, reason: '[options.openai_compat] is not configured' },
    });
    expect(
      (await (await get(`/v1/openai-compat/runs/${completion.id}/events`)).json()) as object,
    ).toMatchObject({
      total: 0,
      events: null,
    });
  });

  it('answers 400 with a flat body for a bad limit', async () => {
    const { get } = await compatServer([]);
    const response = await get('/v1/openai-compat/runs?limit=zero');
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: 'invalid limit (an integer from 1 to 500)', code: 400 });
  });
});

describe('compat sessions', () => {
  it('runs in the session named by X-Svc-Session-Id, which keeps its own history', async () => {
    const { post, provider, app } = await compatServer([reply().text('First.'), reply().text('Second.')]);
    const first = await post('/v1/chat/completions', ask('Remember the word kiwi.'));
    const sessionId = first.headers.get('x-svc-session-id')!;
    expect(sessionId).toMatch(/^ses_/);
    expect(first.headers.get('x-request-id')).toBe(((await first.json()) as { id: string }).id);
    const second = await post(
      '/v1/chat/completions',
      {
        model: 'fake/m1',
        messages: [
          { role: 'user', content: 'ignored: the session has its own history' },
          { role: 'assistant', content: 'ignored too' },
          { role: 'user', content: 'Which word?' },
        ],
      },
      { 'x-svc-session-id': sessionId },
    );
    expect(second.status).toBe(200);
    expect(second.headers.get('x-svc-session-id')).toBe(sessionId);
    const sent = provider.requests[1].body.messages
      .slice(1)
      .map((m: { role: string; content: unknown }) => [m.role, JSON.stringify(m.content)]);
    expect(sent).toEqual([
      ['user', expect.stringContaining('Remember the word kiwi.')],
      ['assistant', expect.stringContaining('First.')],
      ['user', expect.stringContaining('Which word?')],
    ]);
    expect(await app.sessions.list()).toHaveLength(1);
    const unknown = await post('/v1/chat/completions', ask('x'), { 'x-svc-session-id': 'ses_nope' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      error: 'x-svc-session-id: no session "ses_nope"; omit the header for a new session',
      code: 404,
    });
  });
});

describe('compat tool policy', () => {
  it('COMPAT-17 CFG-26: read_only (the default) withholds write; a call to it anyway is not run', async () => {
    const { client, provider, app } = await compatServer([
      reply().toolCall('write', { path: 'pwned.txt', content: 'x' }),
      reply().text('I could not write.'),
    ]);
    const completion = await client.chat.completions.create(ask('Write pwned.txt'));
    expect(completion.choices[0].message.content).toBe('I could not write.');
    expect(existsSync(join(app.workspace, 'pwned.txt'))).toBe(false);
    const offered = (provider.requests[0].body.tools ?? []).map((t: any) => t.function.name);
    expect(offered).toContain('view');
    expect(offered).not.toContain('write');
    const toolMessage = provider.requests[1].body.messages.find((m: { role: string }) => m.role === 'tool');
    // Not offered, so the SDK refuses the call before svc's tool bridge would: nothing runs.
    expect(toolMessage.content).toMatch(/unavailable tool|not available/);
  });

  it('COMPAT-17: all with write in permissions.allowed_tools lets the run write', async () => {
    const { client, app } = await compatServer(
      [reply().toolCall('write', { path: 'ok.txt', content: 'written' }), reply().text('Done.')],
      { compat: { tool_policy: 'all' }, extraConfig: { permissions: { allowed_tools: ['write'] } } },
    );
    await client.chat.completions.create(ask('Write ok.txt'));
    expect(existsSync(join(app.workspace, 'ok.txt'))).toBe(true);
  });

  it('COMPAT-17: none offers no tools at all', async () => {
    const { client, provider } = await compatServer([reply().text('No tools.')], {
      compat: { tool_policy: 'none' },
    });
    await client.chat.completions.create(ask('anything'));
    expect(provider.requests[0].body.tools ?? []).toEqual([]);
  });

  it('COMPAT-17: a pending client tool call runs through svc tools; a denied one is not run', async () => {
    const { client, provider, app, get } = await compatServer([reply().text('It says hello.')], {
      files: { 'a.txt': 'hello\n' },
    });
    const completion = await client.chat.completions.create({
      model: 'fake/m1',
      messages: [
        { role: 'user', content: 'Read a.txt and delete b.txt' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'view', arguments: '{"path":"a.txt"}' } },
            {
              id: 'c2',
              type: 'function',
              function: { name: 'write', arguments: '{"path":"b.txt","content":"x"}' },
            },
            { id: 'c3', type: 'function', function: { name: 'client_tool', arguments: '{}' } },
          ],
        },
      ],
    });
    expect(completion.choices[0].message.content).toBe('It says hello.');
    const tool = provider.requests[0].body.messages.filter((m: { role: string }) => m.role === 'tool');
    expect(tool.map((m: { tool_call_id: string }) => m.tool_call_id)).toEqual(['c1', 'c2', 'c3']);
    expect(tool[0].content).toContain('hello');
    expect(tool[1].content).toMatch(/write was not run: options.openai_compat.tool_policy is read_only/);
    expect(tool[2].content).toMatch(/client_tool is not an svc tool/);
    expect(existsSync(join(app.workspace, 'b.txt'))).toBe(false);
    // The run's prompt is the continue note (the request ended with the assistant's tool calls).
    expect(JSON.stringify(provider.requests[0].body.messages.at(-1))).toContain(
      'Continue from the tool results',
    );
    const events = (await (await get(`/v1/openai-compat/runs/${completion.id}/events`)).json()) as any;
    const denied = events.events.filter((e: { type: string }) => e.type === 'openai_compat.tool_denied');
    expect(denied.map((e: any) => e.payload.tool)).toEqual(['write', 'client_tool']);
  });
});

describe('compat errors and disconnects', () => {
  it('COMPAT-30 COMPAT-31: a run failing mid-stream ends with the nested invalid_request_error chunk and [DONE]', async () => {
    const { post, client } = await compatServer([
      reply().httpError(400, { error: { message: 'upstream says no' } }),
      reply().httpError(400, { error: { message: 'upstream says no' } }),
    ]);
    const response = await post('/v1/chat/completions', { ...ask('fail'), stream: true });
    expect(response.status).toBe(200);
    const data = await sseData(response);
    expect(data.at(-1)).toBe('[DONE]');
    const error = JSON.parse(data.at(-2)!);
    expect(Object.keys(error)).toEqual(['error']);
    expect(error.error.type).toBe('invalid_request_error');
    expect(error.error.message).toMatch(/upstream says no/);
    const thrown = await (async () => {
      const stream = await client.chat.completions.create({ ...ask('fail'), stream: true } as never);
      for await (const _ of stream as unknown as AsyncIterable<unknown>) {
        // consume
      }
    })().catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(OpenAI.APIError);
    expect((thrown as Error).message).toMatch(/upstream says no/);
  });

  it('COMPAT-28 COMPAT-29: a failing non-streaming run is a flat 502 that official clients do not retry', async () => {
    const { post } = await compatServer([reply().httpError(400, { error: { message: 'bad upstream' } })]);
    const response = await post('/v1/chat/completions', ask('fail'));
    expect(response.status).toBe(502);
    expect(response.headers.get('x-should-retry')).toBe('false');
    const body = (await response.json()) as { error: string; code: number };
    expect(body.code).toBe(502);
    expect(body.error).toMatch(/bad upstream/);
  });

  it('ends an open compat stream with an error chunk and [DONE] at shutdown; the run is interrupted', async () => {
    const { url, app, server } = await compatServer([reply().text('never').hang(30_000)]);
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer compat-test-token-7', 'content-type': 'application/json' },
      body: JSON.stringify({ ...ask('hang'), stream: true }),
    });
    const runId = response.headers.get('x-svc-run-id')!;
    const requestId = response.headers.get('x-request-id')!;
    await waitFor(async () => (await app.runs.get(runId))?.status === 'running', 'the run to start');
    // Read the compat ledger row while the database is still open (closers run before it closes).
    let row: Awaited<ReturnType<typeof getRequest>>;
    app.onClose(async () => {
      row = await getRequest(app, requestId);
    });
    const body = response.text();
    await server.close('test');
    const data = (await body)
      .split('\n\n')
      .map((block) => block.replace(/^data: /, ''))
      .filter(Boolean);
    expect(data.at(-1)).toBe('[DONE]');
    expect(JSON.parse(data.at(-2)!)).toEqual({
      error: { message: 'server shutting down; the run was interrupted', type: 'invalid_request_error' },
    });
    // The ledger row is finished too, not left `running` forever.
    expect(row!).toMatchObject({
      status: 'cancelled',
      http_status: 200,
      error: 'server shutting down; the run was interrupted',
    });
    expect(row!.finished_at).not.toBeNull();
  });

  it('cancels the run when the client disconnects mid-stream', async () => {
    const { url, app, get } = await compatServer([reply().text('never').hang(30_000)]);
    const controller = new AbortController();
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer compat-test-token-7', 'content-type': 'application/json' },
      body: JSON.stringify({ ...ask('hang'), stream: true }),
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    await reader.read(); // the role chunk
    const runId = response.headers.get('x-svc-run-id')!;
    controller.abort();
    await waitFor(async () => (await app.runs.get(runId))?.status === 'cancelled', 'the run to be cancelled');
    const runs = (await (await get('/v1/openai-compat/runs')).json()) as any;
    await waitFor(() => true, 'nothing');
    expect(runs.runs[0]).toMatchObject({ status: 'disconnected', run_status: 'cancelled' });
  });
});

describe('compat auth and routes', () => {
  const TOKEN = 'matrix-token';
  const body = JSON.stringify({ messages: [] });
  const headers = (extra: Record<string, string> = {}) => ({ 'content-type': 'application/json', ...extra });

  it('AUTH-45 AUTH-46 AUTH-47 HTTP-01 COMPAT-28: the auth matrix on compat routes answers with the flat body', async () => {
    const app = await makeTestApp({ config: { options: { openai_compat: {} } } });
    const withToken = createHttpApp(app, { token: TOKEN, allowNoAuth: false });
    for (const path of ['/v1/chat/completions', '/v1/openai-compat/runs', '/v1/openai-compat/posture']) {
      const method = path === '/v1/chat/completions' ? 'POST' : 'GET';
      const init = (extra: Record<string, string>) => ({
        method,
        headers: headers(extra),
        ...(method === 'POST' ? { body } : {}),
      });
      const missing = await withToken.request(path, init({}));
      expect(missing.status).toBe(401);
      expect(await missing.json()).toEqual({
        error: 'authentication required: missing bearer token',
        code: 401,
      });
      const wrong = await withToken.request(path, init({ authorization: 'Bearer nope' }));
      expect(wrong.status).toBe(401);
      expect(await wrong.json()).toEqual({
        error: 'authentication required: invalid bearer token',
        code: 401,
      });
      const right = await withToken.request(path, init({ authorization: `Bearer ${TOKEN}` }));
      expect(right.status).toBe(method === 'POST' ? 400 : 200);

      const closed = createHttpApp(app, { token: '', allowNoAuth: false });
      const noToken = await closed.request(path, init({}));
      expect(noToken.status).toBe(401);
      expect(await noToken.json()).toEqual({ error: 'authentication required', code: 401 });
      const open = createHttpApp(app, { token: '', allowNoAuth: true });
      expect((await open.request(path, init({}))).status).toBe(method === 'POST' ? 400 : 200);
    }
  });

  it('COMPAT-23 COMPAT-25: unimplemented sibling APIs are not registered (404)', async () => {
    const app = await makeTestApp();
    const hono = createHttpApp(app, { token: TOKEN });
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (const [method, path] of [
      ['POST', '/v1/assistants'],
      ['GET', '/v1/files'],
      ['POST', '/v1/vector_stores'],
      ['POST', '/v1/realtime/sessions'],
      ['POST', '/v1/audio/speech'],
      ['POST', '/v1/images/generations'],
      ['POST', '/v1/embeddings'],
      ['POST', '/v1/fine_tuning/jobs'],
    ]) {
      const response = await hono.request(path, {
        method,
        headers: headers(auth),
        body: method === 'POST' ? '{}' : undefined,
      });
      expect(response.status, `${method} ${path}`).toBe(404);
    }
  });

  it('COMPAT-06 CFG-27: /v1/completions is 404 while edit predictions are off', async () => {
    const app = await makeTestApp({ config: { options: { openai_compat: {} } } });
    const hono = createHttpApp(app, { token: TOKEN });
    for (const method of ['POST', 'GET']) {
      const response = await hono.request('/v1/completions', {
        method,
        headers: headers({ authorization: `Bearer ${TOKEN}` }),
        body: method === 'POST' ? '{"prompt":"x"}' : undefined,
      });
      expect(response.status).toBe(404);
      expect(((await response.json()) as { code: number }).code).toBe(404);
    }
  });

  it('COMPAT-06 CFG-27: /v1/openapi.json lists /v1/completions only while edit predictions are on', async () => {
    const documented = async (compat: Record<string, unknown>) => {
      const app = await makeTestApp({ config: { options: { openai_compat: compat } } });
      const response = await createHttpApp(app, { token: TOKEN }).request('/v1/openapi.json', {
        headers: headers({ authorization: `Bearer ${TOKEN}` }),
      });
      expect(response.status).toBe(200);
      const doc = (await response.json()) as { paths: Record<string, unknown> };
      return Object.keys(doc.paths);
    };
    const off = await documented({});
    expect(off).toContain('/v1/chat/completions');
    expect(off).not.toContain('/v1/completions');
    expect(await documented({ edit_predictions: { enabled: true } })).toContain('/v1/completions');
  });

  it('COMPAT-06 CFG-27: with edit predictions on, /v1/completions proxies FIM to the configured model', async () => {
    const seen: any[] = [];
    const fim = createServer((req, res) => {
      let raw = '';
      req.on('data', (d) => (raw += d));
      req.on('end', () => {
        seen.push({ path: req.url, body: JSON.parse(raw), auth: req.headers.authorization });
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            id: 'cmpl-up',
            object: 'text_completion',
            choices: [{ index: 0, text: 'return a + b;', finish_reason: 'stop' }],
            usage: { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => fim.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(fim.address() as AddressInfo).port}/v1`;
      const app = await makeTestApp({
        config: {
          providers: { local: { type: 'openai-compat', base_url: base } },
          options: {
            openai_compat: { edit_predictions: { enabled: true, model: 'local/coder-fim', max_tokens: 64 } },
          },
        },
      });
      const hono = createHttpApp(app, { token: TOKEN });
      const response = await hono.request('/v1/completions', {
        method: 'POST',
        headers: headers({ authorization: `Bearer ${TOKEN}` }),
        body: JSON.stringify({
          model: 'gpt-x',
          prompt: 'function add(a, b) {\n  ',
          suffix: '\n}',
          max_tokens: 500,
        }),
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({
        object: 'text_completion',
        model: 'local/coder-fim',
        choices: [{ index: 0, text: 'return a + b;', finish_reason: 'stop' }],
        usage: { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 },
      });
      expect(seen).toHaveLength(1);
      expect(seen[0].path).toBe('/v1/completions');
      expect(seen[0].body).toEqual({
        model: 'coder-fim',
        prompt: 'function add(a, b) {\n  ',
        suffix: '\n}',
        max_tokens: 64,
        stream: false,
      });
      const missing = await hono.request('/v1/completions', {
        method: 'POST',
        headers: headers({ authorization: `Bearer ${TOKEN}` }),
        body: '{}',
      });
      expect(missing.status).toBe(400);
      expect(await missing.json()).toEqual({
        error: 'prompt: required, the text before the cursor (a string)',
        code: 400,
      });
    } finally {
      await new Promise<void>((resolve) => fim.close(() => resolve()));
    }
  });

  it('COMPAT-07 VER-04: the posture reports fields, tool policy, ledger, edit predictions and planned changes', async () => {
    const app = await makeTestApp({ config: { options: { openai_compat: { tool_policy: 'none' } } } });
    const hono = createHttpApp(app, { token: TOKEN });
    const response = await hono.request('/v1/openai-compat/posture', {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(response.status).toBe(200);
    const posture = (await response.json()) as any;
    expect(posture).toMatchObject({
      schema_version: 'svc.openai_compat_posture.v1',
      configured: true,
      fields: { honored: ['model', 'messages', 'stream', 'stream_options'], rejected: [] },
      tool_policy: { value: 'none', source: 'config', executable_tools: [], executable_count: 0 },
      ledger: { enabled: true },
      edit_predictions: { enabled: false, model: null, route: null },
      one_way: true,
    });
    expect(posture.fields.ignored).toContain('temperature');
    expect(posture.fields.ignored).toHaveLength(23);
    expect(posture.divergences.map((d: { planned: string | null }) => d.planned)).toEqual([
      'the canonical {"error": {"message", "type", "param", "code"}} shape',
      '[]',
      null,
    ]);
  });
});
