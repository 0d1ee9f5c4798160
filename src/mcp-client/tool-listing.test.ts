import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_TOOLS, toolDefinitions } from './tool-listing';

const call = async () => ({ content: [] });
const tool = (name: string, inputSchema: unknown = { type: 'object' }) => ({ name, inputSchema });

describe('toolDefinitions: how many tools of one server are taken', () => {
  it('takes at most DEFAULT_MAX_TOOLS (256) tools and says how many were left out', () => {
    expect(DEFAULT_MAX_TOOLS).toBe(256);
    const raw = Array.from({ length: 10_006 }, (_, i) => tool(`t${i}`));
    const { defs, warnings } = toolDefinitions('evil', raw, call);
    expect(defs).toHaveLength(256);
    expect(defs.at(-1)?.name).toBe('mcp_evil_t255');
    expect(warnings).toEqual([
      'skipped: 9750 more tools past the limit of 256 per server (mcp.evil.max_tools)',
    ]);
  });

  it('takes max_tools of the block instead, counting only the tools it takes', () => {
    const raw = [tool('bad', { type: 'string' }), tool('a'), tool('b'), tool('c')];
    const { defs, warnings } = toolDefinitions('s', raw, call, { maxTools: 2 });
    expect(defs.map((d) => d.name)).toEqual(['mcp_s_a', 'mcp_s_b']);
    expect(warnings).toEqual([
      'skipped: tool "bad": inputSchema.type must be "object", got "string"',
      'skipped: 1 more tool past the limit of 2 per server (mcp.s.max_tools)',
    ]);
  });

  it('keeps at most 50 warnings, counting the rest', () => {
    const raw = Array.from({ length: 500 }, (_, i) => tool(`bad${i}`, { type: 'string' }));
    const { defs, warnings } = toolDefinitions('s', raw, call);
    expect(defs).toEqual([]);
    expect(warnings).toHaveLength(50);
    expect(warnings.at(-1)).toBe('skipped: 451 more tools (reasons not listed)');
  });

  it("shows a clashing tool's name safely", () => {
    const { warnings } = toolDefinitions('s', [tool('a.b'), tool('a\u202eb')], call);
    expect(warnings).toEqual([
      'skipped: tool "a<U+202E>b" has the same svc name (mcp_s_a_b) as another tool',
    ]);
  });
});
