/**
 * The compat request's last svc functions that deopted in the bench's rounds (issue 17 item 3,
 * p-deopt; `bench/compat-rounds.mjs` with `--trace-deopt-verbose`): each chained `map`/`filter`
 * results into another array builtin (`filter(Boolean)`, `join`), and TurboFan's inlined `map`
 * answers a holey array (its `filter` an empty one of another map) where the builtins answer
 * packed ones, so each deopted ("wrong map") at its first optimized call and was compiled twice
 * (p-jit's pattern). These pin that they stay optimized past that call, with V8's natives syntax
 * (as test/http/compat-parse-optimized.test.ts does), and answer what they did; no timing.
 * `assembleSystemPrompt` (the prompt stack pushed, not spread and filtered) is counted by the
 * bench's trace only: it reads git and the workspace, too slow to call 50 times here.
 */
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { StepRecorderCore } from '../../src/agent/step-recorder-core';
import { planConversation } from '../../src/surfaces/http/compat/conversation';
import type { CompatMessage } from '../../src/surfaces/http/compat/request';

type Fn = Function;
function natives() {
  setFlagsFromString('--allow-natives-syntax');
  return {
    prepare: new Function('f', '%PrepareFunctionForOptimization(f)') as (f: Fn) => void,
    optimizeOnNextCall: new Function('f', '%OptimizeFunctionOnNextCall(f)') as (f: Fn) => void,
    status: new Function('f', 'return %GetOptimizationStatus(f)') as (f: Fn) => number,
  };
}
const OPTIMIZED = 1 << 4; // V8's OptimizationStatus::kOptimized

/** Runs `call` in the interpreter, then once optimized; whether `f` is still optimized after. */
function staysOptimized(f: Fn, call: () => unknown): boolean {
  const v8 = natives();
  v8.prepare(f);
  for (let i = 0; i < 50; i++) call();
  v8.optimizeOnNextCall(f);
  call();
  return (v8.status(f) & OPTIMIZED) !== 0;
}

describe('the compat path’s functions stay optimized', () => {
  it('COMPAT-PERF-462: planConversation stays optimized after its first optimized call, with the same plan', () => {
    const messages: CompatMessage[] = [
      { role: 'system', text: ' be brief ' },
      { role: 'system', text: '  ' },
      { role: 'user', text: 'earlier' },
      { role: 'assistant', text: 'answer', tool_calls: [] },
      { role: 'user', text: ' first ' },
      { role: 'user', text: '' },
      { role: 'user', text: 'second' },
    ];
    const plan = planConversation(messages);
    expect(plan.system).toBe('be brief');
    expect(plan.prompt).toBe('first\n\nsecond');
    expect(plan.continued).toBe(false);
    expect(plan.history.map((h) => h.role)).toEqual(['user', 'assistant']);
    // The bench's request: one user message, no system.
    const lone: CompatMessage[] = [{ role: 'user', text: 'bench request' }];
    expect(planConversation(lone)).toMatchObject({ system: '', prompt: 'bench request', history: [] });
    expect(staysOptimized(planConversation, () => planConversation(lone))).toBe(true);
  });

  it('COMPAT-PERF-463: a step’s text (the recorder’s `text`) stays optimized after its first optimized call, its text parts in order', () => {
    const text = Object.getOwnPropertyDescriptor(StepRecorderCore.prototype, 'text')?.get as Fn;
    const step = {
      parts: [
        { type: 'text', text: 'Hello' },
        { type: 'tool-call', tool_call_id: 'c1', tool: 'read', input: {} },
        { type: 'text', text: ', world' },
      ],
    };
    expect(text.call(step)).toBe('Hello, world');
    expect(text.call({ parts: [] })).toBe('');
    expect(staysOptimized(text, () => text.call(step))).toBe(true);
  });
});
