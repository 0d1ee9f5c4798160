/**
 * svc's step driver pushes its parts (src/agent/step-driver.ts `drive`): no async generator
 * between the model's parts and the run. The parts are the ones `fullStream` gives, in order;
 * the driver waits only for a sink's promise (back-pressure), a sink's failure ends the drive with
 * the model's stream returned and no part after it, and a `for await` reader that leaves early
 * still cancels the model's stream before its `return()` answers. The driver's own promises a
 * part are counted (test/helpers/promises.ts).
 */
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import * as ai from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import type { StepPart } from '../../src/agent/step-driver';
import { resultWithParts, type StreamParts } from '../../src/providers/stream-parts';
import { driven } from '../helpers/model-parts';
import { countPromises } from '../helpers/promises';

type Chunk = LanguageModelV3StreamPart;

const finish = (reason: 'stop' | 'tool-calls'): Chunk => ({
  type: 'finish',
  finishReason: { unified: reason, raw: reason },
  usage: {
    inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 5, text: 5, reasoning: undefined },
  },
});
const answer = (deltas: number): Chunk[] => [
  { type: 'text-start', id: 't' },
  ...Array.from({ length: deltas }, (_, i) => ({ type: 'text-delta' as const, id: 't', delta: `d${i} ` })),
  { type: 'text-end', id: 't' },
  finish('stop'),
];
const toolStep: Chunk[] = [
  { type: 'tool-call', toolCallId: 'c1', toolName: 'echo', input: '{"text":"hi"}' },
  finish('tool-calls'),
];

const tools = {
  echo: ai.tool({
    description: 'echo the text',
    inputSchema: ai.jsonSchema({ type: 'object', properties: { text: { type: 'string' } } }),
    execute: async (input: unknown) => `echo: ${(input as { text: string }).text}`,
  }),
} as ai.ToolSet;

/** A model whose steps' parts come through an iterator (as the lean provider's), each read one resolved promise. */
function iterating(steps: Chunk[][]) {
  const seen = { reads: 0, returns: 0 };
  let n = 0;
  const model = new MockLanguageModelV3({
    doStream: async () => {
      const script: Chunk[] = [{ type: 'stream-start', warnings: [] }, ...(steps[n++] ?? answer(1))];
      let i = 0;
      const parts: StreamParts = {
        next: () => {
          seen.reads++;
          return Promise.resolve(
            i < script.length
              ? { done: false, value: script[i++] as Chunk }
              : { done: true, value: undefined },
          );
        },
        return: () => {
          seen.returns++;
          return Promise.resolve({ done: true, value: undefined });
        },
      };
      return resultWithParts(parts, {});
    },
  });
  return { model, seen };
}

/** The driver over `model` with the file's tools (three steps unless said). */
const drivenWithTools = (model: MockLanguageModelV3, maxSteps = 3) => driven(model, { tools, maxSteps });

const kinds = (parts: StepPart[]) => parts.map((p) => (p.type === 'text-delta' ? `delta:${p.text}` : p.type));

describe('the step driver pushes its parts', () => {
  it('ENGINE-CPU-175: drive hands the same parts as fullStream, in order, for a tool step and an answer', async () => {
    const pushed: StepPart[] = [];
    await drivenWithTools(iterating([toolStep, answer(2)]).model).drive((part) => {
      pushed.push(part);
      return undefined;
    });
    const pulled: StepPart[] = [];
    for await (const part of drivenWithTools(iterating([toolStep, answer(2)]).model).fullStream)
      pulled.push(part);
    expect(kinds(pushed)).toEqual([
      'start-step',
      'tool-call',
      'tool-result',
      'finish-step',
      'start-step',
      'delta:d0 ',
      'delta:d1 ',
      'text-end',
      'finish-step',
      'finish',
    ]);
    expect(pulled).toEqual(pushed);
  });

  it('ENGINE-CPU-176: a part costs at most 2 promises, the model’s read included, when the sink answers none (the two generators: 8)', async () => {
    // The model's own read is one promise a part; the driver adds only its await of it.
    const drive = (deltas: number) =>
      countPromises(() => drivenWithTools(iterating([answer(deltas)]).model, 1).drive(() => undefined));
    await drive(1); // the SDK's internals imported once
    const few = await drive(10);
    const many = await drive(110);
    const perPart = (many - few) / 100;
    expect(perPart).toBeLessThanOrEqual(2);
  });

  it('ENGINE-CPU-177: the driver waits on a sink’s promise: no part and no read of the model before it settles', async () => {
    const { model, seen } = iterating([answer(3)]);
    const handed: string[] = [];
    let release: () => void = () => {};
    const drive = drivenWithTools(model, 1).drive((part) => {
      handed.push(part.type);
      if (part.type !== 'text-delta' || handed.filter((t) => t === 'text-delta').length > 1) return undefined;
      return new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    for (let i = 0; i < 20; i++) await Promise.resolve();
    const readsWhileWaiting = seen.reads;
    expect(handed).toEqual(['start-step', 'text-delta']);
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(seen.reads).toBe(readsWhileWaiting);
    release();
    await drive;
    expect(handed).toEqual([
      'start-step',
      'text-delta',
      'text-delta',
      'text-delta',
      'text-end',
      'finish-step',
      'finish',
    ]);
  });

  it('ENGINE-CPU-178: a sink that throws or rejects ends the drive with its error: no part after it, no error part, the model’s stream returned', async () => {
    for (const fail of ['throw', 'reject'] as const) {
      const { model, seen } = iterating([answer(3)]);
      const handed: string[] = [];
      const outcome = await drivenWithTools(model, 1)
        .drive((part) => {
          handed.push(part.type);
          if (part.type !== 'text-delta') return undefined;
          if (fail === 'throw') throw new Error('recorder failed');
          return Promise.reject(new Error('recorder failed'));
        })
        .then(
          () => 'resolved',
          (error: Error) => error.message,
        );
      expect(outcome, fail).toBe('recorder failed');
      expect(handed, fail).toEqual(['start-step', 'text-delta']);
      expect(seen.returns, fail).toBe(1);
    }
  });

  it('ENGINE-CPU-179: a for-await reader that leaves mid-step returns the model’s stream before its return() answers; no tool runs', async () => {
    const { model, seen } = iterating([[...answer(1).slice(0, 2), ...toolStep]]);
    let ran = 0;
    const counted = { ...tools, echo: { ...tools.echo, execute: async () => `ran ${++ran}` } } as ai.ToolSet;
    const stream = driven(model, { tools: counted, maxSteps: 3 }).fullStream;
    const read: string[] = [];
    for await (const part of stream) {
      read.push(part.type);
      if (part.type === 'text-delta') break;
    }
    expect(read).toEqual(['start-step', 'text-delta']);
    expect(seen.returns).toBe(1);
    expect(ran).toBe(0);
  });
});
