/**
 * Mounts every registered tool that has an `http` binding. The handler is the same for all:
 * assemble the input (path params, query or JSON body, fixed fields), validate with the tool's
 * schema, run, serialize (redacted). Route-specific rules come from the binding options.
 * @module
 */
import type { Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { App } from '../../app';
import { SvcError } from '../../errors';
import type { AnyTool, HttpBinding } from '../../tools/core/define-tool';
import { parseToolInput } from '../../tools/core/invoke';
import { coerceQuery } from './coerce';
import { errorResponse } from './errors';

export type AppRef = () => App | undefined;

export function bindingsOf(tool: AnyTool): HttpBinding[] {
  const http = tool.surfaces?.http;
  return Array.isArray(http) ? http : http ? [http] : [];
}

/**
 * Every defined tool's routes are mounted; whether the tool is registered is checked per request,
 * so a gate that is closed (or closes on reload) makes its route a 404.
 */
export function mountTools(hono: Hono, appRef: AppRef, tools: readonly AnyTool[]): void {
  for (const tool of tools) {
    for (const binding of bindingsOf(tool)) {
      hono.on(binding.method, binding.path, (c) => handleTool(c, appRef, tool, binding));
    }
  }
}

async function handleTool(
  c: Context,
  appRef: AppRef,
  tool: AnyTool,
  binding: HttpBinding,
): Promise<Response> {
  const style = binding.errors ?? 'canonical';
  const app = appRef();
  // spec, Errors: until the app is ready (database open, registry built) readouts answer 503.
  if (!app || (!app.runtime.ready && binding.requiresReady !== false)) {
    return errorResponse(c, new SvcError('unavailable', 'App not ready'), { style });
  }
  const live = app.tools.get(tool.name);
  if (!live) {
    const answer = binding.unregistered?.(app);
    if (answer) return errorResponse(c, answer, { style, app });
    // A closed gate means the route does not exist (spec: operating-mode routes answer 404 text).
    const gate = app.tools.gates().find((g) => g.tool.name === tool.name);
    return c.text(`404 Not Found${gate?.reason ? `: ${gate.reason}` : ''}`, 404);
  }
  try {
    const input = await assembleInput(c, live, binding);
    const parsed = parseQueryAware(live, input, Object.keys(c.req.queries() ?? {}));
    const result = await live.run(
      app.toolContext({ surface: 'http', signal: c.req.raw.signal, sessionId: undefined }),
      parsed,
    );
    if (result instanceof Response) return result;
    return c.json(app.redactor.value(result) as object, (binding.status ?? 200) as ContentfulStatusCode);
  } catch (error) {
    return errorResponse(c, error, { style, app, statusFor: binding.statusFor });
  }
}

/**
 * Parse the assembled input; a bad query value is reported by its name first
 * (`invalid recent_runs_limit: …`), as a malformed one already is by the coercion.
 */
function parseQueryAware(tool: AnyTool, input: Record<string, unknown>, queryKeys: string[]): unknown {
  try {
    return parseToolInput(tool, input);
  } catch (error) {
    const issues = SvcError.is(error)
      ? (error.details?.issues as { path: string; message: string }[])
      : undefined;
    const first = issues?.find((issue) => queryKeys.includes(issue.path));
    if (!first) throw error;
    throw new SvcError('invalid_input', `invalid ${first.path}: ${first.message}`, {
      details: (error as SvcError).details,
    });
  }
}

async function assembleInput(
  c: Context,
  tool: AnyTool,
  binding: HttpBinding,
): Promise<Record<string, unknown>> {
  const input: Record<string, unknown> = {};
  const method = binding.method;
  if (method === 'GET' || method === 'DELETE') {
    Object.assign(input, coerceQuery(tool.input, c.req.queries() ?? {}));
  } else {
    Object.assign(input, coerceQuery(tool.input, c.req.queries() ?? {}));
    const text = await c.req.text();
    if (text.trim() !== '') {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new SvcError('invalid_input', 'invalid JSON body');
      }
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        throw new SvcError('invalid_input', 'the JSON body must be an object');
      }
      Object.assign(input, body);
    }
  }
  for (const [param, field] of Object.entries(binding.params ?? {})) {
    const value = c.req.param(param);
    if (value !== undefined) input[field] = decodeURIComponent(value);
  }
  Object.assign(input, binding.fixed ?? {});
  return binding.prepare ? binding.prepare(input) : input;
}
