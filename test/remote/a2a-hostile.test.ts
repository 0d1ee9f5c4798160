/**
 * Delegation against hostile A2A agents (plain node:http servers on 127.0.0.1:0). Pins:
 * - a configured remote's token goes only to its own origin: a card naming another origin for
 *   its JSON-RPC url gets message/send, tasks/get and tasks/cancel without it;
 * - an answer is read only up to the size cap, also when it comes chunked (no content-length);
 * - a capability is matched only against configured and deployed agents (a card fetched once by
 *   card_url never wins), and the prompt names the agent and origin it resolved to;
 * - the CLI text of a delegation carries none of the remote's escape sequences or control characters;
 * - no A2A request goes to a link-local or cloud metadata address: a card naming one for its
 *   JSON-RPC url is refused before any request there, and a name that resolves to one at connect
 *   (DNS rebinding: another address to the check before) is refused at connect.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { App } from '../../src/app';
import { fetchAgentCard, rpcCall } from '../../src/remote/a2a-client';
import { invokeTool } from '../../src/tools/core/call-tool';
import type { PermissionRequest } from '../../src/tools/core/types';
import { a2aDelegate } from '../../src/tools/remote';
import { makeTestApp } from '../helpers/make-test-app';

interface Seen {
  method: string;
  path: string;
  auth?: string;
  rpc?: string;
}

interface Agent {
  url: string;
  seen: Seen[];
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

async function agent(handler: Handler): Promise<Agent> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      let rpc: string | undefined;
      try {
        rpc = JSON.parse(body).method;
      } catch {}
      seen.push({ method: req.method ?? '', path: req.url ?? '', auth: req.headers.authorization, rpc });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const json = (res: ServerResponse, value: unknown, status = 200) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
};

const card = (name: string, rpcUrl: string, skill: Record<string, unknown>) => ({
  name,
  description: 'an agent',
  url: rpcUrl,
  preferredTransport: 'JSONRPC',
  protocolVersion: '0.3.0',
  skills: [skill],
});

const task = (state: string, text: string) => ({
  kind: 'task',
  id: 'rt-1',
  contextId: 'ctx-1',
  status: {
    state,
    message: { kind: 'message', role: 'agent', messageId: 'm1', parts: [{ kind: 'text', text }] },
  },
  artifacts: state === 'completed' ? [{ artifactId: 'a1', parts: [{ kind: 'text', text }] }] : [],
});

/** An agent serving its card and answering JSON-RPC: `answer(method, body)` gives the result. */
const rpcAgent = (cardOf: (origin: string) => unknown, answer: (method: string, body: string) => unknown) =>
  agent((req, res, body) => {
    const origin = `http://${req.headers.host}`;
    if (req.url?.startsWith('/.well-known/')) return json(res, cardOf(origin));
    if (req.url !== '/a2a') return json(res, {}, 404);
    const message = JSON.parse(body) as { id: string; method: string };
    const result = answer(message.method, body);
    if (result === 401) return json(res, { error: 'unauthorized' }, 401);
    json(res, { jsonrpc: '2.0', id: message.id, result });
  });

async function appWith(remotes: Record<string, { url: string; token?: string }>): Promise<App> {
  return makeTestApp({ config: { a2a: { remotes } } });
}

const call = (app: App, input: unknown, asks: PermissionRequest[] = [], name = 'a2a_delegate') =>
  invokeTool(app, name, input, {
    surface: 'cli',
    sessionId: 'ses_test',
    ask: async (request) => {
      asks.push(request);
    },
  }) as Promise<any>;

