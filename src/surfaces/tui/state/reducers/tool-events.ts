/**
 * Tool events: a call starts (ending the text streamed before it), finishes with its summary and
 * duration, and the files it changed.
 * @module
 */
import type { ToolItem } from '../transcript-types';
import type { EventHandlers } from './handlers';
import { failureNotice, lastIndex, replaceAt } from './items';

export const toolEvents: EventHandlers = {
  'tool.started': (next, e) => {
    if (next.items.some((i) => i.kind === 'tool' && i.tool_call_id === e.tool_call_id)) return next;
    // Text streamed before a tool call is complete once the call starts.
    next.items = next.items.map((i) => (i.kind === 'assistant' && !i.done ? { ...i, done: true } : i));
    next.items = [
      ...next.items,
      {
        kind: 'tool',
        key: `t:${e.tool_call_id}`,
        tool_call_id: e.tool_call_id,
        run_id: e.run_id,
        tool: e.tool,
        title: e.title || e.tool,
        status: 'running',
        files: [],
      },
    ];
    return next;
  },
  'tool.finished': (next, e, event) => {
    next.items = next.items.map((i) =>
      i.kind === 'tool' && i.tool_call_id === e.tool_call_id
        ? {
            ...i,
            status: i.status === 'denied' ? 'denied' : e.is_error ? 'error' : 'done',
            summary: e.summary,
            duration_ms: e.duration_ms,
          }
        : i,
    );
    if (e.failure) {
      next.lastFailure = { run_id: e.run_id, tool: e.tool, failure: e.failure };
      next.items = [...next.items, failureNotice(event, 'warn', e.failure)];
    }
    return next;
  },
  'file.changed': (next, e) => {
    const index = lastIndex(next.items, (i) => i.kind === 'tool' && i.tool === e.tool);
    if (index !== -1) {
      const item = next.items[index] as ToolItem;
      next.items = replaceAt(next.items, index, {
        ...item,
        files: [...item.files, { path: e.path, change: e.change }],
      });
    }
    return next;
  },
};
