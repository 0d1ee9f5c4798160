/**
 * Tools of a connected MCP server as registry tools: named `mcp_<id>_<tool>` (sanitized), their
 * JSON Schema passed through to the model unchanged. Every tool counts as mutating (and so asks
 * permission) unless the server's block sets `trust_annotations` and the tool says `readOnlyHint`
 * without `destructiveHint`: annotations are hints from a peer, not facts. A peer's tool list is
 * untrusted: each entry is checked on its own, and a malformed one is skipped with a warning
 * instead of failing the server. What a call answers is made safe to show (`peerJson`) before any
 * caller sees it: it reaches terminals, clients and the model.
 * @module
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { SvcError } from '../errors';
import type { PermissionRequest } from '../permissions/permission-service';
import type { ToolFacts } from '../permissions/tool-policy';
import { peerError, peerJson, peerLabel, peerText } from './peer-text';

/** What a remote tool's call gets from the caller: cancellation and the permission ask. */
export interface RemoteCallContext {
  signal: AbortSignal;
  ask(request: PermissionRequest): Promise<void>;
}

/** A tool of an MCP server as the tool registry takes it (a tool definition, structurally). */
export interface RemoteToolDef extends ToolFacts {
  description: string;
  input: z.ZodType;
  /** A mutating remote tool asks for itself (naming the server and the remote tool). */
  asksPermission: boolean;
  run(ctx: RemoteCallContext, input: Record<string, unknown>): Promise<McpToolOutput>;
  toModelOutput(output: McpToolOutput): string;
}

/** Where the servers' tools go: the tool registry, seen through what this domain needs of it. */
export interface RemoteToolSink {
  gates(): { tool: ToolFacts }[];
  add(tools: RemoteToolDef[]): void;
  remove(predicate: (tool: ToolFacts) => boolean): void;
}

/** Family of a remote tool: `mcp:<server id>` (capabilities count them per server). */
export const remoteFamily = (serverId: string) => `mcp:${serverId}`;
export const isRemoteTool = (tool: { family: string }) => tool.family.startsWith('mcp:');
/** Keys of a result's content whose strings are base64 (left as sent: nothing to clean). */
const BASE64_KEYS: ReadonlySet<string> = new Set(['data', 'blob']);
/** Keys of an input schema whose strings are text to read (made safe); the rest is the contract. */
const SCHEMA_TEXT_KEYS: ReadonlySet<string> = new Set(['description', 'title']);
/** Providers cap tool names at 64 characters of `[A-Za-z0-9_-]`. */
const MAX_NAME = 64;
/**
 * The deepest nesting (objects and arrays) of a tool's input schema svc takes: real schemas stay
 * far below it, and a schema thousands of levels deep fails the JSON Schema conversion every run
 * does, and with it every run.
 */
export const MAX_SCHEMA_DEPTH = 64;
/** The largest input schema svc takes (its JSON, in bytes): it goes to the model on every request. */
export const MAX_SCHEMA_BYTES = 64 * 1024;

export interface RemoteTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; title?: string };
}

export interface RemoteContent {
  type: string;
  text?: string;
  mimeType?: string;
  data?: string;
  uri?: string;
  resource?: { uri?: string; text?: string; mimeType?: string };
  [key: string]: unknown;
}

