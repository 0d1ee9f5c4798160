/**
 * Events the chat shows as a notice line: the session deleted, a loop detected, compaction,
 * workflow phases, the staged plan, provider fallback.
 * @module
 */
import type { EventHandlers } from './handlers';
import { notice } from './items';

export const noticeEvents: EventHandlers = {
  'session.deleted': (next, _e, event) => {
    next.items = [...next.items, notice(event, 'warn', 'this session was deleted')];
    return next;
  },
  'loop.detected': (next, e, event) => {
    next.items = [
      ...next.items,
      notice(event, 'warn', `loop detected: ${e.tool} repeated ${e.repeats} times`),
    ];
    return next;
  },
  'compaction.started': (next, _e, event) => {
    next.state = 'compacting';
    next.items = [...next.items, notice(event, 'info', 'compacting the conversation…')];
    return next;
  },
  'compaction.finished': (next, e, event) => {
    next.items = [
      ...next.items,
      notice(event, 'info', `compacted: ${e.tokens_before} → ${e.tokens_after} tokens`),
    ];
    return next;
  },
  'workflow.phase_changed': (next, e, event) => {
    next.items = [...next.items, notice(event, 'info', `phase: ${e.previous} → ${e.phase}`)];
    return next;
  },
  'plan.updated': (next, e, event) => {
    next.items = [
      ...next.items,
      notice(event, 'info', e.has_plan ? 'plan updated (/approve to execute)' : 'plan cleared'),
    ];
    return next;
  },
  'provider_recovery.changed': (next, e, event) => {
    next.items = [
      ...next.items,
      notice(event, 'warn', `rate limited: switched ${e.from} → ${e.to} (${e.reason})`),
    ];
    return next;
  },
};
