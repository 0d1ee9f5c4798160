/**
 * svc's step driver against the AI SDK's `streamText` on the same scripted model: the parts the
 * run records (./run-stream.ts `recordPart`) and what the model receives on every step (prompt,
 * tools, tool choice) are the same, for tool calls that run, fail, name an unknown tool or carry
 * input that does not parse, for the step limit, and for a last step told to answer without tools.
 */
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import * as ai from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { resultWithParts } from '../providers/stream-parts';
import { driveSteps, type StepSettings } from './step-driver';

type Chunk = LanguageModelV3StreamPart;

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
const finish = (reason: 'stop' | 'tool-calls', input = 10, output = 5): Chunk => ({
  type: 'finish',
  finishReason: { unified: reason, raw: reason },
  usage: usage(input, output),
});
const text = (id: string, value: string): Chunk[] => [
  { type: 'text-start', id },
  { type: 'text-delta', id, delta: value },
  { type: 'text-end', id },
];
const call = (id: string, toolName: string, input: string): Chunk => ({
  type: 'tool-call',
  toolCallId: id,
  toolName,
  input,
});

function scripted(steps: Chunk[][]) {
  let n = 0;
  return new MockLanguageModelV3({
    doStream: async () => ({
      stream: convertArrayToReadableStream([
        { type: 'stream-start', warnings: [] },
        ...(steps[n++] ?? [...text('t', 'out of script'), finish('stop')]),
      ]),
    }),
  });
}

const tools = {
  echo: ai.tool({
    description: 'echo the text',
    inputSchema: ai.jsonSchema({ type: 'object', properties: { text: { type: 'string' } } }),
    execute: async (input: unknown, { experimental_context }) =>
      `${(experimental_context as { tag: string }).tag}: ${(input as { text: string }).text}`,
  }),
  fails: ai.tool({
    description: 'always fails',
    inputSchema: ai.jsonSchema<{ text?: string }>({ type: 'object' }),
    execute: async (): Promise<string> => {
      throw new Error('fails: not today');
    },
  }),
  hidden: ai.tool({
    description: 'not active',
    inputSchema: ai.jsonSchema<{ text?: string }>({ type: 'object' }),
    execute: async () => 'hidden ran',
  }),
} as ai.ToolSet;

const RECORDED = new Set([
  'start-step',
  'text-delta',
  'text-end',
  'reasoning-delta',
  'reasoning-end',
  'tool-call',
  'tool-result',
  'tool-error',
  'finish-step',
  'error',
]);

/**
 * The results of calls that ran side by side in any order (they race; the run's tool bridge
 * orders them in svc): each run of consecutive results sorted by call id.
 */
function settled(parts: Recorded[]) {
  const out: typeof parts = [];
  let run: typeof parts = [];
  const flush = () => {
    out.push(...run.sort((a, b) => String(a.id).localeCompare(String(b.id))));
    run = [];
  };
  for (const part of parts) {
    if (part.type === 'tool-result' || part.type === 'tool-error') run.push(part);
    else {
      flush();
      out.push(part);
    }
  }
  flush();
  return out;
}

type Part = { type: string; toolCallId?: string; [key: string]: unknown };
type Recorded = { type: string; id?: string; [key: string]: unknown };

/** The fields of a part the run reads. */
function recorded(part: Part): Recorded {
  const error = (e: unknown) =>
    e instanceof Error ? { name: e.name, message: e.message } : { message: String(e) };
  switch (part.type) {
    case 'text-delta':
    case 'reasoning-delta':
      return { type: part.type, text: part.text };
    case 'tool-call':
      return {
        type: part.type,
        id: part.toolCallId,
        tool: part.toolName,
        input: part.input,
        invalid: !!part.invalid,
      };
    case 'tool-result':
      return { type: part.type, id: part.toolCallId, tool: part.toolName, output: part.output };
    case 'tool-error':
      return { type: part.type, id: part.toolCallId, tool: part.toolName, error: error(part.error) };
    case 'finish-step':
      return { type: part.type, finishReason: part.finishReason, usage: part.usage };
    case 'error':
      return { type: part.type, error: error(part.error) };
    default:
      return { type: part.type };
  }
}

interface Case {
  steps: Chunk[][];
  maxSteps: number;
  /** The settings of each step (prepareStep's result). */
  settings?: (stepNumber: number) => StepSettings;
}

/** svc's driver over `model` on the one-message prompt the tests use. */
function ownDriver(
  model: MockLanguageModelV3,
  maxSteps: number,
  settings: (stepNumber: number) => StepSettings = () => ({}),
) {
  return driveSteps({
    ai,
    model,
    system: 'be brief',
    messages: [{ role: 'user', content: 'go' }],
    tools,
    context: { tag: 'ctx' },
    maxSteps,
    signal: new AbortController().signal,
    maxRetries: 0,
    prepareStep: async (stepNumber) => settings(stepNumber),
  });
}

