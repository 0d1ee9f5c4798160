import * as ai from 'ai';
import { describe, expect, it } from 'vitest';
import { requestTools } from '../../src/agent/step-request';
import { sharedToolSet, toolSetBuildCount } from '../../src/agent/tool-bridge';
import type { AgentToolSpec } from '../../src/agent/toolbox';

const spec = (name: string, description = `${name} tool`): AgentToolSpec => ({
  name,
  family: 'test',
  description,
  inputSchema: { type: 'object', properties: {} },
});

describe('tool sets reused across requests', () => {
  it('ENGINE-SIDE-5: the last set answers only the same specs; a replaced spec or an earlier set is exact', () => {
    const [a, b, c] = [spec('side5_a'), spec('side5_b'), spec('side5_c')];
    const first = sharedToolSet(ai, [a, b, c]);
    const builds = toolSetBuildCount();
    // A new array of the same spec objects: the same set, nothing built.
    expect(sharedToolSet(ai, [a, b, c])).toBe(first);
    expect(toolSetBuildCount()).toBe(builds);
    // Same names, one spec object replaced (a reloaded definition): a new set with its description.
    const changed = sharedToolSet(ai, [a, spec('side5_b', 'new text'), c]);
    expect(changed).not.toBe(first);
    expect(changed.side5_b.description).toBe('new text');
    // The first specs again: not the last set returned (the names alone are the same).
    const again = sharedToolSet(ai, [a, b, c]);
    expect(again).not.toBe(changed);
    expect(again.side5_b.description).toBe('side5_b tool');
    expect(sharedToolSet(ai, [a, b])).not.toBe(first);
  });

  it('ENGINE-SIDE-6: the step tool list follows the names sent, reused while they stay the same', async () => {
    const tools = sharedToolSet(ai, [spec('side6_a'), spec('side6_b'), spec('side6_c')]);
    const internal = await import('ai/internal');
    const source = (sends: (name: string) => boolean) => ({
      internal,
      model: {} as never,
      tools,
      signal: new AbortController().signal,
      sendsTool: sends,
    });
    const all = await requestTools(
      source(() => true),
      undefined,
    );
    expect(all?.map((t) => t.name)).toEqual(['side6_a', 'side6_b', 'side6_c']);
    expect(
      await requestTools(
        source(() => true),
        undefined,
      ),
    ).toBe(all);
    const some = await requestTools(
      source((n) => n !== 'side6_b'),
      undefined,
    );
    expect(some?.map((t) => t.name)).toEqual(['side6_a', 'side6_c']);
    expect(
      await requestTools(
        source(() => true),
        new Set(['side6_c']),
      ),
    ).toEqual([expect.objectContaining({ name: 'side6_c' })]);
    expect(
      await requestTools(
        source(() => true),
        undefined,
      ),
    ).toBe(all);
  });
});
