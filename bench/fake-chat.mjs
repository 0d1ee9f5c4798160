// A fake OpenAI-compatible chat server for the whole-process benches: it answers only
// `POST …/chat/completions` (404 otherwise, so no context window is told) with one streamed
// answer per request, made by the bench's `answer(body)`: either `{ text }` or
// `{ call: { name, args, id } }`, with `usage`. Instant, on 127.0.0.1.
import { createServer } from 'node:http';

/** One `data:` line of a chat.completion.chunk. */
function chunk(model, delta, finish = null, extra = {}) {
  const body = { id: 'c', object: 'chat.completion.chunk', created: 0, model, ...extra };
  body.choices = [{ index: 0, delta, finish_reason: finish }];
  return `data: ${JSON.stringify(body)}\n\n`;
}

/**
 * Starts the server. `answer(bodyText)` returns `{ text }` or `{ call: { id, name, args } }` and
 * `usage`; `onRequest()` is told of each chat request as it arrives (before its body).
 */
export function startChatServer({ model = 'fake-model', answer, onRequest }) {
  const server = createServer((req, res) => {
    const chat = req.url?.includes('/chat/completions');
    if (chat) onRequest?.();
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (!chat) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no route"}}');
        return;
      }
      const step = answer(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (step.text !== undefined) {
        res.write(chunk(model, { role: 'assistant', content: step.text }));
        res.write(chunk(model, {}, 'stop', { usage: step.usage }));
      } else {
        const { id, name, args } = step.call;
        const fn = { name, arguments: JSON.stringify(args) };
        res.write(
          chunk(model, { role: 'assistant', tool_calls: [{ index: 0, id, type: 'function', function: fn }] }),
        );
        res.write(chunk(model, {}, 'tool_calls', { usage: step.usage }));
      }
      res.end('data: [DONE]\n\n');
    });
  });
  return new Promise((done) => server.listen(0, '127.0.0.1', () => done(server)));
}
