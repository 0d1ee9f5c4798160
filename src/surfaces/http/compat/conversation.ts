/**
 * A compat request's `messages` → what the agent gets (docs/compat.md, "Messages"):
 *
 * - `system` (and `developer`) messages → one prompt section of the run (client instructions);
 * - the trailing `user` messages → the run's prompt (joined by a blank line); when the request
 *   ends with something else (tool results, an assistant message) the prompt is CONTINUE_PROMPT;
 * - everything before → the session's history: user text, assistant text with its `tool_calls`,
 *   tool results (consecutive `tool` messages are one tool turn, as the model sees them);
 * - tool calls of the last assistant turn that have no result yet are `pending`: the compat
 *   handler runs them through svc's tool path (under the tool policy) before the run starts.
 * @module
 */
import type { MessagePart, MessageRole } from '../../../sessions/session-store';
import type { CompatMessage, CompatToolCall } from './request';

export const CONTINUE_PROMPT = 'Continue from the tool results above.';

export interface HistoryEntry {
  role: Exclude<MessageRole, 'system'>;
  parts: MessagePart[];
}

export interface Conversation {
  system: string;
  history: HistoryEntry[];
  /** Calls of the last assistant turn without a result; answered before the run starts. */
  pending: CompatToolCall[];
  prompt: string;
  /** True when the prompt is CONTINUE_PROMPT (no trailing user message). */
  continued: boolean;
}

export function planConversation(messages: readonly CompatMessage[]): Conversation {
  // Pushed, not `filter`/`map` chains read again: TurboFan's inlined `map` answers a holey array
  // (its `filter` an empty one of another map) where the builtins answer packed ones, so the
  // chain deopted this function at its first optimized call (p-jit's pattern; p-deopt).
  const systems: string[] = [];
  const rest: Exclude<CompatMessage, { role: 'system' }>[] = [];
  for (const m of messages) {
    if (m.role !== 'system') rest.push(m);
    else if (m.text.trim()) systems.push(m.text.trim());
  }
  const system = systems.join('\n\n');
  let tail = rest.length;
  while (tail > 0 && rest[tail - 1].role === 'user') tail--;
  const trailing: string[] = [];
  for (let i = tail; i < rest.length; i++) if (rest[i].text.trim()) trailing.push(rest[i].text.trim());
  const prompt = trailing.join('\n\n');
  const before = rest.slice(0, tail);

  const history: HistoryEntry[] = [];
  const names = new Map<string, string>();
  let lastCalls: CompatToolCall[] = [];
  let answered = new Set<string>();
  for (const message of before) {
    switch (message.role) {
      case 'user':
        if (message.text) history.push({ role: 'user', parts: [{ type: 'text', text: message.text }] });
        lastCalls = [];
        break;
      case 'assistant': {
        const parts: MessagePart[] = [];
        if (message.text) parts.push({ type: 'text', text: message.text });
        for (const call of message.tool_calls) {
          names.set(call.id, call.name);
          parts.push({ type: 'tool-call', tool_call_id: call.id, tool: call.name, input: call.input });
        }
        if (parts.length) history.push({ role: 'assistant', parts });
        lastCalls = message.tool_calls;
        answered = new Set();
        break;
      }
      case 'tool': {
        const part: MessagePart = {
          type: 'tool-result',
          tool_call_id: message.tool_call_id,
          tool: names.get(message.tool_call_id) ?? 'unknown',
          output: message.text,
        };
        answered.add(message.tool_call_id);
        const previous = history.at(-1);
        if (previous?.role === 'tool') previous.parts.push(part);
        else history.push({ role: 'tool', parts: [part] });
        break;
      }
      default: {
        const exhaustive: never = message;
        throw new Error(`unknown message ${JSON.stringify(exhaustive)}`);
      }
    }
  }
  const lastRole = before.at(-1)?.role;
  const pending =
    lastRole === 'assistant' || lastRole === 'tool' ? lastCalls.filter((c) => !answered.has(c.id)) : [];
  return {
    system,
    history,
    pending,
    prompt: prompt || CONTINUE_PROMPT,
    continued: !prompt,
  };
}
