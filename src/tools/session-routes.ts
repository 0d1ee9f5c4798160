/**
 * The session API routes (issue 5): the one list. The session and permission tools bind their
 * `http` surface to these paths (the event stream is the SSE route), and the TUI's attach transport
 * (`surfaces/tui/http-client.ts`) calls exactly these. Each value is `METHOD /path` in Hono form.
 * @module
 */
import type { HttpBinding } from './core/define-tool';

export const SESSION_ROUTES = {
  list: 'GET /v1/sessions',
  create: 'POST /v1/sessions',
  get: 'GET /v1/sessions/:id',
  update: 'PATCH /v1/sessions/:id',
  delete: 'DELETE /v1/sessions/:id',
  messages: 'GET /v1/sessions/:id/messages',
  send: 'POST /v1/sessions/:id/messages',
  enqueue: 'POST /v1/sessions/:id/queue',
  cancel: 'POST /v1/sessions/:id/cancel',
  permissions: 'GET /v1/sessions/:id/permissions',
  answer: 'POST /v1/sessions/:id/permissions/:request_id',
  events: 'GET /v1/sessions/:id/events',
} as const;

export type SessionRoute = (typeof SESSION_ROUTES)[keyof typeof SESSION_ROUTES];

/** `'GET /v1/sessions/:id'` → `{ method, path }` for an `http` binding. */
export function route(value: SessionRoute): Pick<HttpBinding, 'method' | 'path'> {
  const [method, path] = value.split(' ') as [HttpBinding['method'], string];
  return { method, path };
}
