/**
 * Arrays on the compat request's path are pushed, not made by `map`/`filter` and read again
 * (issue 17 item 3, p-jit): TurboFan's inlined `map` answers a holey array where the builtin
 * answers a packed one, so a function that maps and then reads the result again (a `filter`, a
 * `join`, a spread, `.length`) deopted at its first optimized call and was compiled a second time.
 * These pin that the functions stay optimized past that call, with V8's natives syntax (as
 * test/store/run-row-shape.test.ts does); no timing.
 */
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { agentKinds } from '../../src/agent/agent-kinds';
import type { Config } from '../../src/config/schema';
import { parseChatRequest } from '../../src/surfaces/http/compat/request';

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

/**
 * Runs `call` in the interpreter (often enough that its callbacks get feedback too), then once
 * optimized; whether `f` is still optimized after.
 */
function staysOptimized(f: Fn, call: () => unknown): boolean {
  const v8 = natives();
  v8.prepare(f);
  for (let i = 0; i < 50; i++) call();
  v8.optimizeOnNextCall(f);
  call();
  return (v8.status(f) & OPTIMIZED) !== 0;
}

describe('arrays pushed on the compat path', () => {
  it('ENGINE-CPU-130: parseChatRequest stays optimized after its first optimized call, with the same messages', () => {
    const body = JSON.stringify({
      model: 'fake/m1',
      stream: true,
      messages: [{ role: 'system', content: 's' }, 7, { role: 'user', content: 'hi' }],
    });
    expect(parseChatRequest(body).messages).toEqual([
      { role: 'system', text: 's' },
      { role: 'user', text: 'hi' },
    ]);
    expect(staysOptimized(parseChatRequest, () => parseChatRequest(body))).toBe(true);
  });

  it('ENGINE-CPU-131: agentKinds stays optimized after its first optimized call, built-ins first, then config-only kinds by id', () => {
    const config = { agents: { zeta: { prompt: 'z' }, alpha: { prompt: 'a' } } } as unknown as Config;
    const ids = agentKinds(config).map((kind) => kind.id);
    expect(ids.slice(-2)).toEqual(['alpha', 'zeta']);
    expect(ids.indexOf('alpha')).toBeGreaterThan(0);
    expect(staysOptimized(agentKinds, () => agentKinds(config))).toBe(true);
  });
});
