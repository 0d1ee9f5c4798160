/**
 * Fitting a request into the model's window when it is already overflowing (issue 22, item 5):
 * the largest tool outputs are cut first (head and tail kept, the middle replaced by a marker),
 * then the largest older texts; the latest user message is never cut. Only the request is
 * trimmed: the stored history stays whole. Pure functions over the AI SDK's message list.
 * @module
 */
import type { ModelMessage } from 'ai';

/** A cut part keeps at least this many characters (head and tail). */
export const MIN_KEPT_CHARS = 400;

/** Tokens a request's messages take, estimated from their size (4 characters a token). */
export function estimateMessageTokens(messages: readonly ModelMessage[]): number {
  return Math.ceil(JSON.stringify(messages).length / 4);
}

/** Tokens of the tool results that came after the last model step (not in its reported usage). */
export function freshToolTokens(messages: readonly ModelMessage[]): number {
  const last = messages.at(-1);
  return last?.role === 'tool' ? estimateMessageTokens([last]) : 0;
}

interface Cut {
  message: number;
  part: number;
  kind: 'tool' | 'text';
  length: number;
}

/**
 * The messages cut down to `budgetTokens` (estimated): tool outputs largest first, then the
 * text of older messages largest first. Returns the same array when it already fits; `trimmed`
 * is the number of characters left out.
 */
export function fitToBudget(
  messages: ModelMessage[],
  budgetTokens: number,
): { messages: ModelMessage[]; trimmed: number } {
  let excess = JSON.stringify(messages).length - Math.max(0, budgetTokens) * 4;
  if (excess <= 0) return { messages, trimmed: 0 };
  const candidates = cutCandidates(messages);
  const out = messages.slice();
  let trimmed = 0;
  for (const kind of ['tool', 'text'] as const) {
    const ordered = candidates.filter((c) => c.kind === kind).sort((a, b) => b.length - a.length);
    for (const c of ordered) {
      if (excess <= 0) break;
      const keep = Math.max(MIN_KEPT_CHARS, c.length - excess - 80);
      if (keep >= c.length) continue;
      out[c.message] = cutPart(out[c.message], c.part, keep);
      const removed = c.length - keep;
      trimmed += removed;
      excess -= removed;
    }
  }
  return trimmed > 0 ? { messages: out, trimmed } : { messages, trimmed: 0 };
}

function cutCandidates(messages: readonly ModelMessage[]): Cut[] {
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const cuts: Cut[] = [];
  messages.forEach((message, index) => {
    if (typeof message.content === 'string') {
      if (index !== lastUser && message.role !== 'system' && message.content.length > MIN_KEPT_CHARS)
        cuts.push({ message: index, part: -1, kind: 'text', length: message.content.length });
      return;
    }
    message.content.forEach((part, p) => {
      if (part.type === 'tool-result' && 'value' in part.output && typeof part.output.value === 'string') {
        if (part.output.value.length > MIN_KEPT_CHARS)
          cuts.push({ message: index, part: p, kind: 'tool', length: part.output.value.length });
      } else if (part.type === 'text' && index !== lastUser && part.text.length > MIN_KEPT_CHARS) {
        cuts.push({ message: index, part: p, kind: 'text', length: part.text.length });
      }
    });
  });
  return cuts;
}

function clipMiddle(text: string, keep: number): string {
  const head = Math.ceil(keep / 2);
  return `${text.slice(0, head)}\n[… ${text.length - keep} characters left out to fit the context window …]\n${text.slice(text.length - (keep - head))}`;
}

function cutPart(message: ModelMessage, part: number, keep: number): ModelMessage {
  if (typeof message.content === 'string') {
    return { ...message, content: clipMiddle(message.content, keep) } as ModelMessage;
  }
  const content = message.content.map((p, i) => {
    if (i !== part) return p;
    if (p.type === 'text') return { ...p, text: clipMiddle(p.text, keep) };
    if (p.type === 'tool-result' && 'value' in p.output && typeof p.output.value === 'string')
      return { ...p, output: { ...p.output, value: clipMiddle(p.output.value, keep) } };
    return p;
  });
  return { ...message, content } as ModelMessage;
}
