/**
 * Run lifecycle events: the run state, the prompt queue, a run starting and finishing (usage,
 * whatever was still streaming, a notice when it did not complete).
 * @module
 */
import type { EventHandlers } from './handlers';
import { failureNotice, notice } from './items';

export const runEvents: EventHandlers = {
  'state.changed': (next, e) => {
    next.state = e.state;
    next.runId = e.state === 'idle' ? undefined : (e.run_id ?? next.runId);
    return next;
  },
  'queue.changed': (next, e) => {
    next.queue = e.items ?? [];
    // A queued prompt that left the queue is now part of the conversation.
    next.items = next.items.map((item) =>
      item.kind === 'user' &&
      item.queued &&
      !next.queue.some((q) => item.text.startsWith(q.preview.replace(/…$/, '')))
        ? { ...item, queued: false }
        : item,
    );
    return next;
  },
  'run.started': (next, e) => {
    next.runId = e.run_id;
    if (next.state === 'idle') next.state = 'running';
    if (e.model) next.runModel = e.model;
    return next;
  },
  'run.finished': (next, e, event) => {
    next.usage = {
      input_tokens: next.usage.input_tokens + (e.usage?.input_tokens ?? 0),
      output_tokens: next.usage.output_tokens + (e.usage?.output_tokens ?? 0),
      cost: next.usage.cost + (e.cost ?? 0),
    };
    if (next.runId === e.run_id) next.runId = undefined;
    // Whatever was still streaming in this run is over.
    next.items = next.items.map((item) =>
      item.kind === 'assistant' && !item.done
        ? { ...item, done: true }
        : item.kind === 'tool' && item.status === 'running' && item.run_id === e.run_id
          ? { ...item, status: e.status === 'completed' ? 'done' : 'error' }
          : item,
    );
    if (e.status === 'failed' && e.failure) {
      next.lastFailure = { run_id: e.run_id, failure: e.failure };
      next.items = [...next.items, failureNotice(event, 'error', e.failure)];
    } else if (e.status !== 'completed') {
      next.items = [
        ...next.items,
        notice(
          event,
          e.status === 'failed' ? 'error' : 'warn',
          `run ${e.status}${e.reason ? `: ${e.reason}` : ''}`,
        ),
      ];
    }
    return next;
  },
  'context.usage': (next, e) => {
    next.context = { input_tokens: e.input_tokens, context_window: e.context_window, ratio: e.ratio };
    return next;
  },
};
