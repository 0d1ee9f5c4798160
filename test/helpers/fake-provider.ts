/**
 * The scripted fake provider: a real HTTP server on 127.0.0.1 that speaks the providers' wire
 * formats (OpenAI chat completions, Anthropic messages, Google generateContent; streaming and
 * not) and plays back a script of turns, tool calls included. It records every request, and an
 * unscripted extra call fails the test when it finishes.
 *
 *   const provider = await fakeProvider([reply().toolCall('view', { path: 'a.txt' }), reply().text('done')]);
 *   config: { providers: { fake: { type: 'openai-compat', base_url: provider.url } }, models: { large: 'fake/m1' } }
 *
 * Base URLs: `provider.url` (= openai, `<origin>/v1`), `provider.anthropicUrl` (`<origin>/v1`),
 * `provider.googleUrl` (`<origin>/v1beta`).
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';

export type Wire = 'openai' | 'anthropic' | 'google';

type Step =
  | { kind: 'text'; text: string }
  | { kind: 'reasoning'; text: string }
  | { kind: 'tool'; id: string; name: string; input: unknown };

export interface RecordedRequest {
  wire: Wire;
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  stream: boolean;
}

let toolCounter = 0;

export class Reply {
  steps: Step[] = [];
  usageValue = { input: 10, output: 5 };
  finishReason: 'stop' | 'length' | undefined;
  error?: { status: number; body: unknown; headers?: Record<string, string> };
  hangMs?: number;
  /** Delay before each streamed chunk (ms). */
  chunkDelayMs = 0;
  /** The OpenAI stream's chunks `chunk` (0: the role chunk) that wait for their `until` (`pauseAt`). */
  paused: { chunk: number; until: Promise<unknown> }[] = [];
  streamErrorMessage?: string;

  text(text: string): this {
    this.steps.push({ kind: 'text', text });
    return this;
  }
  reasoning(text: string): this {
    this.steps.push({ kind: 'reasoning', text });
    return this;
  }
  toolCall(name: string, input: unknown, id = `call_${++toolCounter}`): this {
    this.steps.push({ kind: 'tool', id, name, input });
    return this;
  }
  usage(input: number, output: number): this {
    this.usageValue = { input, output };
    return this;
  }
  finish(reason: 'stop' | 'length'): this {
    this.finishReason = reason;
    return this;
  }
  /** Answer with an HTTP error instead (e.g. 429 with `retry-after`, 401). */
  httpError(
    status: number,
    body: unknown = { error: { message: `error ${status}`, type: 'error' } },
    headers?: Record<string, string>,
  ): this {
    this.error = { status, body, headers };
    return this;
  }
  /** Never answer (until the client aborts) — or answer after `ms`. */
  hang(ms = 60_000): this {
    this.hangMs = ms;
    return this;
  }
  /**
   * The OpenAI-compatible stream waits before its chunk `chunk` (0 is the role chunk, 1 the first
   * text piece) until `until` settles: a test's step at a chosen point of the stream, whatever the load.
   * Called again for another chunk, each waits for its own.
   */
  pauseAt(chunk: number, until: Promise<unknown>): this {
    this.paused.push({ chunk, until });
    return this;
  }
  /** Stream the steps slowly. */
  slow(chunkDelayMs: number): this {
    this.chunkDelayMs = chunkDelayMs;
    return this;
  }
  /** Start streaming, then break the stream with an error event. */
  streamError(message: string): this {
    this.streamErrorMessage = message;
    return this;
  }
  get hasToolCalls(): boolean {
    return this.steps.some((s) => s.kind === 'tool');
  }
}

export const reply = () => new Reply();

export type ScriptEntry = Reply | ((request: RecordedRequest) => Reply);

