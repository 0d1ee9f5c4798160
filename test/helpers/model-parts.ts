/**
 * The model stream's test frames, shared by the step driver's and the metered model's tests
 * (test/agent/step-driver-push.test.ts, test/providers/ready-parts.test.ts, metered-parts.test.ts).
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import * as ai from 'ai';
import { driveSteps, type StepDriverOptions } from '../../src/agent/step-driver';
import { MeteredLanguageModel } from '../../src/providers/metered-model';
import { resultWithParts, type StreamParts, streamParts } from '../../src/providers/stream-parts';
import type { ModelCallEnd } from '../../src/providers/types';

/** svc's step driver over `model` on a one-message prompt: no tools, one step, no retries, unless `options` says. */
export function driven(model: LanguageModelV3, options: Partial<StepDriverOptions> = {}) {
  return driveSteps({
    ai,
    model,
    system: 'be brief',
    messages: [{ role: 'user', content: 'go' }],
    tools: {},
    context: {},
    maxSteps: 1,
    signal: new AbortController().signal,
    maxRetries: 0,
    prepareStep: async () => ({}),
    ...options,
  });
}

/** The metered model over a model answering `inner`: its parts iterator and the calls it recorded. */
export async function meteredParts(inner: StreamParts) {
  const ends: ModelCallEnd[] = [];
  const model = new MeteredLanguageModel({
    inner: {
      specificationVersion: 'v3',
      provider: 'fake',
      modelId: 'm1',
      supportedUrls: {},
      doGenerate: () => Promise.reject(new Error('not used')),
      doStream: async () => resultWithParts(inner, {}),
    },
    sink: { start: () => ({ end: async (end) => void ends.push(end) }) },
    purpose: 'agent_step',
    current: () => 'fake/m1',
    priceOf: () => ({ cost_per_1m_in: 1, cost_per_1m_out: 2 }),
    now: () => 0,
  });
  const parts = streamParts(await model.doStream({ prompt: [] }));
  if (!parts) throw new Error('the metered result offers no parts iterator');
  return { parts, ends };
}