export interface RemoteCallResult {
  content?: RemoteContent[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  [key: string]: unknown;
}

/** What a remote tool returns to svc callers (the agent reads `toModelOutput`). */
export interface McpToolOutput {
  mcp_server: string;
  mcp_tool: string;
  content: RemoteContent[];
  structured_content?: Record<string, unknown>;
}

export type CallRemote = (
  tool: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
) => Promise<RemoteCallResult>;

export function sanitizeName(text: string): string {
  return text.replace(/[^A-Za-z0-9_]/g, '_');
}

export function toolPrefix(serverId: string): string {
  return `mcp_${sanitizeName(serverId)}_`;
}

export function registryName(serverId: string, tool: string): string {
  const full = `${toolPrefix(serverId)}${sanitizeName(tool)}`;
  if (full.length <= MAX_NAME) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 8);
  return `${full.slice(0, MAX_NAME - 9)}_${hash}`;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Checks one entry of a `tools/list` answer. */
export function checkRemoteTool(
  raw: unknown,
): { ok: true; tool: RemoteTool } | { ok: false; reason: string } {
  if (!isPlainObject(raw)) return { ok: false, reason: 'a tool entry is not an object' };
  const name = raw.name;
  if (typeof name !== 'string' || name.trim() === '') return { ok: false, reason: 'a tool has no name' };
  const label = `tool "${peerLabel(name, 80)}"`;
  const schema = raw.inputSchema;
  if (!isPlainObject(schema))
    return { ok: false, reason: `${label}: inputSchema is not a JSON Schema object` };
  if (schema.type !== 'object') {
    return {
      ok: false,
      reason: `${label}: inputSchema.type must be "object", got ${peerLabel(String(JSON.stringify(schema.type)), 80)}`,
    };
  }
  if (schema.properties !== undefined) {
    if (!isPlainObject(schema.properties)) {
      return { ok: false, reason: `${label}: inputSchema.properties is not an object` };
    }
    for (const [key, value] of Object.entries(schema.properties)) {
      if (!isPlainObject(value) && typeof value !== 'boolean') {
        return {
          ok: false,
          reason: `${label}: inputSchema.properties.${peerLabel(key, 80)} is not a schema`,
        };
      }
    }
  }
  if (
    schema.required !== undefined &&
    (!Array.isArray(schema.required) || schema.required.some((r) => typeof r !== 'string'))
  ) {
    return { ok: false, reason: `${label}: inputSchema.required is not a list of names` };
  }
  if (raw.description !== undefined && typeof raw.description !== 'string') {
    return { ok: false, reason: `${label}: description is not a string` };
  }
  const bound = schemaBound(schema);
  if (bound) return { ok: false, reason: `${label}: inputSchema ${bound}` };
  const annotations = isPlainObject(raw.annotations) ? raw.annotations : undefined;
  return {
    ok: true,
    tool: {
      name,
      title: typeof raw.title === 'string' ? raw.title : undefined,
      description: raw.description as string | undefined,
      inputSchema: schema,
      annotations: annotations
        ? {
            readOnlyHint: annotations.readOnlyHint === true,
            destructiveHint: annotations.destructiveHint === true,
            title: typeof annotations.title === 'string' ? annotations.title : undefined,
          }
        : undefined,
    },
  };
}

/** Why a schema is too deep or too large to take (MAX_SCHEMA_DEPTH, MAX_SCHEMA_BYTES), if it is. */
function schemaBound(schema: Record<string, unknown>): string | undefined {
  // Walked without recursion: the depth is the peer's to choose.
  let level: unknown[] = [schema];
  for (let depth = 1; level.length > 0; depth++) {
    if (depth > MAX_SCHEMA_DEPTH) return `is nested deeper than ${MAX_SCHEMA_DEPTH} levels`;
    const next: unknown[] = [];
    for (const node of level) {
      for (const child of Object.values(node as object)) {
        if (typeof child === 'object' && child !== null) next.push(child);
      }
    }
    level = next;
  }
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > MAX_SCHEMA_BYTES) {
    return `is ${Math.ceil(bytes / 1024)} KiB of JSON, over the ${MAX_SCHEMA_BYTES / 1024} KiB limit`;
  }
  return undefined;
}

/**
 * The input schema svc validates with: any object (the server validates its own input), carrying
 * the remote JSON Schema as metadata so `z.toJSONSchema` (what models and clients see) returns it.
 */
