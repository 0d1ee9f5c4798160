/**
 * The HTTP surface: a Hono app over an App. Bearer auth, body limit, the registry's routes, 404
 * for anything else and 405 for a known path with the wrong method.
 * @module
 */
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { methodNotAllowed } from 'hono/method-not-allowed';
import type { App } from '../../app';
import { SvcError } from '../../errors';
import type { AnyTool } from '../../tools/define-tool';
import { allTools } from '../../tools/index';
import { bearerAuth } from './auth';
import { type ErrorStyle, errorResponse } from './errors';
import { type AppRef, mountTools } from './mount-tools';

export interface HttpAppOptions {
  /** Service token; default `[services.http].token` of the app config. */
  token?: string;
  /** AllowNoAuth; default `[services.http].allow_no_auth`. */
  allowNoAuth?: boolean;
  maxBodyBytes?: number;
  /** Tools whose bindings are mounted; default every defined tool (registration is checked per request). */
  tools?: readonly AnyTool[];
  /** Extra routes mounted after the registry (session API, compat surface, SSE). */
  extend?: (hono: Hono, appRef: AppRef) => void;
}

/** Compat routes use the flat error body (spec, Errors → Compat surface). */
export function errorStyleFor(path: string): ErrorStyle {
  return path === '/v1/chat/completions' ||
    path === '/v1/completions' ||
    path.startsWith('/v1/openai-compat/')
    ? 'flat'
    : 'canonical';
}

export function createHttpApp(target: App | AppRef, options: HttpAppOptions = {}): Hono {
  const appRef: AppRef = typeof target === 'function' ? target : () => target;
  const hono = new Hono();
  const initial = appRef();

  hono.onError((error, c) => errorResponse(c, error, { style: errorStyleFor(c.req.path), app: appRef() }));
  hono.notFound((c) =>
    errorStyleFor(c.req.path) === 'flat'
      ? c.json({ error: `no route ${c.req.method} ${c.req.path}`, code: 404 }, 404)
      : c.text('404 Not Found', 404),
  );
  hono.use(methodNotAllowed({ app: hono }));
  hono.get('/healthz', (c) => {
    const app = appRef();
    return c.json({ ok: true, ready: Boolean(app?.runtime.ready) });
  });
  hono.use(
    bearerAuth({
      token: () => options.token ?? appRef()?.config.services.http.token,
      allowNoAuth: () => options.allowNoAuth ?? appRef()?.config.services.http.allow_no_auth ?? false,
      styleFor: errorStyleFor,
    }),
  );
  const limit = options.maxBodyBytes ?? initial?.config.services.http.max_body_bytes ?? 10 * 1024 * 1024;
  hono.use(
    bodyLimit({
      maxSize: limit,
      onError: (c) =>
        errorResponse(
          c,
          new SvcError('invalid_input', `request body over the ${limit}-byte limit`, { status: 413 }),
          {
            style: errorStyleFor(c.req.path),
          },
        ),
    }),
  );
  mountTools(hono, appRef, options.tools ?? allTools);
  options.extend?.(hono, appRef);
  return hono;
}
