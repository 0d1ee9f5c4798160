/**
 * The compat surface with the official `openai` npm client (6.x: the newest major that runs on
 * Node 20) against a real server on 127.0.0.1:0 with the fake provider behind it. Pins:
 * - a non-streaming completion is one chat.completion envelope with one choice and usage;
 * - a streaming completion is chat.completion.chunk SSE the client's stream helper assembles,
 *   ending with [DONE]; include_usage adds a usage chunk with empty choices before [DONE];
 * - prior assistant tool_calls and tool results in `messages` reach the model (they shape the turn);
 * - the client raises its own error classes for 400 (BadRequestError), 401
 *   (AuthenticationError) and 404 (NotFoundError);
 * - every ignored field is accepted and changes nothing upstream; n: 3 gives one choice;
 *   max_tokens: 1 gives the normal answer;
 * - model routing: an explicit selector, the default aliases, unknown → 400, fallback_model.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { compatServer, sseData } from './compat-helpers';

describe('POST /v1/chat/completions with the openai client', () => {
  it('GEN-11 COMPAT-14: answers a non-streaming completion with one JSON envelope', async () => {
    const { client, provider, app } = await compatServer([reply().text('Hello from svc.').usage(12, 4)]);
    const completion = await client.chat.completions.create({
      model: 'fake/m1',
      messages: [{ role: 'user', content: 'Say hello.' }],
    });
    expect(completion).toMatchObject({
      object: 'chat.completion',
      model: 'fake/m1',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Hello from svc.' }, finish_reason: 'stop' },
      ],
      usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 },
    });
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.choices).toHaveLength(1);
    // COMPAT-08/11: the resolver's model served the turn, in an svc session with the prompt.
    expect(provider.requests).toHaveLength(1);
    expect(provider.requests[0].body.model).toBe('m1');
    const last = provider.requests[0].body.messages.at(-1);
    expect(last).toMatchObject({ role: 'user' });
    expect(JSON.stringify(last.content)).toContain('Say hello.');
    const sessions = await app.sessions.list();
    expect(sessions).toHaveLength(1);
    expect(sessions[0].metadata).toEqual({ openai_compat: { request_id: completion.id } });
  });

  it('COMPAT-12 COMPAT-13: streams chat.completion.chunk SSE the client assembles, ending with [DONE]', async () => {
    const { client, post } = await compatServer([reply().text('Streaming works.'), reply().text('Again.')]);
    const stream = client.chat.completions.stream({
      model: 'fake/m1',
      messages: [{ role: 'user', content: 'Stream please.' }],
    });
    const deltas: string[] = [];
    stream.on('content', (delta) => deltas.push(delta));
    const final = await stream.finalChatCompletion();
    expect(final.choices[0].message).toMatchObject({ role: 'assistant', content: 'Streaming works.' });
    expect(final.choices[0].finish_reason).toBe('stop');
    expect(deltas.join('')).toBe('Streaming works.');

    const raw = await post('/v1/chat/completions', {
      model: 'fake/m1',
      stream: true,
      messages: [{ role: 'user', content: 'Raw.' }],
    });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const data = await sseData(raw);
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    expect(chunks[0].choices[0].delta).toMatchObject({ role: 'assistant' });
    for (const chunk of chunks)
      expect(chunk).toMatchObject({ object: 'chat.completion.chunk', model: 'fake/m1' });
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');
    expect(chunks.map((c) => c.choices[0].delta.content ?? '').join('')).toBe('Again.');
    expect(chunks.every((c) => !('usage' in c))).toBe(true);
    // Each chunk is compact JSON in OpenAI's key order (stream-answer.ts builds it around the delta).
    for (const [i, chunk] of chunks.entries()) {
      expect(data[i]).toBe(JSON.stringify(chunk));
      expect(Object.keys(chunk)).toEqual([
        'id',
        'object',
        'created',
        'model',
        'system_fingerprint',
        'choices',
      ]);
      expect(Object.keys(chunk.choices[0])).toEqual(['index', 'delta', 'logprobs', 'finish_reason']);
    }
  });

  it('COMPAT-15: with include_usage a usage chunk with empty choices comes before [DONE]', async () => {
    const { client, post } = await compatServer([
      reply().text('Counted.').usage(30, 7),
      reply().text('x').usage(3, 1),
    ]);
    const stream = await client.chat.completions.create({
      model: 'fake/m1',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Count.' }],
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({ prompt_tokens: 30, completion_tokens: 7, total_tokens: 37 });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);

    const raw = await sseData(
      await post('/v1/chat/completions', {
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'Count again.' }],
      }),
    );
    expect(raw.at(-1)).toBe('[DONE]');
    for (const data of raw.slice(0, -2)) {
      expect(data).toBe(JSON.stringify(JSON.parse(data)));
      expect(Object.keys(JSON.parse(data)).at(-1)).toBe('usage');
    }
    expect(JSON.parse(raw.at(-2)!)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 1 },
    });
  });

  it('COMPAT-01 COMPAT-16: prior assistant tool_calls and tool results in history reach the model', async () => {
    const { client, provider } = await compatServer([reply().text('The file says 42.')]);
    const completion = await client.chat.completions.create({
      model: 'fake/m1',
      messages: [
        { role: 'system', content: 'Answer tersely.' },
        { role: 'user', content: 'What is in answer.txt?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_a1',
              type: 'function',
              function: { name: 'view', arguments: '{"path":"answer.txt"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_a1', content: '1\t42' },
        { role: 'user', content: 'So what is it?' },
      ],
    });
    expect(completion.choices[0].message.content).toBe('The file says 42.');
    const sent = provider.requests[0].body;
    const roles = sent.messages.map((m: { role: string }) => m.role);
    expect(roles).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
    expect(sent.messages[2].tool_calls[0]).toMatchObject({
      id: 'call_a1',
      type: 'function',
      function: { name: 'view', arguments: '{"path":"answer.txt"}' },
    });
    expect(sent.messages[3]).toMatchObject({ role: 'tool', tool_call_id: 'call_a1', content: '1\t42' });
    // The client's system message is part of the run's system prompt.
    expect(sent.messages[0].content).toContain('Answer tersely.');
  });

  it('COMPAT-09 COMPAT-10 COMPAT-26: the client raises BadRequestError for the three request-level 400s', async () => {
    const { client, post } = await compatServer([]);
    const unknown = await client.chat.completions
      .create({ model: 'nosuch/model-x', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.BadRequestError);
    expect((unknown as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    const empty = await client.chat.completions
      .create({ model: 'fake/m1', messages: [] })
      .catch((e: unknown) => e);
    expect(empty).toBeInstanceOf(OpenAI.BadRequestError);

    for (const [body, message] of [
      [{ messages: [] }, 'messages: required and must be a non-empty array'],
      [{ model: 'fake/m1' }, 'messages: required and must be a non-empty array'],
      ['{"messages": [', 'invalid JSON body'],
    ] as const) {
      const response = await post('/v1/chat/completions', body);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: message, code: 400 });
    }
    const bogus = await post('/v1/chat/completions', {
      model: 'bogus-model',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(bogus.status).toBe(400);
    const body = (await bogus.json()) as { error: string; code: number };
    expect(body.code).toBe(400);
    expect(body.error).toMatch(/^model: /);
  });

  it('AUTH-42 COMPAT-28: the client raises AuthenticationError for 401 and NotFoundError for 404', async () => {
    const { server, client } = await compatServer([]);
    const wrong = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'wrong-token', maxRetries: 0 });
    const denied = await wrong.chat.completions
      .create({ model: 'fake/m1', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((denied as InstanceType<typeof OpenAI.APIError>).status).toBe(401);
    const missing = await client.embeddings.create({ model: 'fake/m1', input: 'x' }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    const files = await client.files.list().catch((e: unknown) => e);
    expect(files).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('COMPAT-18 COMPAT-19 COMPAT-21 COMPAT-22 COMPAT-27: every ignored field is accepted and changes nothing upstream', async () => {
    const { client, provider } = await compatServer([reply().text('plain'), reply().text('plain')]);
    const messages = [{ role: 'user' as const, content: 'Same question.' }];
    const plain = await client.chat.completions.create({ model: 'fake/m1', messages });
    const everything = await client.chat.completions.create({
      model: 'fake/m1',
      messages,
      temperature: 1.7,
      top_p: 0.1,
      n: 3,
      max_tokens: 1,
      max_completion_tokens: 1,
      presence_penalty: 1,
      frequency_penalty: -1,
      stop: ['plain'],
      seed: 7,
      logprobs: true,
      top_logprobs: 3,
      logit_bias: { '50256': -100 },
      response_format: { type: 'json_object' },
      tools: [{ type: 'function', function: { name: 'client_only_tool', parameters: { type: 'object' } } }],
      tool_choice: 'required',
      parallel_tool_calls: false,
      user: 'someone',
      service_tier: 'flex',
      prediction: { type: 'content', content: 'x' },
      audio: { voice: 'alloy', format: 'mp3' },
      modalities: ['text', 'audio'],
      metadata: { k: 'v' },
      store: true,
    } as never);
    // COMPAT-20: n: 3 → one choice; LIM-05: max_tokens: 1 → the normal answer.
    expect((everything as OpenAI.Chat.Completions.ChatCompletion).choices).toHaveLength(1);
    expect((everything as OpenAI.Chat.Completions.ChatCompletion).choices[0].message.content).toBe('plain');
    expect(plain.choices[0].message.content).toBe('plain');
    // The upstream requests are identical: the ignored fields had no effect.
    expect(provider.requests[1].body).toEqual(provider.requests[0].body);
    const upstreamTools = (provider.requests[1].body.tools ?? []).map((t: any) => t.function.name);
    expect(upstreamTools).not.toContain('client_only_tool');
    expect(provider.requests[1].body.max_tokens).toBeUndefined();
    expect(provider.requests[1].body.temperature).toBeUndefined();
  });

  it('COMPAT-20 LIM-05: n: 3 gives one choice and max_tokens: 1 gives a normal-length answer', async () => {
    const answer = 'A normal-length answer that is much longer than one token.';
    const { client } = await compatServer([reply().text(answer)]);
    const completion = await client.chat.completions.create({
      model: 'fake/m1',
      n: 3,
      max_tokens: 1,
      messages: [{ role: 'user', content: 'Long answer please.' }],
    });
    expect(completion.choices).toHaveLength(1);
    expect(completion.choices[0].message.content).toBe(answer);
  });

  it('COMPAT-08: routes default aliases to the default model and unknown models to fallback_model', async () => {
    const { post, provider } = await compatServer([reply().text('a'), reply().text('b'), reply().text('c')], {
      compat: { fallback_model: 'fake/m-fallback' },
    });
    for (const model of [undefined, 'svc', 'nosuch/thing']) {
      const response = await post('/v1/chat/completions', {
        model,
        messages: [{ role: 'user', content: 'x' }],
      });
      expect(response.status, await response.clone().text()).toBe(200);
    }
    expect(provider.requests.map((r) => r.body.model)).toEqual(['m1', 'm1', 'm-fallback']);
  });
});
