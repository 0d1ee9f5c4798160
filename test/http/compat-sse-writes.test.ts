/**
 * The socket writes of a streamed compat answer (src/surfaces/http/compat/stream-answer.ts): the
 * text deltas of one model read leave in one write (COMPAT-PERF-65), over real sockets, with a
 * provider whose whole answer comes in one read.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { compatServer, sseData } from './compat-helpers';

const restore: (() => void)[] = [];
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});

/** The text of every socket write that carries svc's `chat.completion.chunk`s (the provider's have no `logprobs`), in order. */
function chunkWrites(): string[] {
  const writes: string[] = [];
  const proto = Socket.prototype as unknown as Record<string, (...args: any[]) => unknown>;
  // `_writev` (several buffered chunks) ends in `_writeGeneric(true, chunks)` too.
  const generic = proto._writeGeneric;
  proto._writeGeneric = function (this: Socket, writev_: boolean, data: any, ...rest: unknown[]) {
    const text = writev_ ? (data as { chunk: unknown }[]).map((d) => String(d.chunk)).join('') : String(data);
    if (text.includes('"logprobs":null')) writes.push(text);
    return generic.call(this, writev_, data, ...rest);
  };
  restore.push(() => {
    proto._writeGeneric = generic;
  });
  return writes;
}

/** A provider answering every request with `deltas` as text chunks, a finish and `[DONE]`, in one write. */
async function oneReadProvider(deltas: string[]): Promise<string> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const base = { id: 'c1', object: 'chat.completion.chunk', created: 0, model: 'm1' };
      const chunk = (delta: object, finish: string | null = null) =>
        `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      const text = deltas.map((content, i) => chunk(i === 0 ? { role: 'assistant', content } : { content }));
      res.end(`${text.join('')}${chunk({}, 'stop')}data: [DONE]\n\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  restore.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

const body = (content: string) => ({ model: 'fake/m1', stream: true, messages: [{ role: 'user', content }] });

describe('compat answer socket writes', () => {
  it('COMPAT-PERF-65: the text deltas of one model read leave in one socket write, the answer unchanged', async () => {
    const url = await oneReadProvider(['Hello ', 'from the ', 'fake provider.']);
    const { post } = await compatServer([], {
      extraConfig: { providers: { fake: { type: 'openai-compat', base_url: url } } },
    });
    // A first request warms the path (model resolution, the provider's connection).
    expect((await sseData(await post('/v1/chat/completions', body('warm')))).at(-1)).toBe('[DONE]');
    const writes = chunkWrites();
    const data = await sseData(await post('/v1/chat/completions', body('count')));
    const texts = data
      .filter((d) => d !== '[DONE]')
      .map((d) => (JSON.parse(d) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content)
      .filter((c) => c);
    expect(texts).toEqual(['Hello ', 'from the ', 'fake provider.']);
    expect(data.at(-1)).toBe('[DONE]');
    // The head with the role chunk, the read's three text chunks, the finish with `[DONE]` and the end.
    const withText = writes.filter(
      (w) => w.includes('"content":"Hello "') || w.includes('"content":"from the "'),
    );
    expect(withText).toHaveLength(1);
    expect(withText[0]).toContain('"content":"fake provider."');
    expect(writes).toHaveLength(3);
  });
});
