/**
 * Wire formats the shared fake provider does not speak, for the providers that need them:
 * - Amazon Bedrock Converse (`/model/<id>/converse` JSON, `/converse-stream` AWS event-stream
 *   binary frames with CRC32s),
 * - the OpenAI Responses API (`/responses`, JSON or SSE), used by Hugging Face and the ChatGPT
 *   Codex backend.
 * Each records requests and plays text replies (or an HTTP error) in order.
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { crc32 } from 'node:zlib';
import { onTestFinished } from 'vitest';

export interface WireRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

export type WireReply =
  | { text: string }
  | { status: number; body: unknown; headers?: Record<string, string> };

export interface FakeWire {
  url: string;
  requests: WireRequest[];
  close(): Promise<void>;
}

async function serve(
  handler: (req: WireRequest, res: ServerResponse) => void | Promise<void>,
): Promise<FakeWire> {
  const requests: WireRequest[] = [];
  const server = createServer(async (req, res) => {
    const raw = await read(req);
    let body: any = raw;
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {
      // keep text
    }
    const record = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body };
    requests.push(record);
    await handler(record, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const wire = {
    url,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  onTestFinished(() => wire.close());
  return wire;
}

function read(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (data += d));
    req.on('end', () => resolve(data));
  });
}

function sendError(
  res: ServerResponse,
  reply: { status: number; body: unknown; headers?: Record<string, string> },
) {
  res
    .writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers })
    .end(JSON.stringify(reply.body));
}

// ---- Bedrock Converse ----------------------------------------------------------------------

/** One AWS event-stream frame: prelude (lengths + CRC), string headers, JSON payload, CRC. */
export function eventFrame(eventType: string, payload: unknown): Buffer {
  const headers: [string, string][] = [
    [':event-type', eventType],
    [':content-type', 'application/json'],
    [':message-type', 'event'],
  ];
  const headerBytes = Buffer.concat(
    headers.map(([name, value]) => {
      const n = Buffer.from(name);
      const v = Buffer.from(value);
      const out = Buffer.alloc(1 + n.length + 1 + 2 + v.length);
      out.writeUInt8(n.length, 0);
      n.copy(out, 1);
      out.writeUInt8(7, 1 + n.length);
      out.writeUInt16BE(v.length, 2 + n.length);
      v.copy(out, 4 + n.length);
      return out;
    }),
  );
  const body = Buffer.from(JSON.stringify(payload));
  const total = 12 + headerBytes.length + body.length + 4;
  const prelude = Buffer.alloc(8);
  prelude.writeUInt32BE(total, 0);
  prelude.writeUInt32BE(headerBytes.length, 4);
  const preludeCrc = Buffer.alloc(4);
  preludeCrc.writeUInt32BE(crc32(prelude) >>> 0, 0);
  const withoutCrc = Buffer.concat([prelude, preludeCrc, headerBytes, body]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(withoutCrc) >>> 0, 0);
  return Buffer.concat([withoutCrc, crc]);
}

export async function fakeBedrock(replies: WireReply[]): Promise<FakeWire> {
  const queue = [...replies];
  return serve(async (req, res) => {
    const reply = queue.shift() ?? { status: 500, body: { message: 'fake bedrock: script ran out' } };
    if ('status' in reply) return sendError(res, reply);
    const usage = { inputTokens: 11, outputTokens: 4, totalTokens: 15 };
    if (req.path.endsWith('/converse')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          output: { message: { role: 'assistant', content: [{ text: reply.text }] } },
          stopReason: 'end_turn',
          usage,
          metrics: { latencyMs: 5 },
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
    res.write(eventFrame('messageStart', { role: 'assistant' }));
    for (const piece of reply.text.split(/(?<= )/)) {
      res.write(eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: piece } }));
    }
    res.write(eventFrame('contentBlockStop', { contentBlockIndex: 0 }));
    res.write(eventFrame('messageStop', { stopReason: 'end_turn' }));
    res.end(eventFrame('metadata', { usage, metrics: { latencyMs: 5 } }));
  });
}

// ---- Responses API -------------------------------------------------------------------------

export async function fakeResponses(replies: WireReply[]): Promise<FakeWire> {
  const queue = [...replies];
  return serve(async (req, res) => {
    const reply = queue.shift() ?? {
      status: 500,
      body: { error: { message: 'fake responses: script ran out' } },
    };
    if ('status' in reply) return sendError(res, reply);
    const model = String(req.body?.model ?? 'fake');
    const usage = {
      input_tokens: 9,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 3,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 12,
    };
    const message = {
      type: 'message',
      id: 'msg_1',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: reply.text, annotations: [] }],
    };
    const response = {
      id: 'resp_1',
      object: 'response',
      created_at: 1_700_000_000,
      model,
      status: 'completed',
      error: null,
      instructions: null,
      max_output_tokens: null,
      metadata: null,
      tool_choice: 'auto',
      tools: [],
      temperature: 1,
      top_p: 1,
      incomplete_details: null,
      usage,
      output: [message],
      output_text: reply.text,
      service_tier: 'default',
    };
    if (req.body?.stream !== true) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(response));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let seq = 0;
    const send = (data: Record<string, unknown>) =>
      res.write(`data: ${JSON.stringify({ ...data, sequence_number: seq++ })}\n\n`);
    send({
      type: 'response.created',
      response: { ...response, status: 'in_progress', output: [], usage: null },
    });
    send({
      type: 'response.output_item.added',
      output_index: 0,
      item: { ...message, status: 'in_progress', content: [] },
    });
    for (const piece of reply.text.split(/(?<= )/)) {
      send({
        type: 'response.output_text.delta',
        item_id: 'msg_1',
        output_index: 0,
        content_index: 0,
        delta: piece,
        logprobs: [],
      });
    }
    send({ type: 'response.output_item.done', output_index: 0, item: message });
    send({ type: 'response.completed', response });
    res.end();
  });
}