describe('A2A delegation to hostile agents', () => {
  it("sends a remote's token only to its configured origin, never to the origin its card names", async () => {
    let gets = 0;
    const rpcHost = await rpcAgent(
      () => ({}),
      (method, body) => {
        if (body.includes('need-auth')) return 401;
        if (method === 'message/send') return task('working', 'started');
        if (method === 'tasks/get') return task(++gets === 1 ? 'completed' : 'working', 'done remotely');
        return task('canceled', 'stopped');
      },
    );
    const cardHost = await rpcAgent(
      () => card('builder', `${rpcHost.url}/a2a`, { id: 'build', tags: ['build'] }),
      () => ({}),
    );
    const app = await appWith({ builder: { url: cardHost.url, token: 'tok-SECRET-builder' } });

    // message/send then tasks/get polls.
    const done = await call(app, { agent_name: 'builder', message: 'hi', timeout_seconds: 30 });
    expect(done).toMatchObject({ state: 'completed', text: 'done remotely' });
    // A task left running: checked again (tasks/get) and cancelled (tasks/cancel).
    const running = await call(app, { agent_name: 'builder', message: 'again', wait: false });
    expect(running).toMatchObject({ state: 'working' });
    await call(app, { task_id: running.task_id, wait: false });
    expect(await call(app, { task_id: running.task_id }, [], 'delete_a2a_task')).toMatchObject({
      cancelled: true,
    });
    expect(rpcHost.seen.map((s) => s.rpc)).toEqual([
      'message/send',
      'tasks/get',
      'message/send',
      'tasks/get',
      'tasks/cancel',
    ]);
    expect(rpcHost.seen.filter((s) => s.auth !== undefined)).toEqual([]);
    // An agent that needs the token there is refused with the reason and the next step.
    await expect(call(app, { agent_name: 'builder', message: 'need-auth' })).rejects.toThrow(
      `the token is only sent to ${cardHost.url}`,
    );
    expect(rpcHost.seen.at(-1)).toMatchObject({ rpc: 'message/send', auth: undefined });
    // The card itself is fetched from the configured origin, with the token.
    expect(cardHost.seen.length).toBeGreaterThan(0);
    for (const seen of cardHost.seen) expect(seen.auth).toBe('Bearer tok-SECRET-builder');
  }, 30_000);

  it('reads a chunked answer only up to the cap and names the remote', async () => {
    let written = 0;
    let closed = false;
    const total = 64 * 1024 * 1024;
    const huge = await agent((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }); // no content-length: chunked
      res.on('close', () => {
        closed = true;
      });
      const chunk = 'x'.repeat(64 * 1024);
      res.write('{"name":"big","url":"/a2a","description":"');
      const pump = () => {
        while (written < total && !closed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (!closed) res.end('"}');
      };
      pump();
    });
    await expect(fetchAgentCard(`${huge.url}/card.json`, { fetch, maxBytes: 256 * 1024 })).rejects.toThrow(
      `the answer of ${huge.url} is over the 262144-byte cap for A2A answers`,
    );
    // The read stopped at the cap: the server never got to write the whole body.
    await expect.poll(() => closed, { timeout: 10_000 }).toBe(true);
    expect(written).toBeLessThan(total);
  }, 30_000);

  it('matches a capability only against configured agents and names the resolved agent in the prompt', async () => {
    const answered = (name: string) => (method: string) =>
      method === 'message/send' ? task('completed', `${name} answered`) : {};
    const builder = await rpcAgent(
      (origin) =>
        card('svc-builder', `${origin}/a2a`, {
          id: 'lint',
          name: 'lint',
          description: 'checks code review style',
        }),
      answered('builder'),
    );
    const stranger = await rpcAgent(
      (origin) => card('code review', `${origin}/a2a`, { id: 'review', tags: ['code', 'review'] }),
      answered('stranger'),
    );
    const app = await appWith({ builder: { url: builder.url, token: 'tok-builder-0123' } });
    const asks: PermissionRequest[] = [];

    // The stranger's card becomes known through a delegation by card URL...
    const byUrl = await call(app, { card_url: stranger.url, message: 'hello' }, asks);
    expect(byUrl).toMatchObject({ text: 'stranger answered' });
    expect(asks[0]).toMatchObject({ scope: `a2a:${stranger.url}` });
    expect(stranger.seen.every((s) => s.auth === undefined)).toBe(true);

    // ...but a capability still goes to the configured agent, and the prompt says which.
    const byCapability = await call(app, { capability: 'code review', message: 'review it' }, asks);
    expect(byCapability).toMatchObject({ text: 'builder answered', agent: { name: 'svc-builder' } });
    expect(asks[1].title).toContain(
      `delegate to remote agent "builder" at ${builder.url} for capability "code review"`,
    );
    expect(asks[1]).toMatchObject({
      scope: `a2a:builder@${builder.url}`,
      details: { agent_name: 'builder', origin: builder.url, card_name: 'svc-builder' },
    });
    expect(stranger.seen.filter((s) => s.rpc === 'message/send')).toHaveLength(1);

    // By name: the same agent, the same grant scope.
    await call(app, { agent_name: 'builder', message: 'again' }, asks);
    expect(asks[2]).toMatchObject({ scope: `a2a:builder@${builder.url}` });
  }, 30_000);

  it("removes the remote's escape sequences and control characters from the CLI text and errors", async () => {
    const evil =
      'ok \u001b]52;c;ZWNobyBwd25lZA==\u0007\u001b[2J\u001b[31mRED\u001b[0m \u202eevil\u2067\u007f\u009b1m\r\nnext\tline';
    const remote = await rpcAgent(
      (origin) => card('svc-evil', `${origin}/a2a`, { id: 'x' }),
      () => task('completed', evil),
    );
    const app = await appWith({ evil: { url: remote.url } });
    const result = await call(app, { agent_name: 'evil', message: 'hi' });
    const cli = a2aDelegate.surfaces?.cli;
    const text = (Array.isArray(cli) ? cli[0] : cli)?.text?.(app.redactor.value(result), {}) ?? '';
    expect(text).toContain('ok RED <U+202E>evil<U+2067>\nnext\tline');
    expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    // A remote's words quoted in an error are escaped too.
    const broken = await agent((_req, res) => {
      res.writeHead(500);
      res.end('boom \u001b[2J\u0007');
    });
    const error = await call(app, { card_url: broken.url, message: 'hi' }).catch((e: Error) => e);
    expect((error as Error).message).toMatch(/answered 500: boom $/);
  }, 30_000);
  it('A2A-GUARD-1: a card naming a metadata address for its JSON-RPC url is refused, nothing sent there', async () => {
    const cardHost = await rpcAgent(
      () => card('builder', 'http://169.254.169.254/latest/meta-data/', { id: 'build', tags: ['build'] }),
      () => ({}),
    );
    const app = await appWith({ builder: { url: cardHost.url, token: 'tok-SECRET-builder' } });
    const refused = await call(app, { agent_name: 'builder', message: 'hi', timeout_seconds: 5 }).then(
      () => undefined,
      (error: Error & { code?: string; details?: Record<string, unknown> }) => error,
    );
    expect(refused?.message).toContain('169.254.169.254, a link-local or cloud metadata address');
    expect(refused?.code).toBe('forbidden');
    expect(refused?.details).toMatchObject({ reason: 'blocked_address', address: '169.254.169.254' });
    expect(refused?.message).not.toContain('tok-SECRET');
    // The card was read (from the configured origin); the JSON-RPC call never left.
    expect(cardHost.seen.map((seen) => seen.path)).toContain('/.well-known/agent-card.json');
    expect(cardHost.seen.filter((seen) => seen.rpc)).toEqual([]);
  }, 30_000);

  it('A2A-GUARD-2: a name that resolves to a metadata address only at connect (DNS rebinding) is refused there', async () => {
    const target = await rpcAgent(
      () => ({}),
      () => task('completed', 'reached'),
    );
    const port = new URL(target.url).port;
    // The check before the request is answered 127.0.0.1 (the agent), the connection's own lookup
    // 169.254.169.254: what connects is what is checked.
    let lookups = 0;
    const lookup = async () => [{ address: ++lookups === 1 ? '127.0.0.1' : '169.254.169.254' }];
    const http = { fetch: globalThis.fetch, lookup };
    const refused = await rpcCall(`http://agent.rebind.test:${port}/a2a`, 'message/send', {}, http).then(
      () => undefined,
      (error: Error & { code?: string }) => error,
    );
    expect(lookups).toBe(2);
    expect(refused?.code).toBe('forbidden');
    expect(refused?.message).toContain('agent.rebind.test, which resolves to 169.254.169.254');
    expect(target.seen).toEqual([]);
    // A name answered the agent's address both times reaches it.
    const reached = await rpcCall(
      `http://agent.ok.test:${port}/a2a`,
      'message/send',
      {},
      {
        fetch: globalThis.fetch,
        lookup: async () => [{ address: '127.0.0.1' }],
      },
    );
    expect(reached).toMatchObject({ status: { state: 'completed' } });
    expect(target.seen.map((seen) => seen.rpc)).toEqual(['message/send']);
  });
});