export interface FakeProvider {
  /** OpenAI-compatible base URL (`…/v1`). */
  url: string;
  anthropicUrl: string;
  googleUrl: string;
  origin: string;
  requests: RecordedRequest[];
  /** Requests that arrived after the script ran out. */
  unexpected: RecordedRequest[];
  /**
   * Each model request (a recorded one) once its connection closed: `completed` when its answer
   * was written whole first, `aborted` when the client closed it before (the request destroyed).
   */
  closed: { request: RecordedRequest; outcome: 'completed' | 'aborted' }[];
  push(...entries: ScriptEntry[]): void;
  remaining(): number;
  close(): Promise<void>;
}

export async function fakeProvider(
  script: ScriptEntry[] = [],
  options: { allowExtra?: boolean } = {},
): Promise<FakeProvider> {
  const queue = [...script];
  const requests: RecordedRequest[] = [];
  const unexpected: RecordedRequest[] = [];
  const open = new Set<ServerResponse>();
  const closed: FakeProvider['closed'] = [];

  const server = createServer(async (req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    const raw = await readBody(req);
    let body: any = {};
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {
      body = raw;
    }
    const path = req.url ?? '/';
    const wire: Wire | undefined = path.includes('/chat/completions')
      ? 'openai'
      : path.endsWith('/messages')
        ? 'anthropic'
        : /:(stream)?[gG]enerateContent/.test(path)
          ? 'google'
          : undefined;
    if (req.method === 'GET' && path.endsWith('/models')) {
      json(res, 200, {
        object: 'list',
        data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'fake' }],
      });
      return;
    }
    if (!wire) {
      json(res, 404, { error: { message: `fake provider: no route ${req.method} ${path}` } });
      return;
    }
    const stream = wire === 'google' ? path.includes(':streamGenerateContent') : body?.stream === true;
    const record: RecordedRequest = {
      wire,
      method: req.method ?? 'POST',
      path,
      headers: req.headers,
      body,
      stream,
    };
    requests.push(record);
    res.on('close', () =>
      closed.push({ request: record, outcome: res.writableFinished ? 'completed' : 'aborted' }),
    );
    const entry = queue.shift();
    if (!entry) {
      unexpected.push(record);
      json(res, 500, { error: { message: 'fake provider: unscripted request (the script ran out)' } });
      return;
    }
    const r = typeof entry === 'function' ? entry(record) : entry;
    if (r.hangMs !== undefined) {
      await sleep(r.hangMs, res);
      if (res.writableEnded || res.destroyed) return;
    }
    if (r.error) {
      json(res, r.error.status, r.error.body, r.error.headers);
      return;
    }
    const model =
      wire === 'google' ? (/models\/([^:]+):/.exec(path)?.[1] ?? 'fake') : String(body?.model ?? 'fake');
    try {
      if (wire === 'openai')
        await (stream ? openaiStream(res, r, model, body) : json(res, 200, openaiJson(r, model)));
      else if (wire === 'anthropic')
        await (stream ? anthropicStream(res, r, model) : json(res, 200, anthropicJson(r, model)));
      else await (stream ? googleStream(res, r) : json(res, 200, googleJson(r)));
    } catch {
      // client went away
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const provider: FakeProvider = {
    url: `${origin}/v1`,
    anthropicUrl: `${origin}/v1`,
    googleUrl: `${origin}/v1beta`,
    origin,
    requests,
    unexpected,
    closed,
    push: (...entries) => queue.push(...entries),
    remaining: () => queue.length,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.close(() => resolve());
      }),
  };
  try {
    onTestFinished(async () => {
      await provider.close();
      if (!options.allowExtra && unexpected.length > 0) {
        throw new Error(
          `fake provider got ${unexpected.length} unscripted request(s): ${unexpected.map((u) => u.path).join(', ')}`,
        );
      }
    });
  } catch {
    // created outside a test (beforeAll): the caller closes it
  }
  return provider;
}

// ---- wire formats --------------------------------------------------------------------------

