/**
 * Tool calls over attach: each tool's own HTTP binding from the registry (the route the server
 * mounts for it), so a tool that gains an HTTP binding works here with no change. A tool without
 * one is "missing" over attach, with the command to run on the server host.
 * @module
 */
import type { AnyTool, HttpBinding } from '../../tools/core/define-tool';
import { missingTool, type ToolCallOptions, type ToolResult } from './client';
import type { HttpRequest } from './http-request';
import { readoutText } from './readout-text';

/** The tool whose CLI binding is `command` and that has an HTTP route. */
export function toolForCli(tools: ReadonlyMap<string, AnyTool>, command: string): string | undefined {
  for (const tool of tools.values()) {
    if (tool.surfaces?.http && [tool.surfaces.cli ?? []].flat().some((b) => b.command === command))
      return tool.name;
  }
  return undefined;
}

export async function callToolOverHttp(
  request: HttpRequest,
  tools: ReadonlyMap<string, AnyTool>,
  name: string,
  input: Record<string, unknown>,
  opts: ToolCallOptions = {},
): Promise<ToolResult> {
  const tool = tools.get(name);
  const binding = tool ? pickBinding(tool, input) : undefined;
  if (!tool || !binding) {
    throw missingTool(
      name,
      `${name} is not reachable over attach (the server has no HTTP route for it); run it on the server host: svc ${cliOf(tool) ?? name}`,
    );
  }
  const merged = {
    ...(opts.sessionId && !('session_id' in input) ? sessionDefault(tool, opts.sessionId) : {}),
    ...input,
  };
  const params: Record<string, string> = {};
  const rest: Record<string, unknown> = { ...merged };
  for (const [param, field] of Object.entries(binding.params ?? {})) {
    params[param] = String(rest[field] ?? '');
    delete rest[field];
  }
  for (const key of Object.keys(binding.fixed ?? {})) delete rest[key];
  const route = `${binding.method} ${binding.path}`;
  const value =
    binding.method === 'GET' || binding.method === 'DELETE'
      ? await request(route, params, undefined, rest)
      : await request(route, params, rest);
  return { value, text: readoutText(tool, value, merged) };
}

/** The binding whose fixed fields match the input (routes like `{ action: 'list' }`). */
function pickBinding(tool: AnyTool, input: Record<string, unknown>): HttpBinding | undefined {
  const http = tool.surfaces?.http;
  const bindings = Array.isArray(http) ? http : http ? [http] : [];
  return (
    bindings.find((b) => Object.entries(b.fixed ?? {}).every(([k, v]) => input[k] === v) && b.fixed) ??
    bindings.find((b) => !b.fixed)
  );
}

function sessionDefault(tool: AnyTool, sessionId: string): Record<string, unknown> {
  const shape = (tool.input as unknown as { shape?: Record<string, unknown> }).shape;
  return shape && 'session_id' in shape ? { session_id: sessionId } : {};
}

function cliOf(tool: AnyTool | undefined): string | undefined {
  return [tool?.surfaces?.cli ?? []].flat()[0]?.command;
}
