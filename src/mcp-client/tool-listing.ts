/**
 * Listing one MCP server's tools: every page of `tools/list` (leniently parsed: one malformed
 * entry must not sink the whole list), checked and turned into registry definitions, with a
 * warning for each tool that is skipped. At most `max_tools` tools of one server are taken (each
 * goes to the model on every request); the warnings are capped too.
 * @module
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { z } from 'zod';
import { lazy } from '../util/lazy';
import { peerLabel } from './peer-text';
import {
  type AnnotationTrust,
  checkRemoteTool,
  type RemoteCallResult,
  type RemoteToolDef,
  remoteToolDefinition,
} from './remote-tools';

const MAX_TOOL_PAGES = 50;
/** The tools taken from one server unless its block sets `max_tools`. */
export const DEFAULT_MAX_TOOLS = 256;
/** The warnings kept per server; past them one line counts the rest. */
const MAX_WARNINGS = 50;

// Lenient (STYLE: payloads from peers): one malformed entry must not sink the whole list.
const lenientToolList = lazy(() =>
  z.looseObject({
    tools: z.array(z.unknown()).default([]),
    nextCursor: z.string().optional(),
  }),
);

/** The raw entries of every page of the server's tool list (at most MAX_TOOL_PAGES pages). */
export async function listRawTools(client: Client, timeout: number): Promise<unknown[]> {
  const raw: unknown[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOL_PAGES; page++) {
    const answer = await client.request(
      { method: 'tools/list', params: cursor ? { cursor } : {} },
      lenientToolList(),
      { timeout },
    );
    raw.push(...answer.tools);
    cursor = answer.nextCursor;
    if (!cursor) break;
  }
  return raw;
}

/** What is taken of a server's list: its block's `max_tools` and how far annotations are believed. */
export interface ListingOptions extends AnnotationTrust {
  maxTools?: number;
}

/** Registry definitions of the valid, distinctly named entries, and why the others were skipped. */
export function toolDefinitions(
  serverId: string,
  raw: readonly unknown[],
  call: (tool: string, args: Record<string, unknown>, signal: AbortSignal) => Promise<RemoteCallResult>,
  options: ListingOptions = {},
): { defs: RemoteToolDef[]; warnings: string[] } {
  const { maxTools = DEFAULT_MAX_TOOLS, ...trust } = options;
  const warnings: string[] = [];
  const defs: RemoteToolDef[] = [];
  const names = new Set<string>();
  let over = 0;
  for (const item of raw) {
    if (defs.length >= maxTools) {
      over++;
      continue;
    }
    const checked = checkRemoteTool(item);
    if (!checked.ok) {
      warnings.push(`skipped: ${checked.reason}`);
      continue;
    }
    const def = remoteToolDefinition(serverId, checked.tool, call, trust);
    if (names.has(def.name)) {
      warnings.push(
        `skipped: tool "${peerLabel(checked.tool.name, 80)}" has the same svc name (${def.name}) as another tool`,
      );
      continue;
    }
    names.add(def.name);
    defs.push(def);
  }
  const kept =
    warnings.length > MAX_WARNINGS
      ? [
          ...warnings.slice(0, MAX_WARNINGS - 1),
          `skipped: ${warnings.length - MAX_WARNINGS + 1} more tools (reasons not listed)`,
        ]
      : warnings;
  if (over > 0) {
    kept.push(
      `skipped: ${over} more tool${over === 1 ? '' : 's'} past the limit of ${maxTools} per server (mcp.${serverId}.max_tools)`,
    );
  }
  return { defs, warnings: kept };
}
