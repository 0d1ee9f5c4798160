/**
 * The number of `messages` one chat-completions request may send (`options.openai_compat.max_messages`,
 * default 2000). A new session imports each message in the request's transaction, the server
 * answering nobody meanwhile: found by probing the built server, 40k messages (a 1.24 MiB body,
 * well under the byte limit) held it 48 s and 320k more than 9 minutes. Past the limit a request
 * is a 413 with the flat body naming the limit and what to do, before anything is created; at the
 * limit it is served, its history imported whole.
 */
import { describe, expect, it } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { compatServer } from './compat-helpers';

/** `count` messages: alternating user and assistant turns, an assistant's, then the user's last. */
function conversation(count: number) {
  const messages: { role: string; content: string }[] = [];
  for (let i = 0; i < count - 1; i++)
    messages.push({ role: (count - i) % 2 === 0 ? 'assistant' : 'user', content: `m${i}` });
  messages.push({ role: 'user', content: 'last' });
  return { model: 'fake/m1', messages };
}

describe('compat messages limit', () => {
  it('COMPAT-LIMIT-1: more messages than the default limit is a 413 naming it, nothing created or run', async () => {
    const { app, post, provider } = await compatServer([reply().text('never')]);
    const response = await post('/v1/chat/completions', conversation(2001));
    expect(response.status).toBe(413);
    expect(response.headers.get('x-should-retry')).toBe('false');
    const body = (await response.json()) as { error: string; code: number };
    expect(body.code).toBe(413);
    expect(body.error).toBe(
      'messages: 2001 messages, over the limit of 2000 (options.openai_compat.max_messages); ' +
        'send only the recent part of the conversation, or bind a session with X-Svc-Session-Id and send only the new messages',
    );
    expect(provider.requests).toHaveLength(0);
    expect(await app.sessions.count()).toBe(0);
  });

  it('COMPAT-LIMIT-2: the configured limit is read; a request at it is served, its history imported whole', async () => {
    const { app, post, provider } = await compatServer([reply().text('served')], {
      compat: { max_messages: 50 },
    });
    const over = await post('/v1/chat/completions', conversation(51));
    expect(over.status).toBe(413);
    expect(((await over.json()) as { error: string }).error).toMatch(/51 messages, over the limit of 50/);
    const at = await post('/v1/chat/completions', conversation(50));
    expect(at.status).toBe(200);
    expect(((await at.json()) as any).choices[0].message.content).toBe('served');
    expect(provider.requests).toHaveLength(1);
    const [session] = await app.sessions.list();
    const texts = (await app.sessions.messages(session.id)).map((m) => JSON.stringify(m.parts));
    // 49 imported, the last one the run's prompt.
    expect(texts.map((t) => /"text":"([^"]*)"/.exec(t)?.[1])).toEqual([
      ...Array.from({ length: 49 }, (_, i) => `m${i}`),
      'last',
      'served',
    ]);
  });
});