async function both({ steps, maxSteps, settings = () => ({ activeTools: ['echo', 'fails'] }) }: Case) {
  const messages: ai.ModelMessage[] = [{ role: 'user', content: 'go' }];
  const context = { tag: 'ctx' };
  const sdkModel = scripted(steps);
  const sdk = ai.streamText({
    model: sdkModel,
    system: 'be brief',
    messages,
    tools,
    experimental_context: context,
    stopWhen: ai.stepCountIs(maxSteps),
    maxRetries: 0,
    prepareStep: async ({ stepNumber }) => settings(stepNumber),
    onError: () => {},
  });
  const sdkParts: Recorded[] = [];
  for await (const part of sdk.fullStream)
    if (RECORDED.has(part.type)) sdkParts.push(recorded(part as never));
  const ownModel = scripted(steps);
  const own = driveSteps({
    ai,
    model: ownModel,
    system: 'be brief',
    messages,
    tools,
    context,
    maxSteps,
    signal: new AbortController().signal,
    maxRetries: 0,
    prepareStep: async (stepNumber) => settings(stepNumber),
  });
  const ownParts: Recorded[] = [];
  for await (const part of own.fullStream)
    if (RECORDED.has(part.type)) ownParts.push(recorded(part as never));
  const sent = (model: MockLanguageModelV3) =>
    model.doStreamCalls.map((c) => ({ prompt: c.prompt, tools: c.tools, toolChoice: c.toolChoice }));
  return {
    sdkParts: settled(sdkParts),
    ownParts: settled(ownParts),
    sdkSent: sent(sdkModel),
    ownSent: sent(ownModel),
  };
}

