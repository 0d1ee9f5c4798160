/**
 * Every way a run can fail, met the way a user meets it: the agent runs against the scripted fake
 * provider made to fail (an HTTP status, a closed port, an unresolvable host, a server that never
 * answers, a context overflow, a step limit), and the run records one classified failure with the
 * provider and model in its summary and a next step that fits the cause. A wrong key, a wrong URL
 * and a network problem read differently; no secret reaches the failure or the log.
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { RunResult } from '../../src/agent/types';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';

const SECRET = 'sk-live-abcdefghijklmnopqrstuvwxyz0123';
// The AI SDK honours retry-after-ms: retried statuses do not wait seconds between attempts.
const fast = { 'retry-after-ms': '5' };

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A web server that is no model API: 404 pages everywhere. */
async function notFoundServer(): Promise<string> {
  const server = createHttpServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end('<h1>Not Found</h1>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** An App whose fake provider is at `base_url` (a closed port, an unresolvable host). */
async function appAt(baseUrl: string, extra: Record<string, unknown> = {}) {
  return makeTestApp({
    config: {
      providers: { fake: { type: 'openai-compat', base_url: baseUrl, api_key: SECRET, ...extra } },
      models: { large: 'fake/m1' },
    },
  });
}

function expectClean(app: { memoryLog: { records: unknown[] } }, result: RunResult) {
  expect(JSON.stringify(result)).not.toContain(SECRET);
  expect(JSON.stringify(app.memoryLog.records)).not.toContain(SECRET);
}

describe('run failures', () => {
  it('a rejected key (401) names the provider and model and says how to replace the key', async () => {
    const { app } = await agentApp([
      reply().httpError(401, { error: { message: `Incorrect API key provided: ${SECRET}` } }),
    ]);
    const result = await app.agent.run({ prompt: 'hi' });
    expect(result.status).toBe('failed');
    expect(result.failure).toMatchObject({
      code: 'provider_unauthorized',
      summary: 'the provider rejected the API key (HTTP 401) (provider fake, model fake/m1)',
      details: { provider: 'fake', model: 'fake/m1', status: 401 },
    });
    expect(result.failure?.next).toContain('svc auth token fake --token-stdin');
    expectClean(app, result);
    // Recorded on the run, in the ledger and in the log with the classified fields.
    expect((await app.runs.get(result.run_id))?.failure).toEqual(result.failure);
    const logged = app.memoryLog.records.find((r) => r.message === 'provider call failed');
    expect(logged).toMatchObject({ level: 'warn', code: 'provider_unauthorized', provider: 'fake' });
  });

  it('a 403, a 404 for the model and a 404 for the URL read differently', async () => {
    const { app } = await agentApp([
      reply().httpError(403, { error: { message: 'this key may not use m1' } }),
      reply().httpError(404, { error: { message: 'The model `m1` does not exist' } }),
    ]);
    const forbidden = await app.agent.run({ prompt: 'a' });
    expect(forbidden.failure).toMatchObject({ code: 'provider_forbidden' });
    expect(forbidden.failure?.summary).toContain('HTTP 403');
    const missing = await app.agent.run({ prompt: 'b' });
    expect(missing.failure).toMatchObject({
      code: 'model_not_found',
      summary: 'the provider does not know the model m1 (HTTP 404) (provider fake, model fake/m1)',
    });
    expect(missing.failure?.next).toContain('svc models --provider fake');

    // The base URL points at some other web server: every path is a 404 page.
    const origin = await notFoundServer();
    const wrongUrl = await appAt(`${origin}/api`);
    const result = await wrongUrl.agent.run({ prompt: 'c' });
    expect(result.failure?.code).toBe('endpoint_not_found');
    expect(result.failure?.summary).toBe(
      `no model API at ${origin}/api/chat/completions (HTTP 404) (provider fake, model fake/m1)`,
    );
    expect(result.failure?.next).toBe(
      `fix providers.fake.base_url (now ${origin}/api); OpenAI-compatible servers usually end in /v1`,
    );
  });

  it('a 429 and a 500 say rate limited and server error, with the attempts', async () => {
    const { app } = await agentApp([
      reply().httpError(429, { error: { message: 'slow down' } }, { 'retry-after': '0' }),
      reply().httpError(429, { error: { message: 'slow down' } }, { 'retry-after': '0' }),
      reply().httpError(429, { error: { message: 'slow down' } }, { 'retry-after': '0' }),
      reply().httpError(500, { error: { message: 'upstream exploded' } }, fast),
      reply().httpError(500, { error: { message: 'upstream exploded' } }, fast),
      reply().httpError(500, { error: { message: 'upstream exploded' } }, fast),
    ]);
    const limited = await app.agent.run({ prompt: 'a' });
    expect(limited.failure).toMatchObject({ code: 'rate_limited', details: { status: 429, attempts: 3 } });
    expect(limited.failure?.next).toContain('options.tpm_recovery.provider_model_fallback');
    const broken = await app.agent.run({ prompt: 'b' });
    expect(broken.failure).toMatchObject({
      code: 'provider_server_error',
      details: { status: 500, attempts: 3 },
    });
    expect(broken.failure?.summary).toBe(
      'the provider failed on its side (HTTP 500, 3 attempts): "upstream exploded" (provider fake, model fake/m1)',
    );
  });

  it('a closed port is a refused connection, an unresolvable host a DNS failure', {
    timeout: 60_000,
  }, async () => {
    const port = await freePort();
    const closed = await appAt(`http://127.0.0.1:${port}/v1`);
    const refused = await closed.agent.run({ prompt: 'a' });
    expect(refused.failure).toMatchObject({
      code: 'connection_refused',
      summary: `connection refused: nothing listens at 127.0.0.1:${port}, 3 attempts (provider fake, model fake/m1)`,
      next: `start the model server, or fix providers.fake.base_url (now http://127.0.0.1:${port}/v1)`,
      details: { error_code: 'ECONNREFUSED' },
    });
    expectClean(closed, refused);

    const nowhere = await appAt('http://nonexistent.invalid/v1');
    const dns = await nowhere.agent.run({ prompt: 'b' });
    expect(dns.failure?.code).toBe('dns_failure');
    expect(dns.failure?.summary).toMatch(
      /^the host nonexistent\.invalid does not resolve \(DNS lookup failed\)/,
    );
    expect(dns.failure?.next).toContain('providers.fake.base_url (now http://nonexistent.invalid/v1)');
  });

  it('a server that never answers times out after providers.<id>.timeout_seconds', async () => {
    const { provider } = await agentApp([reply().hang(30_000)]);
    const app = await appAt(provider.url, { timeout_seconds: 0.5 });
    const started = Date.now();
    const result = await app.agent.run({ prompt: 'a' });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result.failure).toMatchObject({
      code: 'provider_timeout',
      summary: 'no answer from the provider within 0.5 s (provider fake, model fake/m1)',
    });
    expect(result.failure?.next).toContain('raise providers.fake.timeout_seconds (now 0.5)');
  });

  it('a context overflow says the conversation no longer fits and how to make room', async () => {
    const { app } = await agentApp(
      [
        reply().httpError(400, {
          error: {
            message: "This model's maximum context length is 8192 tokens",
            code: 'context_length_exceeded',
          },
        }),
      ],
      { modelInfo: { context_window: 8192 } },
    );
    const result = await app.agent.run({ prompt: 'a' });
    expect(result.failure?.code).toBe('context_overflow');
    expect(result.failure?.summary).toContain(
      "the conversation no longer fits the model's context window of 8192 tokens",
    );
    expect(result.failure?.next).toContain('/compact');
  });

  it('the step limit names the limit and the keys that raise it', async () => {
    const { app } = await agentApp(
      [reply().toolCall('view', { path: 'a.txt' }), reply().toolCall('view', { path: 'a.txt' })],
      {
        files: { 'a.txt': 'x\n' },
      },
    );
    const result = await app.agent.run({ prompt: 'a', maxSteps: 1 });
    expect(result.failure).toMatchObject({
      code: 'step_limit',
      summary: 'step limit reached: 1 steps and the model was still working (model fake/m1)',
      next: 'raise it with svc run --max-steps <n> or options.max_steps in svc.toml, or split the task',
    });
  });

  it('a refused tool call carries its classified failure on tool.finished', async () => {
    const { app, events } = await agentApp(
      [reply().toolCall('write', { path: 'new.txt', content: 'x' }), reply().text('could not write')],
      {},
    );
    const result = await app.agent.run({ prompt: 'write it', unattended: 'fail' });
    expect(result.status).toBe('completed');
    const finished = events.find((e) => e.type === 'tool.finished');
    expect(finished?.payload).toMatchObject({
      tool: 'write',
      is_error: true,
      failure: {
        code: 'tool_refused',
        summary: 'write needed permission and no one was there to answer',
        next: 're-run with --yolo, add "write" to [permissions].allowed_tools, or run it in the TUI',
      },
    });
  });
});
