/**
 * Cutting a request that overflows the window (issue 22 (c), docs/compaction.md): largest tool
 * outputs first, then older texts, never the latest user message; a request that fits is
 * returned as it is.
 */
import type { ModelMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { estimateMessageTokens, fitToBudget, freshToolTokens, MIN_KEPT_CHARS } from './context-fit';

const toolResult = (id: string, value: string): ModelMessage => ({
  role: 'tool',
  content: [{ type: 'tool-result', toolCallId: id, toolName: 'dump', output: { type: 'text', value } }],
});
const outputOf = (message: ModelMessage) => {
  const part = (message.content as { output: { value: string } }[])[0];
  return part.output.value;
};

describe('context fit (issue 22 (c))', () => {
  const history: ModelMessage[] = [
    { role: 'user', content: `old request ${'o'.repeat(3_000)}` },
    toolResult('a', `small ${'s'.repeat(2_000)}`),
    toolResult('b', `large ${'l'.repeat(20_000)}`),
    { role: 'user', content: `latest request ${'n'.repeat(3_000)}` },
  ];

  it('issue 22 (c): a request that fits is returned unchanged', () => {
    const fitted = fitToBudget(history, estimateMessageTokens(history) + 10);
    expect(fitted.trimmed).toBe(0);
    expect(fitted.messages).toBe(history);
  });

  it('issue 22 (c): the largest tool output is cut first, head and tail kept, the rest untouched', () => {
    const budget = estimateMessageTokens(history) - 2_000;
    const fitted = fitToBudget(history, budget);
    expect(estimateMessageTokens(fitted.messages)).toBeLessThanOrEqual(budget);
    const large = outputOf(fitted.messages[2]);
    expect(large.startsWith('large ')).toBe(true);
    expect(large.endsWith('l')).toBe(true);
    expect(large).toContain('characters left out to fit the context window');
    expect(fitted.messages[1]).toBe(history[1]);
    expect(fitted.messages[0]).toBe(history[0]);
    expect(history[2]).toEqual(toolResult('b', `large ${'l'.repeat(20_000)}`));
  });

  it('issue 22 (c): when tool outputs are not enough, older texts are cut, never the latest user message', () => {
    const fitted = fitToBudget(history, 500);
    expect(fitted.trimmed).toBeGreaterThan(0);
    expect(outputOf(fitted.messages[1]).length).toBeLessThan(MIN_KEPT_CHARS + 100);
    expect(outputOf(fitted.messages[2]).length).toBeLessThan(MIN_KEPT_CHARS + 100);
    expect((fitted.messages[0].content as string).length).toBeLessThan(MIN_KEPT_CHARS + 100);
    expect(fitted.messages[3]).toBe(history[3]);
  });

  it('issue 22 (c): fresh tool results count towards the next request', () => {
    expect(freshToolTokens(history.slice(0, 3))).toBe(estimateMessageTokens([history[2]]));
    expect(freshToolTokens(history)).toBe(0);
  });
});
