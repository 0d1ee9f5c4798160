/**
 * Traces (issue 21 item 1): a scripted run exported over OTLP/HTTP to an in-process receiver
 * gives the span tree run → model steps → tool calls with the right parent ids and the GenAI
 * attributes; by default no prompt, no tool input or output and no secret is in any span; with
 * include_content, content is there with URL credentials, credential headers and secret lines
 * redacted; an endpoint's query stays after /v1/traces and its token, like a provider base_url's
 * credentials, is in no log line, run result or span status; an HTTP request that carries a W3C
 * traceparent is a child of the caller's span.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createHttpApp } from '../../src/surfaces/http/index';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';

interface OtlpAttribute {
  key: string;
  value: Record<string, unknown>;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: OtlpAttribute[];
}

/** An OTLP/HTTP JSON receiver on 127.0.0.1 that keeps every span it is sent, and each request's URL. */
async function otlpReceiver(): Promise<{ url: string; spans: OtlpSpan[]; bodies: string[]; urls: string[] }> {
  const spans: OtlpSpan[] = [];
  const bodies: string[] = [];
  const urls: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      bodies.push(body);
      urls.push(req.url ?? '');
      if (new URL(req.url ?? '/', 'http://x').pathname.endsWith('/v1/traces')) {
        const payload = JSON.parse(body) as {
          resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
        };
        for (const rs of payload.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, bodies, urls };
}

const attr = (span: OtlpSpan, key: string): unknown => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value ? Object.values(value)[0] : undefined;
};

