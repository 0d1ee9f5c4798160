/**
 * Mounts every registered tool that has an `http` binding. The handler is the same for all:
 * assemble the input (path params, query or JSON body, fixed fields) and call the tool through
 * `callTool` (gate, validation, run, redaction); the outcome maps to a response here, in one
 * place. Route-specific rules come from the binding options.
 * @module
 */
import type { Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { App } from '../../app';
import { SvcError } from '../../errors';
import { callTool } from '../../tools/core/call-tool';
import { conversionIssue, invalidInput } from '../../tools/core/input-issues';
import type { AnyTool, HttpBinding, InputIssue } from '../../tools/core/types';
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
  const queryKeys = Object.keys(c.req.queries() ?? {});
  const outcome = await callTool(
    app,
    tool.name,
    undefined,
    { surface: 'http', signal: c.req.raw.signal, sessionId: undefined },
    {
      tool,
      assemble: (live) => assembleInput(c, live, binding),
      // A bad query value is named first (`invalid recent_runs_limit: …`, spec DASH-58).
      leadField: (issues) => issues.find((issue) => queryKeys.includes(issue.path))?.path,
    },
  );
  if (outcome.ok) {
    if (outcome.value instanceof Response) return outcome.value;
    return c.json(outcome.value as object, (binding.status ?? 200) as ContentfulStatusCode);
  }
  if (outcome.stage === 'gate' || outcome.stage === 'unknown') {
    const answer = binding.unregistered?.(app);
    if (answer) return errorResponse(c, answer, { style, app });
    // A closed gate means the route does not exist (spec: operating-mode routes answer 404 text).
    const reason = outcome.error.details?.reason;
    return c.text(`404 Not Found${typeof reason === 'string' ? `: ${reason}` : ''}`, 404);
  }
  return errorResponse(c, outcome.error, { style, app, statusFor: binding.statusFor });
}

/** The input of a call: query (coerced by field type), JSON body, path params, fixed fields. */
async function assembleInput(
  c: Context,
  tool: AnyTool,
  binding: HttpBinding,
): Promise<Record<string, unknown>> {
  const input: Record<string, unknown> = {};
  const query = coerceQuery(tool.input, c.req.queries() ?? {});
  if (query.issues.length) throw invalidInput(tool.name, query.issues, query.issues[0].path);
  Object.assign(input, query.values);
  if (binding.method !== 'GET' && binding.method !== 'DELETE') {
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
  const issues: InputIssue[] = [];
  // Hono's `param` is decoded already (decoding again turned `%25` into a malformed `%`); an
  // escape it could not decode (`/v1/sessions/%ZZ`) it leaves as it was: the client's mistake, 400.
  // Only a path with a `%` left in a value can be malformed: the URL is parsed for those alone.
  let malformed: boolean | undefined;
  const isMalformed = () => (malformed ??= !decodes(new URL(c.req.url).pathname));
  for (const [param, field] of Object.entries(binding.params ?? {})) {
    const value = c.req.param(param);
    if (value === undefined) continue;
    if (value.includes('%') && isMalformed())
      issues.push(conversionIssue(field, 'a percent-encoded path segment', value));
    else input[field] = value;
  }
  if (issues.length) throw invalidInput(tool.name, issues);
  Object.assign(input, binding.fixed ?? {});
  return binding.prepare ? binding.prepare(input) : input;
}

/** Whether a URL path's percent escapes all decode (as UTF-8). */
function decodes(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}