export function remoteInputSchema(schema: Record<string, unknown>): z.ZodType {
  // Its descriptions and titles reach the model and listings (`svc tools --include-schemas`).
  const { $schema: _schema, $id: _id, id: _legacyId, ...rest } = peerJson(schema, { only: SCHEMA_TEXT_KEYS });
  return z.looseObject({}).meta(rest);
}

/** How far a server's own annotations are believed (its `[mcp.<id>]` block). */
export interface AnnotationTrust {
  /** `trust_annotations`: a `readOnlyHint` tool runs without asking (never a destructive one). */
  trustAnnotations?: boolean;
}

/** Whether a remote tool counts as mutating: yes unless its read-only hint is trusted and sound. */
export function remoteMutates(remote: RemoteTool, trust: AnnotationTrust = {}): boolean {
  const hints = remote.annotations;
  const readOnly = hints?.readOnlyHint === true && hints.destructiveHint !== true;
  return !(trust.trustAnnotations === true && readOnly);
}

export function remoteToolDefinition(
  serverId: string,
  remote: RemoteTool,
  call: CallRemote,
  trust: AnnotationTrust = {},
): RemoteToolDef {
  const name = registryName(serverId, remote.name);
  const mutates = remoteMutates(remote, trust);
  // What the server says about the tool is shown (prompts, clients, the model): made safe first.
  // Calls use the remote name as the server gave it.
  const shownName = peerLabel(remote.name);
  const title = remote.title?.trim() || remote.annotations?.title?.trim();
  const summary = peerText(remote.description?.trim() || '') || (title ? peerLabel(title) : shownName);
  return {
    name,
    family: remoteFamily(serverId),
    tag: 'primitive',
    description: `${summary}\n(Tool "${shownName}" of the MCP server "${serverId}".)`,
    input: remoteInputSchema(remote.inputSchema),
    mutates,
    // A mutating remote tool asks itself, naming the server and the remote tool.
    asksPermission: mutates,
    async run(ctx, input) {
      if (mutates) {
        await ctx.ask({
          tool: name,
          title: `${shownName} on MCP server ${serverId}`,
          scope: name,
          details: { mcp_server: serverId, mcp_tool: shownName, arguments: input },
        });
      }
      const result = await call(remote.name, input, ctx.signal);
      if (result.isError) {
        // The server's own error (usually the arguments): the model reads it and can correct itself.
        throw new SvcError(
          'invalid_input',
          `${name}: ${peerError(contentText(result)) || 'the MCP server reported an error'}`,
          {
            details: { mcp_server: serverId, mcp_tool: shownName },
            retryable: false,
          },
        );
      }
      // What the server answers is shown (the TUI, clients, the model): every string made safe,
      // nothing cut; base64 payloads (an image's `data`, a resource's `blob`) stay as sent.
      return {
        mcp_server: serverId,
        mcp_tool: shownName,
        content: peerJson(result.content ?? [], { keep: BASE64_KEYS }),
        ...(result.structuredContent ? { structured_content: peerJson(result.structuredContent) } : {}),
      };
    },
    toModelOutput: (output: McpToolOutput) =>
      contentText({ content: output.content, structuredContent: output.structured_content }),
  };
}

/** The text a model reads for an MCP result: text parts as they are, other parts described. */
export function contentText(result: RemoteCallResult): string {
  const parts = (result.content ?? []).map((item) => {
    switch (item.type) {
      case 'text':
        return item.text ?? '';
      case 'image':
      case 'audio':
        return `[${item.type} ${item.mimeType ?? ''}, ${Math.floor(((item.data?.length ?? 0) * 3) / 4)} bytes]`;
      case 'resource':
        return [`[resource ${item.resource?.uri ?? ''}]`, item.resource?.text].filter(Boolean).join('\n');
      case 'resource_link':
        return `[resource link ${item.uri ?? ''}]`;
      default:
        return `[${item.type} content]`;
    }
  });
  if (parts.every((p) => p === '') && result.structuredContent)
    return JSON.stringify(result.structuredContent);
  return parts.join('\n');
}