describe('OTLP traces', () => {
  it('a scripted run is one tree: invoke_agent → chat per step → execute_tool, with no content and no secret', async () => {
    const receiver = await otlpReceiver();
    const secret = 'sk-test-SECRET-0123456789abcdef';
    const { app } = await agentApp(
      [
        reply().toolCall('echo', { text: 'private words' }).usage(100, 20),
        reply().text('done').usage(150, 30),
      ],
      {
        extraTools: [echoTool],
        extraConfig: { telemetry: { otlp_endpoint: receiver.url } },
      },
    );
    await app.telemetry.ready();
    expect(app.telemetry.endpoint).not.toBeNull();
    const result = await app.agent.run({ prompt: `please echo the private words ${secret}` });
    expect(result.status).toBe('completed');
    await app.telemetry.flush();

    const run = receiver.spans.find((s) => attr(s, 'gen_ai.operation.name') === 'invoke_agent');
    expect(run, 'an invoke_agent span').toBeDefined();
    expect(attr(run!, 'svc.run.id')).toBe(result.run_id);
    expect(attr(run!, 'svc.session.id')).toBe(result.session_id);
    const chats = receiver.spans.filter((s) => attr(s, 'gen_ai.operation.name') === 'chat');
    expect(chats).toHaveLength(2);
    for (const chat of chats) {
      expect(chat.traceId).toBe(run!.traceId);
      expect(chat.parentSpanId).toBe(run!.spanId);
      expect(attr(chat, 'gen_ai.request.model')).toBe('m1');
      expect(attr(chat, 'svc.run.id')).toBe(result.run_id);
    }
    expect(chats.map((c) => Number(attr(c, 'gen_ai.usage.input_tokens'))).sort()).toEqual([100, 150]);
    const tools = receiver.spans.filter((s) => attr(s, 'gen_ai.operation.name') === 'execute_tool');
    expect(tools).toHaveLength(1);
    expect(attr(tools[0], 'gen_ai.tool.name')).toBe('echo');
    expect(tools[0].traceId).toBe(run!.traceId);
    expect(chats.map((c) => c.spanId)).toContain(tools[0].parentSpanId);

    const everything = receiver.bodies.join('\n');
    expect(everything).not.toContain(secret);
    expect(everything).not.toContain('private words');
    expect(receiver.spans.some((s) => attr(s, 'gen_ai.input.messages') !== undefined)).toBe(false);
    expect(receiver.spans.some((s) => attr(s, 'gen_ai.tool.call.arguments') !== undefined)).toBe(false);
  });

  it('include_content = true adds the prompt and the tool input', async () => {
    const receiver = await otlpReceiver();
    const { app } = await agentApp(
      [reply().toolCall('echo', { text: 'visible words' }), reply().text('done')],
      {
        extraTools: [echoTool],
        extraConfig: { telemetry: { otlp_endpoint: receiver.url, include_content: true } },
      },
    );
    await app.telemetry.ready();
    const result = await app.agent.run({ prompt: 'echo the visible words' });
    expect(result.status).toBe('completed');
    await app.telemetry.flush();
    const tool = receiver.spans.find((s) => attr(s, 'gen_ai.operation.name') === 'execute_tool');
    expect(String(attr(tool!, 'gen_ai.tool.call.arguments'))).toContain('visible words');
    const chat = receiver.spans.find((s) => attr(s, 'gen_ai.operation.name') === 'chat');
    expect(String(attr(chat!, 'gen_ai.input.messages'))).toContain('echo the visible words');
  });

  it('include_content = true: URL credentials, credential headers and secret lines are redacted in every span', async () => {
    const receiver = await otlpReceiver();
    const secrets = {
      promptPassword: 'PROMPTPW_s3cr3t',
      promptQuery: 'PROMPTQUERY123',
      promptKey: 'PROMPTKEYabcdef',
      basic: 'dXNlcjpwYXNzU0VDUkVU',
      apiKeyHeader: 'hdrARGSECRET777',
      argQuery: 'BASHQUERYSECRET',
      filePassword: 'FILEPASSWORD_SECRET',
      awsSecret: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      pgPassword: 'PGFILEPW_secret',
      answerPassword: 'ANSWERPW_secret',
      answerQuery: 'ANSWERQUERYabc',
    };
    const command =
      `curl -s 'http://127.0.0.1:9/x?api_key=${secrets.argQuery}' -H 'Authorization: Basic ${secrets.basic}'` +
      ` -H 'X-Api-Key: ${secrets.apiKeyHeader}'\n` +
      `db_password = ${secrets.filePassword}\nAWS_SECRET_ACCESS_KEY=${secrets.awsSecret}\n` +
      `url=postgres://admin:${secrets.pgPassword}@db/x`;
    const { app } = await agentApp(
      [
        reply().toolCall('echo', { text: command }),
        reply().text(
          `see https://alice:${secrets.answerPassword}@host.example/p?api_key=${secrets.answerQuery}`,
        ),
      ],
      {
        extraTools: [echoTool],
        extraConfig: { telemetry: { otlp_endpoint: receiver.url, include_content: true } },
      },
    );
    await app.telemetry.ready();
    const result = await app.agent.run({
      prompt:
        `fetch http://bob:${secrets.promptPassword}@host.example/x?access_token=${secrets.promptQuery}` +
        ` and https://host.example/y?api_key=${secrets.promptKey}`,
    });
    expect(result.status).toBe('completed');
    await app.telemetry.flush();
    const tool = receiver.spans.find((s) => attr(s, 'gen_ai.operation.name') === 'execute_tool');
    expect(String(attr(tool!, 'gen_ai.tool.call.arguments'))).toContain(
      "-H 'Authorization: Basic [REDACTED]'",
    );
    expect(String(attr(tool!, 'gen_ai.tool.call.result'))).toContain('db_password = [REDACTED]');
    const everything = receiver.bodies.join('\n');
    expect(everything).toContain('http://bob:[REDACTED]@host.example/x?access_token=[REDACTED]');
    for (const [name, secret] of Object.entries(secrets)) expect(everything, name).not.toContain(secret);
  });

  it('an otlp_endpoint with a query exports to <path>/v1/traces?<query>, and its token is in no log line', async () => {
    const receiver = await otlpReceiver();
    const token = 'OTLPQUERYTOKEN_secret';
    const { app } = await agentApp([reply().text('ok')], {
      extraConfig: { telemetry: { otlp_endpoint: `${receiver.url}/base?token=${token}` } },
    });
    await app.telemetry.ready();
    expect(app.telemetry.endpoint).toBe(`${receiver.url}/base/v1/traces?token=${token}`);
    expect((await app.agent.run({ prompt: 'hi' })).status).toBe('completed');
    await app.telemetry.flush();
    expect(receiver.urls).toContain(`/base/v1/traces?token=${token}`);
    const on = app.memoryLog.records.find((r) => r.message === 'telemetry on');
    expect(on?.traces).toBe(`${receiver.url}/base/v1/traces?token=[REDACTED]…cret`);
    // What svc.log writes: every record through the App's redactor.
    expect(JSON.stringify(app.redactor.value(app.memoryLog.records))).not.toContain(token);
  });

  it("a provider base_url's password and key are in no run result, log line or span status", async () => {
    const receiver = await otlpReceiver();
    const app = await makeTestApp({
      config: {
        providers: {
          local: {
            type: 'openai-compat',
            base_url: 'http://puser:PROVURLPW_secret@127.0.0.1:9/v1?api-key=PROVQUERYKEY_secret',
          },
        },
        models: { large: 'local/m1', small: 'local/m1' },
        telemetry: { otlp_endpoint: receiver.url },
      },
    });
    await app.telemetry.ready();
    const result = await app.agent.run({ prompt: 'hi' });
    expect(result.status).toBe('failed');
    await app.telemetry.flush();
    const chat = receiver.spans.find((s) => attr(s, 'gen_ai.operation.name') === 'chat');
    expect(chat, 'a chat span').toBeDefined();
    const outputs = [
      JSON.stringify(result),
      JSON.stringify(app.redactor.value(app.memoryLog.records)),
      receiver.bodies.join('\n'),
    ].join('\n');
    expect(outputs).toContain('[REDACTED]');
    for (const secret of ['PROVURLPW_secret', 'PROVQUERYKEY_secret']) expect(outputs).not.toContain(secret);
  });

  it("an HTTP request with a W3C traceparent is a server span in the caller's trace, its child", async () => {
    const receiver = await otlpReceiver();
    const token = 'svc-test-token-traces-1234';
    const { app } = await agentApp([reply().text('ok')], {
      extraConfig: { telemetry: { otlp_endpoint: receiver.url }, services: { http: { token } } },
    });
    await app.telemetry.ready();
    const hono = createHttpApp(app);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parentId = '00f067aa0ba902b7';
    const response = await hono.request('/v1/sessions', {
      headers: { authorization: `Bearer ${token}`, traceparent: `00-${traceId}-${parentId}-01` },
    });
    expect(response.status).toBe(200);
    await app.telemetry.flush();
    const server = receiver.spans.find((s) => attr(s, 'http.request.method') === 'GET');
    expect(server, 'a server span for the request').toBeDefined();
    expect(server!.traceId).toBe(traceId);
    expect(server!.parentSpanId).toBe(parentId);
    expect(receiver.bodies.join('\n')).not.toContain(token);
  });
});