describe('step driver', () => {
  it('ENGINE-STEP-1: tool calls that run, fail, name an unknown or inactive tool or do not parse: the same parts and requests as streamText', async () => {
    const r = await both({
      maxSteps: 5,
      steps: [
        [
          ...text('a', 'Looking.'),
          call('c1', 'echo', '{"text":"hi"}'),
          call('c2', 'nope', '{}'),
          call('c3', 'echo', '{bad'),
          call('c4', 'fails', ''),
          call('c5', 'hidden', '{}'),
          finish('tool-calls', 100, 20),
        ],
        [...text('b', 'Done.'), finish('stop', 130, 8)],
      ],
    });
    expect(r.ownParts).toEqual(r.sdkParts);
    expect(r.ownSent).toEqual(r.sdkSent);
    // What the comparison covers: two steps, each kind of result.
    expect(r.ownSent).toHaveLength(2);
    expect(r.ownParts).toContainEqual({ type: 'tool-result', id: 'c1', tool: 'echo', output: 'ctx: hi' });
    expect(r.ownParts.filter((p) => (p as { type: string }).type === 'tool-error')).toHaveLength(4);
  });

  it('ENGINE-STEP-2: the step limit ends the stream after the last step’s tool results', async () => {
    const step = [call('c1', 'echo', '{"text":"again"}'), finish('tool-calls')];
    const r = await both({ maxSteps: 2, steps: [step, step, step] });
    expect(r.ownParts).toEqual(r.sdkParts);
    expect(r.ownSent).toEqual(r.sdkSent);
    expect(r.ownSent).toHaveLength(2);
  });

  it('ENGINE-STEP-3: a last step told to answer without tools that calls one anyway is a tool-choice violation, its call not run', async () => {
    const r = await both({
      maxSteps: 2,
      settings: (n) =>
        n === 1 ? { activeTools: ['echo'], toolChoice: 'none', system: 'be brief\n\nanswer now' } : {},
      steps: [
        [call('c1', 'echo', '{"text":"one"}'), finish('tool-calls')],
        [...text('x', 'Sure.'), call('c2', 'echo', '{"text":"two"}'), finish('tool-calls')],
      ],
    });
    expect(r.ownParts).toEqual(r.sdkParts);
    expect(r.ownSent).toEqual(r.sdkSent);
    expect(r.ownParts).toContainEqual({
      type: 'error',
      error: expect.objectContaining({ name: 'AI_ToolChoiceViolationError' }),
    });
    expect(r.ownParts).not.toContainEqual(expect.objectContaining({ type: 'tool-result', id: 'c2' }));
  });

  it('ENGINE-STEP-4: a stream that ends without output is an error, and a model error ends the step', async () => {
    const r = await both({
      maxSteps: 3,
      steps: [[{ type: 'error', error: new Error('overloaded') }, finish('stop')]],
    });
    expect(r.ownParts).toEqual(r.sdkParts);
    const empty = await both({ maxSteps: 3, steps: [[]] });
    expect(empty.ownParts).toEqual(empty.sdkParts);
    expect(empty.ownParts).toContainEqual({
      type: 'error',
      error: expect.objectContaining({ name: 'AI_NoOutputGeneratedError' }),
    });
  });

  it('ENGINE-STEP-5: a text id the provider reuses in one step is a new part for the run, as in streamText', async () => {
    const model = scripted([[...text('0', 'First.'), ...text('0', 'Second.'), finish('stop')]]);
    const own = ownDriver(model, 1);
    const ids: string[] = [];
    for await (const part of own.fullStream) if (part.type === 'text-delta') ids.push(part.id);
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
  });
  it('ENGINE-STEP-6: each step sends the earlier steps’ prompt messages as the same objects, the system message too', async () => {
    const step = [call('c1', 'echo', '{"text":"again"}'), finish('tool-calls')];
    const model = scripted([step, step, step]);
    const own = ownDriver(model, 3);
    for await (const _part of own.fullStream) {
    }
    const prompts = model.doStreamCalls.map((c) => c.prompt);
    expect(prompts.map((p) => p.length)).toEqual([2, 4, 6]);
    // The provider keys each message's encoded bytes by the object (../providers/prompt-messages.ts).
    for (let n = 1; n < prompts.length; n++)
      for (const [i, message] of prompts[n - 1].entries()) expect(prompts[n][i]).toBe(message);
  });

  it('ENGINE-STEP-7: a model offering its parts as an iterator is read through it (its stream never made), the same parts', async () => {
    const steps = [
      [call('c1', 'echo', '{"text":"hi"}'), finish('tool-calls')],
      [...text('t', 'done'), finish('stop')],
    ];
    let n = 0;
    const iterating = new MockLanguageModelV3({
      doStream: async () => {
        const script: Chunk[] = [{ type: 'stream-start', warnings: [] }, ...(steps[n++] ?? [])];
        const result = resultWithParts(
          (async function* () {
            yield* script;
            return undefined;
          })(),
          {},
        );
        Object.defineProperty(result, 'stream', {
          get() {
            throw new Error('the stream was read');
          },
        });
        return result;
      },
    });
    const read = async (model: MockLanguageModelV3) => {
      const parts: Recorded[] = [];
      for await (const part of ownDriver(model, 3).fullStream)
        if (RECORDED.has(part.type)) parts.push(recorded(part as never));
      return settled(parts);
    };
    const viaIterator = await read(iterating);
    expect(JSON.stringify(viaIterator)).not.toContain('the stream was read');
    expect(viaIterator).toEqual(await read(scripted(steps)));
  });
  it('ENGINE-CPU-20: the same active-tool list goes over the tool set once, across steps and streams; each step sends the same tools', async () => {
    // Counts how often the driver walks the tool set's names (`Object.keys`, `name in tools`).
    let walks = 0;
    let lookups = 0;
    const counted = new Proxy(tools, {
      ownKeys(target) {
        walks++;
        return Reflect.ownKeys(target);
      },
      has(target, key) {
        lookups++;
        return Reflect.has(target, key);
      },
    });
    const active = ['echo'];
    const drive = async () => {
      const model = scripted([
        [call('c1', 'echo', '{"text":"a"}'), finish('tool-calls')],
        [call('c2', 'echo', '{"text":"b"}'), finish('tool-calls')],
        [...text('t', 'done'), finish('stop')],
      ]);
      const driven = driveSteps({
        ai,
        model,
        system: 'be brief',
        messages: [{ role: 'user', content: 'go' }],
        tools: counted,
        context: { tag: 'ctx' },
        maxSteps: 3,
        signal: new AbortController().signal,
        maxRetries: 0,
        prepareStep: async () => ({ activeTools: active }),
      });
      const parts: string[] = [];
      for await (const part of driven.fullStream) parts.push(part.type);
      return { parts, sent: model.doStreamCalls.map((c) => c.tools?.map((t) => t.name)) };
    };
    const first = await drive();
    const second = await drive();
    expect(first.sent).toEqual([['echo'], ['echo'], ['echo']]);
    expect(second).toEqual(first);
    expect(first.parts.filter((type) => type === 'tool-result')).toHaveLength(2);
    // One walk and one lookup for the list (the first step), and a lookup of each call's tool
    // name as the call is parsed (two calls a stream).
    expect({ walks, lookups }).toEqual({ walks: 1, lookups: 1 + 2 * 2 });
  });
});
