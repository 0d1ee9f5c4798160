/**
 * A step's tool list under deferred exposure (issue 17 item 3). Pins: the runs of a tool set share
 * one filter per level, and a step with the same tool set, active tools and filter gets the list
 * kept for them without asking the filter for every tool again; a tool called in the run is sent
 * in full from then on (the run's list kept while it calls no new tool), and a later run without
 * calls gets the level's list again.
 */
import * as ai from 'ai';
import { describe, expect, it } from 'vitest';
import { requestTools } from '../../src/agent/step-request';
import { sharedToolSet } from '../../src/agent/tool-bridge';
import { inFullAt } from '../../src/agent/tool-exposure';
import type { AgentToolSpec } from '../../src/agent/toolbox';

const spec = (name: string, family: string): AgentToolSpec => ({
  name,
  family,
  description: `${name} tool`,
  inputSchema: { type: 'object', properties: {} },
});

describe('deferred tool lists across steps and runs', () => {
  it('ENGINE-CPU-95: the level list is kept by its filter; called tools join it for their run only', async () => {
    // `view` is essential (in full at every level); the others are listed by name only.
    const specs = [spec('view', 'core-files'), spec('cpu95_b', 'test'), spec('cpu95_c', 'test')];
    const tools = sharedToolSet(ai, specs);
    const active = new Set(specs.map((s) => s.name));
    // The filter's answers, counted: a kept list asks nothing.
    const asked: string[] = [];
    const level = inFullAt(tools, specs, 'essential');
    const filter = (name: string) => {
      asked.push(name);
      return level(name);
    };
    expect(inFullAt(tools, specs, 'essential')).toBe(level);
    expect(inFullAt(tools, specs, 'deferred')).not.toBe(level);
    expect(inFullAt(sharedToolSet(ai, specs.slice(1)), specs.slice(1), 'essential')).not.toBe(level);
    expect([level('view'), level('cpu95_b'), level('not_registered')]).toEqual([true, false, true]);
    const internal = await import('ai/internal');
    const run = (called: Set<string>) => ({
      internal,
      model: {} as never,
      tools,
      signal: new AbortController().signal,
      sendsTool: filter,
      calledTools: called,
    });

    const first = await requestTools(run(new Set()), active);
    expect(first?.map((t) => t.name)).toEqual(['view']);
    expect(asked).toEqual(['view', 'cpu95_b', 'cpu95_c']);
    asked.length = 0;
    // Another run's step (a new run object, the same filter): the kept list, nothing asked.
    expect(await requestTools(run(new Set()), active)).toBe(first);
    expect(asked).toEqual([]);

    // Every tool active (the step names none): kept the same way.
    const all = await requestTools(run(new Set()), undefined);
    asked.length = 0;
    expect(await requestTools(run(new Set()), undefined)).toBe(all);
    expect(asked).toEqual([]);

    // A run that called cpu95_c: it goes in full from the next step.
    const called = new Set<string>();
    const calling = run(called);
    expect(await requestTools(calling, active)).toBe(first);
    called.add('cpu95_c');
    const withCall = await requestTools(calling, active);
    expect(withCall?.map((t) => t.name)).toEqual(['view', 'cpu95_c']);
    // Its next step, no new call: the run's kept list, nothing asked; a second call joins it.
    asked.length = 0;
    expect(await requestTools(calling, active)).toBe(withCall);
    expect(asked).toEqual([]);
    called.add('cpu95_b');
    expect((await requestTools(calling, active))?.map((t) => t.name)).toEqual(['view', 'cpu95_b', 'cpu95_c']);
    // The next run, with no calls: the level's list again.
    expect(await requestTools(run(new Set()), active)).toBe(first);
  });
});
