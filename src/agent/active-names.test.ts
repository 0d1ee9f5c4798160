/**
 * The names of a run's effective tools (./active-tools.ts `activeNames`): the toolbox answers the
 * same array for the same registry, config and funnel context, so the names are one Set per such
 * array, shared by every run and step with it (the step driver and its tool list key their work by
 * it); another array gets its own Set.
 */
import { describe, expect, it } from 'vitest';
import { activeNames } from './active-tools';
import type { AgentToolSpec } from './toolbox';

const spec = (name: string) => ({ name }) as AgentToolSpec;

describe('activeNames', () => {
  it('ENGINE-CPU-21: answers one Set per effective tool array, with its names', () => {
    const effective = [spec('view'), spec('grep')];
    const names = activeNames(effective);
    expect([...names]).toEqual(['view', 'grep']);
    expect(activeNames(effective)).toBe(names);
    const other = [spec('view')];
    expect([...activeNames(other)]).toEqual(['view']);
    expect(activeNames(other)).not.toBe(names);
    expect(activeNames(effective)).toBe(names);
  });
});
