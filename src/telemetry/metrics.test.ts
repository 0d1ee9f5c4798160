/**
 * Metrics recorded before prom-client loads (issue 17): the figures count once it loads, and a
 * waiting recording keeps none of the call's prompt or answer. A service builds the registry at
 * start-up (`build`), and what was recorded before and after counts once.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { ModelCallEnd } from '../providers/types';
import { createMetrics } from './metrics';

const END: ModelCallEnd = {
  provider: 'fake',
  model: 'm1',
  input_tokens: 20,
  output_tokens: 6,
  reasoning_tokens: 0,
  cached_input_tokens: 0,
  cost: 0.5,
  ttft_ms: 12,
  duration_ms: 40,
  status: 'ok',
  output: 'the answer',
};

function isolatedGc(): () => void {
  setFlagsFromString('--expose-gc');
  const gc: unknown = runInNewContext('gc');
  if (typeof gc !== 'function') throw new Error('no gc');
  return () => gc();
}

describe('metrics before prom-client loads', () => {
  it('counts a model call recorded while waiting', async () => {
    const metrics = createMetrics();
    const start = {
      purpose: 'agent_step',
      session_id: null,
      run_id: null,
      provider: 'fake',
      model: 'm1',
    } as const;
    metrics.modelCall({ ...start, prompt: [] }, END);
    const text = await metrics.render();
    expect(text).toContain(
      'svc_model_calls_total{provider="fake",model="m1",purpose="agent_step",status="ok"} 1',
    );
    expect(text).toMatch(/svc_model_tokens_total\{[^}]*direction="input"\} 20/);
    expect(text).toContain('svc_model_cost_usd_total{provider="fake",model="m1",purpose="agent_step"} 0.5');
  });

  it('keeps neither the prompt nor the answer of a waiting recording', async () => {
    const gc = isolatedGc();
    const metrics = createMetrics();
    const record = () => {
      const prompt = [{ role: 'user', content: 'x'.repeat(1000) }];
      const end = { ...END, output: 'y'.repeat(1000) };
      metrics.modelCall(
        { purpose: 'agent_step', session_id: null, run_id: null, provider: 'fake', model: 'm1', prompt },
        end,
      );
      return [new WeakRef(prompt), new WeakRef(end)];
    };
    const refs = record();
    await new Promise((r) => setTimeout(r, 0));
    gc();
    expect(refs.map((ref) => ref.deref())).toEqual([undefined, undefined]);
  });

  it('COMPAT-PERF-170: build() makes the registry now; recordings before and after it count once', async () => {
    const metrics = createMetrics();
    metrics.runEnded('completed');
    metrics.build();
    metrics.build();
    metrics.runEnded('completed');
    metrics.toolCall('view', 'ok', 0.01);
    const text = await metrics.render();
    expect(text).toContain('svc_runs_total{status="completed"} 2');
    expect(text).toContain('svc_tool_calls_total{tool="view",status="ok"} 1');
    metrics.runEnded('failed');
    expect(await metrics.render()).toContain('svc_runs_total{status="failed"} 1');
  });
});