function openaiJson(r: Reply, model: string) {
  const text = r.steps
    .filter((s) => s.kind === 'text')
    .map((s) => (s as { text: string }).text)
    .join('');
  const reasoning = r.steps
    .filter((s) => s.kind === 'reasoning')
    .map((s) => (s as { text: string }).text)
    .join('');
  const tools = r.steps.filter((s): s is Extract<Step, { kind: 'tool' }> => s.kind === 'tool');
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text || null,
          ...(reasoning ? { reasoning_content: reasoning } : {}),
          ...(tools.length
            ? {
                tool_calls: tools.map((t) => ({
                  id: t.id,
                  type: 'function',
                  function: { name: t.name, arguments: JSON.stringify(t.input) },
                })),
              }
            : {}),
        },
        finish_reason: finishOf(r, 'openai'),
      },
    ],
    usage: {
      prompt_tokens: r.usageValue.input,
      completion_tokens: r.usageValue.output,
      total_tokens: r.usageValue.input + r.usageValue.output,
    },
  };
}

async function openaiStream(res: ServerResponse, r: Reply, model: string, body: any) {
  sse(res);
  const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1_700_000_000, model };
  let chunks = 0;
  const send = async (delta: unknown, finish: string | null = null, extra: Record<string, unknown> = {}) => {
    if (r.chunkDelayMs) await sleep(r.chunkDelayMs, res);
    const chunk = chunks++;
    const pause = r.paused.find((p) => p.chunk === chunk);
    if (pause) await pause.until.catch(() => undefined);
    if (res.destroyed) return;
    res.write(
      `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`,
    );
  };
  await send({ role: 'assistant', content: '' });
  let toolIndex = 0;
  for (const step of r.steps) {
    if (step.kind === 'text') for (const piece of split(step.text)) await send({ content: piece });
    else if (step.kind === 'reasoning')
      for (const piece of split(step.text)) await send({ reasoning_content: piece });
    else {
      const args = JSON.stringify(step.input);
      const half = Math.floor(args.length / 2);
      await send({
        tool_calls: [
          {
            index: toolIndex,
            id: step.id,
            type: 'function',
            function: { name: step.name, arguments: args.slice(0, half) },
          },
        ],
      });
      await send({ tool_calls: [{ index: toolIndex, function: { arguments: args.slice(half) } }] });
      toolIndex++;
    }
  }
  if (r.streamErrorMessage) {
    res.write(
      `data: ${JSON.stringify({ error: { message: r.streamErrorMessage, type: 'server_error' } })}\n\n`,
    );
    res.end();
    return;
  }
  const usage = {
    prompt_tokens: r.usageValue.input,
    completion_tokens: r.usageValue.output,
    total_tokens: r.usageValue.input + r.usageValue.output,
  };
  await send({}, finishOf(r, 'openai'), body?.stream_options?.include_usage ? {} : { usage });
  if (body?.stream_options?.include_usage)
    res.write(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

function anthropicJson(r: Reply, model: string) {
  return {
    id: 'msg_fake',
    type: 'message',
    role: 'assistant',
    model,
    content: r.steps.map((s) =>
      s.kind === 'text'
        ? { type: 'text', text: s.text }
        : s.kind === 'reasoning'
          ? { type: 'thinking', thinking: s.text, signature: 'sig' }
          : { type: 'tool_use', id: s.id, name: s.name, input: s.input },
    ),
    stop_reason: finishOf(r, 'anthropic'),
    stop_sequence: null,
    usage: { input_tokens: r.usageValue.input, output_tokens: r.usageValue.output },
  };
}

async function anthropicStream(res: ServerResponse, r: Reply, model: string) {
  sse(res);
  const send = async (type: string, data: Record<string, unknown>) => {
    if (r.chunkDelayMs) await sleep(r.chunkDelayMs, res);
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  };
  await send('message_start', {
    message: {
      id: 'msg_fake',
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      usage: { input_tokens: r.usageValue.input, output_tokens: 0 },
    },
  });
  for (const [index, step] of r.steps.entries()) {
    if (step.kind === 'text') {
      await send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const piece of split(step.text))
        await send('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
    } else if (step.kind === 'reasoning') {
      await send('content_block_start', { index, content_block: { type: 'thinking', thinking: '' } });
      for (const piece of split(step.text))
        await send('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: piece } });
      await send('content_block_delta', { index, delta: { type: 'signature_delta', signature: 'sig' } });
    } else {
      await send('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: step.id, name: step.name, input: {} },
      });
      await send('content_block_delta', {
        index,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(step.input) },
      });
    }
    await send('content_block_stop', { index });
  }
  if (r.streamErrorMessage) {
    await send('error', { error: { type: 'api_error', message: r.streamErrorMessage } });
    res.end();
    return;
  }
  await send('message_delta', {
    delta: { stop_reason: finishOf(r, 'anthropic'), stop_sequence: null },
    usage: { output_tokens: r.usageValue.output },
  });
  await send('message_stop', {});
  res.end();
}

