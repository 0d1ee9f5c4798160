/**
 * A run's execution input (`executeRun`'s `x`, read by every step of the run) is one literal, not
 * `{ …, ...(given ? { key } : {}), more }` (issue 17 items 3–4, p-gcrate, p-sqlprofile Left 2): on
 * Node 20 (V8 11.3) a property defined after a spread goes through V8's runtime and the object
 * gets a map of its own, a new one each call, allocated outside the young generation (only a full
 * GC frees it). Pinned with V8's natives syntax, as ./object-maps.test.ts does: the inputs of the
 * last two of WARM runs are one map, with the values the spreads gave. No timing.
 */
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it, vi } from 'vitest';
import type { RunExecution } from '../../src/agent/run-types';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';

const inputs = vi.hoisted(() => [] as unknown[]);

vi.mock('../../src/agent/run-loop', async (original) => {
  const actual = await original<typeof import('../../src/agent/run-loop')>();
  return {
    ...actual,
    executeRun: (x: unknown) => {
      inputs.push(x);
      return actual.executeRun(x as never);
    },
  };
});

/** Runs a site makes before its last two are compared (V8 goes to its fast clone after ≈ 8). */
const WARM = 30;

function sameMap(): (a: object, b: object) => boolean {
  setFlagsFromString('--allow-natives-syntax');
  return new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;
}

describe('a run’s execution input is one map', () => {
  it('COMPAT-PERF-300: runs launched claimed (a new session) and from the queue (startRun) give executeRun inputs of one map, on both paths, the same values', async () => {
    const script = Array.from({ length: 2 * WARM }, (_, i) => reply().text(`answer ${i}`));
    const { app } = await agentApp(script);
    try {
      const same = sameMap();
      inputs.length = 0;
      // A send without a session: its run inserted claimed with its new session (launchClaimed).
      for (let i = 0; i < WARM; i++) {
        const { run_id } = await app.agent.send({ prompt: `new ${i}`, yolo: true });
        expect((await app.agent.wait(run_id)).status).toBe('completed');
      }
      const claimed = inputs.slice(-2) as RunExecution[];
      expect(inputs).toHaveLength(WARM);
      expect(same(claimed[0], claimed[1])).toBe(true);
      expect(claimed[1]).toMatchObject({ resume: false, subagent: false });
      expect(claimed[1].run.id).not.toBe(claimed[0].run.id);
      expect(claimed[1].lastEnds).toBeDefined();
      expect(claimed[1].transaction).toBeUndefined();
      // A send to a session that exists: claimed by startRun.
      const sessions = await Promise.all(
        Array.from({ length: WARM }, (_, i) => app.sessions.create({ title: `s${i}` })),
      );
      for (const session of sessions) {
        const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go', yolo: true });
        expect((await app.agent.wait(run_id)).status).toBe('completed');
      }
      const started = inputs.slice(-2) as RunExecution[];
      expect(inputs).toHaveLength(2 * WARM);
      expect(same(started[0], started[1])).toBe(true);
      expect(started[1].run.session_id).toBe(sessions[WARM - 1].id);
      expect(started[1]).toMatchObject({ phased: claimed[1].phased, resume: false, subagent: false });
      expect(started[1].prompted).toBeUndefined();
      // Both paths give every key (undefined when not given): one map for every run's readers.
      expect(same(claimed[1], started[1])).toBe(true);
      expect(Object.keys(started[1])).toEqual(Object.keys(claimed[1]));
    } finally {
      await app.close();
    }
  });
});
