/**
 * Permission events: a request joins the pending list (its diff shown on the running tool), an
 * answer removes it (a denied tool is marked so).
 * @module
 */
import { diffFromDetails } from '../../render/diff';
import type { ToolItem } from '../transcript-types';
import type { EventHandlers } from './handlers';
import { lastIndex, replaceAt } from './items';

export const permissionEvents: EventHandlers = {
  'permission.requested': (next, e, event) => {
    if (next.permissions.some((r) => r.request_id === e.request_id)) return next;
    next.permissions = [...next.permissions, { ...e, session_id: e.session_id ?? event.session_id }];
    const diff = diffFromDetails(e.details);
    if (diff) {
      const index = lastIndex(
        next.items,
        (i) => i.kind === 'tool' && i.tool === e.tool && i.status === 'running',
      );
      if (index !== -1)
        next.items = replaceAt(next.items, index, { ...(next.items[index] as ToolItem), diff });
    }
    return next;
  },
  'permission.resolved': (next, e) => {
    const request = next.permissions.find((r) => r.request_id === e.request_id);
    next.permissions = next.permissions.filter((r) => r.request_id !== e.request_id);
    if (request && e.decision === 'deny') {
      const index = lastIndex(
        next.items,
        (i) => i.kind === 'tool' && i.tool === request.tool && i.status === 'running',
      );
      if (index !== -1)
        next.items = replaceAt(next.items, index, { ...(next.items[index] as ToolItem), status: 'denied' });
    }
    return next;
  },
};
