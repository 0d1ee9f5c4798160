/**
 * Objects a compat request builds on its path are literals, not `{ ...a, more }` (issue 17 item 3,
 * p-sqlprofile): on Node 20 (V8 11.3) every property defined after a spread goes through V8's
 * runtime (`DefineKeyedOwnPropertyInLiteral`, `DefineNamedOwnIC_Miss`) and the object gets a map
 * of its own, a new one each call (≈ 1 µs a property, and every reader of the objects meets a new
 * map). The first few calls of a site still share maps (V8's clone IC is not yet fast): from
 * about the eighth each spread answers a map of its own. These pin, with V8's natives syntax (as
 * test/http/compat-parse-optimized.test.ts does), that the last two of WARM calls answer objects of
 * one map, and that the objects are the ones the spreads made: the
 * same keys, in the same order, with the same values. No timing.
 */
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import type { AgentHost } from '../../src/agent/deps';
import { runResult } from '../../src/agent/session-runtime';
import { closingUpdates } from '../../src/agent/step-held-result';
import { readiness } from '../../src/providers/readiness';
import type { AgentRun } from '../../src/runs/types';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';

/** Calls a site makes before its last two are compared (V8 goes to its fast clone after ≈ 8). */
const WARM = 30;

/** The last two answers of WARM calls of `make`. */
async function lastTwo<T>(make: (i: number) => T | Promise<T>): Promise<[T, T]> {
  const made: T[] = [];
  for (let i = 0; i < WARM; i++) made.push(await make(i));
  return [made[WARM - 2], made[WARM - 1]];
}

function sameMap(): (a: object, b: object) => boolean {
  setFlagsFromString('--allow-natives-syntax');
  return new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;
}

const finishedRun = (id: string, status: AgentRun['status'] = 'completed'): AgentRun =>
  ({
    id,
    session_id: `s-${id}`,
    parent_run_id: null,
    family_session_id: `s-${id}`,
    status,
    reason: null,
    error: null,
    failure: null,
    steps: 1,
    usage: { input_tokens: 3, output_tokens: 2 },
    cost: 0,
    model: 'fake/m1',
    agent: 'build',
    started_at: 1000,
    finished_at: 1250,
    result_message_id: null,
  }) as unknown as AgentRun;

describe('objects of one map on the compat path', () => {
  it('COMPAT-PERF-270: a run’s result (with and without its text) is one map for every run, its keys in the answer’s order', async () => {
    const host = {
      runs: { events: async () => [], takeAppended: () => [] },
      sessions: { getMessage: async () => undefined },
    } as unknown as AgentHost;
    const same = sameMap();
    const [a, b] = await lastTwo((i) =>
      runResult(host, `r${i}`, finishedRun(`r${i}`, i === WARM - 1 ? 'failed' : 'completed'), false),
    );
    expect(same(a, b)).toBe(true);
    expect(Object.keys(a)).toEqual([
      'run_id',
      'session_id',
      'parent_run_id',
      'family_session_id',
      'status',
      'reason',
      'error',
      'failure',
      'refused',
      'steps',
      'usage',
      'cost',
      'model',
      'agent',
      'started_at',
      'finished_at',
      'duration_ms',
    ]);
    expect(a).toMatchObject({ run_id: `r${WARM - 2}`, status: 'completed', refused: null, duration_ms: 250 });
    expect(b).toMatchObject({ run_id: `r${WARM - 1}`, status: 'failed', refused: null, duration_ms: 250 });
    const [c, d] = await lastTwo((i) => runResult(host, `t${i}`, finishedRun(`t${i}`)));
    expect(same(c, d)).toBe(true);
    // `text` right after `refused`, as the JSON answers always had it.
    expect(Object.keys(c).slice(8, 11)).toEqual(['refused', 'text', 'steps']);
    expect(c.text).toBe('');
  });

  // A parity pin (passes on the base too: there the spread came after literal properties, which
  // keeps one map, but its last property still went through the runtime): the literals answer what
  // `{ mode, agent, phase, ...overrides, policies }` answered.
  it('COMPAT-PERF-271: the funnel context a run’s step asks for is one map every call; an override wins, `yolo` only when given', async () => {
    const { app } = await agentApp([reply().text('unused')]);
    try {
      const session = await app.sessions.create({ title: 'maps' });
      const same = sameMap();
      const given = { mode: 'build', phase: undefined, agent: 'build', yolo: false, policies: [] };
      const [a, b] = await lastTwo((i) =>
        app.funnelContext(session.id, i === WARM - 1 ? { ...given, mode: 'plan' } : given),
      );
      expect(same(a, b)).toBe(true);
      expect(Object.keys(a)).toEqual(['mode', 'agent', 'phase', 'yolo', 'policies']);
      expect(b).toMatchObject({ mode: 'plan', agent: 'build', phase: undefined, yolo: false });
      // Without overrides: the session's own mode and agent, no `yolo` key.
      const own = await app.funnelContext(session.id);
      expect(Object.keys(own)).toEqual(['mode', 'agent', 'phase', 'policies']);
      expect(own.mode).toBe(session.mode);
      expect(own.agent).toBe(session.agent);
      // An override given as undefined wins over the session's value, as the spread did.
      const cleared = await app.funnelContext(session.id, {
        mode: undefined,
        agent: 'build',
        phase: undefined,
      });
      expect('mode' in cleared && cleared.mode === undefined).toBe(true);
    } finally {
      await app.close();
    }
  });

  it('COMPAT-PERF-272: a step end’s message patches are one map for each shape', async () => {
    const same = sameMap();
    const usage = { input_tokens: 1, output_tokens: 2 } as never;
    const parts = [{ type: 'text', text: 'hi' }] as never[];
    const [first, second] = await lastTwo((i) =>
      closingUpdates({ id: `a${i}`, parts, stored: false }, { id: `t${i}`, parts, stored: false }, usage, 0),
    );
    expect(same(first[0].patch, second[0].patch)).toBe(true);
    expect(same(first[1].patch, second[1].patch)).toBe(true);
    expect(first).toEqual([
      { id: `a${WARM - 2}`, patch: { parts, usage, cost: 0, finished: true } },
      { id: `t${WARM - 2}`, patch: { parts, finished: true } },
    ]);
    expect(Object.keys(first[0].patch)).toEqual(['parts', 'usage', 'cost', 'finished']);
    const stored = closingUpdates(
      { id: 'a3', parts, stored: true },
      { id: 't3', parts, stored: true },
      null,
      1,
    );
    expect(stored).toEqual([
      { id: 'a3', patch: { usage: null, cost: 1, finished: true } },
      { id: 't3', patch: { finished: true } },
    ]);
  });

  it('COMPAT-PERF-273: a provider’s readiness, asked every request, is one map every call', async () => {
    const { app } = await agentApp([reply().text('unused')]);
    try {
      const same = sameMap();
      const entry = app.providers.entry('fake');
      expect(entry).toBeDefined();
      const [a, b] = await lastTwo(() => readiness(entry!, app.providers.readinessContext()));
      expect(same(a, b)).toBe(true);
      expect(Object.keys(a)).toEqual([
        'auth',
        'ambiguous',
        'ambiguity',
        'credential',
        'ready',
        'reason',
        'source_kind',
        'source',
      ]);
      expect(a).toMatchObject({ ready: true, reason: null });
    } finally {
      await app.close();
    }
  });
});
