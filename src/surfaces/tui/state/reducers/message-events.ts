/**
 * Message events: an assistant message appears, streams its text and reasoning, completes; a user
 * message gets its stored id.
 * @module
 */
import type { AssistantItem, UserItem } from '../transcript-types';
import type { EventHandlers } from './handlers';
import { ensureAssistant, replaceAt } from './items';

export const messageEvents: EventHandlers = {
  'message.created': (next, e) => {
    if (e.role === 'assistant') return ensureAssistant(next, e.message_id);
    if (e.role === 'user') {
      const pending = next.items.findIndex((i) => i.kind === 'user' && !i.message_id && !i.queued);
      if (pending !== -1)
        next.items = replaceAt(next.items, pending, {
          ...(next.items[pending] as UserItem),
          message_id: e.message_id,
        });
    }
    return next;
  },
  'message.delta': (next, e) => {
    const withItem = ensureAssistant(next, e.message_id);
    const index = withItem.items.findIndex((i) => i.kind === 'assistant' && i.message_id === e.message_id);
    const item = withItem.items[index] as AssistantItem;
    withItem.items = replaceAt(
      withItem.items,
      index,
      e.part === 'reasoning'
        ? { ...item, reasoning: item.reasoning + e.delta }
        : { ...item, text: item.text + e.delta },
    );
    return withItem;
  },
  'message.completed': (next, e) => {
    next.items = next.items.map((i) =>
      i.kind === 'assistant' && i.message_id === e.message_id ? { ...i, done: true } : i,
    );
    return next;
  },
};