function googleParts(r: Reply) {
  return r.steps.map((s) =>
    s.kind === 'text'
      ? { text: s.text }
      : s.kind === 'reasoning'
        ? { text: s.text, thought: true }
        : { functionCall: { name: s.name, args: s.input } },
  );
}

function googleJson(r: Reply) {
  return {
    candidates: [
      { content: { role: 'model', parts: googleParts(r) }, finishReason: finishOf(r, 'google'), index: 0 },
    ],
    usageMetadata: {
      promptTokenCount: r.usageValue.input,
      candidatesTokenCount: r.usageValue.output,
      totalTokenCount: r.usageValue.input + r.usageValue.output,
    },
  };
}

async function googleStream(res: ServerResponse, r: Reply) {
  sse(res);
  const parts = googleParts(r);
  for (const [i, part] of parts.entries()) {
    if (r.chunkDelayMs) await sleep(r.chunkDelayMs, res);
    const last = i === parts.length - 1;
    res.write(
      `data: ${JSON.stringify({
        candidates: [
          {
            content: { role: 'model', parts: [part] },
            ...(last ? { finishReason: finishOf(r, 'google') } : {}),
            index: 0,
          },
        ],
        ...(last
          ? {
              usageMetadata: {
                promptTokenCount: r.usageValue.input,
                candidatesTokenCount: r.usageValue.output,
                totalTokenCount: r.usageValue.input + r.usageValue.output,
              },
            }
          : {}),
      })}\n\n`,
    );
  }
  if (parts.length === 0) {
    res.write(
      `data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP', index: 0 }] })}\n\n`,
    );
  }
  res.end();
}

function finishOf(r: Reply, wire: Wire): string {
  const tools = r.hasToolCalls;
  if (wire === 'openai') return r.finishReason ?? (tools ? 'tool_calls' : 'stop');
  if (wire === 'anthropic')
    return r.finishReason === 'length' ? 'max_tokens' : tools ? 'tool_use' : 'end_turn';
  return r.finishReason === 'length' ? 'MAX_TOKENS' : 'STOP';
}

// ---- plumbing ------------------------------------------------------------------------------

function split(text: string): string[] {
  if (text.length <= 4) return [text];
  const mid = Math.floor(text.length / 2);
  return [text.slice(0, mid), text.slice(mid)];
}

function sse(res: ServerResponse) {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (data += chunk));
    req.on('end', () => resolve(data));
    req.on('error', reject);
  });
}

function sleep(ms: number, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    res.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** `steps` steps each calling `echo` (`hi 0`, `hi 1`, …; 100 in, 20 out), then the answer `done`. */
export function echoSteps(steps: number): ScriptEntry[] {
  const script: ScriptEntry[] = [];
  for (let i = 0; i < steps; i++)
    script.push(
      reply()
        .toolCall('echo', { text: `hi ${i}` })
        .usage(100, 20),
    );
  script.push(reply().text('done').usage(130, 10));
  return script;
}
