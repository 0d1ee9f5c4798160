/**
 * When a compat stream opens (src/surfaces/http/compat/stream-answer.ts): a run queued behind
 * another run of its session still has its head and role chunk at once, before the first run ends.
 * p-overlap (docs/performance-log.md) tried writing the head only after the run's model request and
 * dropped it (slower in the compat bench); this pins what such a change must keep.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { compatServer, sseData } from './compat-helpers';

const restore: (() => void)[] = [];
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});

const body = (content: string) => ({ model: 'fake/m1', stream: true, messages: [{ role: 'user', content }] });

describe('compat stream: when the head is written', () => {
  it('ENGINE-CPU-167: a run queued behind another run of its session opens its stream at once (role chunk before the first run ends)', async () => {
    // A provider that holds its first answer until released; later ones answer at once.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let asked = 0;
    let firstAsked = () => {};
    const asking = new Promise<void>((resolve) => {
      firstAsked = resolve;
    });
    const provider: Server = createServer((req, res) => {
      req.resume();
      // Other asks (the context window probe) get a 404.
      if (!req.url?.endsWith('/chat/completions')) {
        res.writeHead(404).end();
        return;
      }
      const nth = ++asked;
      req.on('end', async () => {
        if (nth === 1) {
          firstAsked();
          await held;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const base = { id: `c${nth}`, object: 'chat.completion.chunk', created: 0, model: 'm1' };
        const chunk = (delta: object, finish: string | null = null) =>
          `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        res.write(chunk({ role: 'assistant', content: `answer ${nth}` }));
        res.write(chunk({}, 'stop'));
        res.end('data: [DONE]\n\n');
      });
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    restore.push(() => {
      provider.closeAllConnections();
      provider.close();
    });
    const base = `http://127.0.0.1:${(provider.address() as AddressInfo).port}/v1`;
    const { post } = await compatServer([], {
      extraConfig: { providers: { fake: { type: 'openai-compat', base_url: base } } },
    });
    const first = await post('/v1/chat/completions', body('first'));
    const sessionId = first.headers.get('x-svc-session-id')!;
    // The first run holds its session: its model has its request.
    await asking;
    const queued = await post('/v1/chat/completions', body('second'), { 'x-svc-session-id': sessionId });
    expect(queued.status).toBe(200);
    const reader = queued.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('"role":"assistant"')) {
      const { value, done } = await reader.read();
      expect(done).toBe(false);
      text += decoder.decode(value, { stream: true });
    }
    // The first run still holds the session: the queued one has not asked its model.
    expect(asked).toBe(1);
    release();
    expect((await sseData(first)).join('')).toContain('answer 1');
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(text).toContain('answer 2');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });
});
