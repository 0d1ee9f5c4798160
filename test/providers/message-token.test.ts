// What a prompt message's kept wire bytes hold on to (issue 17 item 4, p-promote): Node 20's V8
// keeps a FinalizationRegistry's targets alive through every scavenge, with all they reach, until
// a full GC. The registry that drops a marked message's bytes watches a token the message holds,
// so the message (and what it reaches) is no target: it dies young when the request lets it go.
import type { LanguageModelV3Prompt } from '@ai-sdk/provider';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openAICompatible } from '../../src/providers/build-request';
import { withPromptMessages } from '../../src/providers/prompt-messages';
import { messageMarker, sendOnce, splicedText } from '../../src/providers/request-body';

const done = `data: ${JSON.stringify({ id: 'c', created: 1, model: 'm1', choices: [{ index: 0, delta: { content: 'ok' }, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`;

/** The objects handed to any FinalizationRegistry's `register` from now on. */
function registrations(): unknown[] {
  const targets: unknown[] = [];
  const register = FinalizationRegistry.prototype.register;
  vi.spyOn(FinalizationRegistry.prototype, 'register').mockImplementation(function (
    this: FinalizationRegistry<unknown>,
    target: WeakKey,
    held: unknown,
    token?: WeakKey,
  ) {
    targets.push(target);
    return register.call(this, target, held, token);
  });
  return targets;
}

/** Whether `from` reaches `to` through own properties (values of plain data, a few levels deep). */
function reaches(from: unknown, to: unknown, depth = 4): boolean {
  if (from === to) return true;
  if (depth === 0 || typeof from !== 'object' || from === null) return false;
  return Object.values(from).some((value) => reaches(value, to, depth - 1));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a marked prompt message is no FinalizationRegistry target', () => {
  it('COMPAT-PERF-450: messageMarker registers a token the message holds, which reaches nothing of the message; the marker still stands for its bytes', () => {
    const targets = registrations();
    const message = { role: 'user', content: [{ type: 'text', text: 'bench request 7' }] };
    const json = JSON.stringify({ role: 'user', content: 'bench request 7' });
    const marker = messageMarker(message, json);
    expect(marker).toBeDefined();
    expect(targets).toHaveLength(1);
    expect(targets[0]).not.toBe(message);
    expect(reaches(targets[0], message)).toBe(false);
    expect(reaches(targets[0], message.content)).toBe(false);
    // The bytes the marker stands for are still spliced in (the message is alive).
    const body = `{"messages":[{"role":"system","content":${JSON.stringify(marker)}}]}`;
    expect(splicedText(body)).toBe(`{"messages":[${json}]}`);
  });

  it('COMPAT-PERF-451: a compat-style model call through withPromptMessages registers no prompt message, and sends the same bytes', async () => {
    const targets = registrations();
    const sent: string[] = [];
    const wire: typeof fetch = async (_input, init) => {
      const body = init?.body;
      sent.push(typeof body === 'string' ? body : Buffer.from(body as Uint8Array).toString('utf8'));
      return new Response(done, { headers: { 'content-type': 'text/event-stream' } });
    };
    const inner = await openAICompatible({ id: 'fake', base_url: 'http://127.0.0.1:9/v1/' }, 'm1', {
      fetch: (input: Parameters<typeof fetch>[0], init?: RequestInit) => sendOnce(wire, input, init ?? {}),
    });
    const model = withPromptMessages(inner);
    const prompt: LanguageModelV3Prompt = [
      { role: 'system', content: 'You are svc.' },
      { role: 'user', content: [{ type: 'text', text: 'bench request 1' }] },
    ];
    const { stream } = await model.doStream({ prompt });
    const reader = stream.getReader();
    while (!(await reader.read()).done) {}
    expect(sent).toHaveLength(1);
    expect(sent[0]).toContain('"content":"You are svc."');
    expect(sent[0]).toContain('bench request 1');
    // Each marked message registered once, by a token: none of the targets is or reaches a message.
    expect(targets.length).toBeGreaterThan(0);
    for (const message of prompt) {
      expect(targets).not.toContain(message);
      for (const target of targets) expect(reaches(target, message)).toBe(false);
    }
  });
});
