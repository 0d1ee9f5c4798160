/**
 * Pure translations between svc and the Agent Client Protocol: prompt content blocks to prompt
 * text, tool names to ACP tool kinds, run outcomes to stop reasons, todos and plans to ACP plan
 * entries, stored messages to the `session/update` notifications that replay them, and provider
 * entries to `providers/list` rows.
 * @module
 */
import { isAbsolute, join } from 'node:path';
import type {
  ContentBlock,
  PlanEntry,
  ProviderInfo,
  SessionUpdate,
  StopReason,
  ToolKind,
} from '@agentclientprotocol/sdk/unstable';
import type { RunResult } from '../../agent/types';
import type { ProviderEntry } from '../../providers/provider-entries';
import type { Readiness } from '../../providers/readiness';
import type { Message } from '../../sessions/session-store';
import type { Todo } from '../../workspace/todos';

/** The prompt text of an ACP prompt: text blocks, embedded resources (with their URI) and links. */
export function promptText(blocks: readonly ContentBlock[]): string {
  const parts: string[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case 'text':
        parts.push(block.text);
        break;
      case 'resource': {
        const r = block.resource as { uri: string; text?: string; mimeType?: string | null };
        if (typeof r.text === 'string') parts.push(`<context uri="${r.uri}">\n${r.text}\n</context>`);
        else parts.push(`[attached ${r.mimeType ?? 'binary'} resource ${r.uri}]`);
        break;
      }
      case 'resource_link':
        parts.push(`[${block.title ?? block.name}](${block.uri})`);
        break;
      default:
        parts.push(`[${block.type} content is not supported by svc and was left out]`);
    }
  }
  return parts.join('\n\n').trim();
}

const KINDS: Record<string, ToolKind> = {
  view: 'read',
  ls: 'read',
  diagnostics: 'read',
  glob: 'search',
  grep: 'search',
  search: 'search',
  session_search: 'search',
  edit: 'edit',
  multiedit: 'edit',
  write: 'edit',
  checkpoint_restore: 'edit',
  checkpoint_undo: 'edit',
  bash: 'execute',
  job_output: 'execute',
  job_kill: 'execute',
  fetch: 'fetch',
  download: 'fetch',
  todos: 'think',
  set_plan_artifact: 'think',
  approve_plan: 'switch_mode',
  return_to_plan: 'switch_mode',
};

export function toolKind(tool: string): ToolKind {
  return KINDS[tool] ?? 'other';
}

/** Where a file tool works, from its title (`edit src/a.ts`), as an absolute path. */
export function toolLocations(tool: string, title: string, workspace: string): { path: string }[] {
  const kind = toolKind(tool);
  if (kind !== 'read' && kind !== 'edit') return [];
  const target = title.startsWith(`${tool} `) ? title.slice(tool.length + 1).trim() : '';
  if (!target || /\s/.test(target)) return [];
  return [{ path: isAbsolute(target) ? target : join(workspace, target) }];
}

/** How a run ended, as the ACP stop reason (failures are errors, not stop reasons). */
export function stopReason(result: Pick<RunResult, 'status' | 'reason'>): StopReason | undefined {
  switch (result.status) {
    case 'completed':
      return 'end_turn';
    case 'cancelled':
    case 'interrupted':
      return 'cancelled';
    default:
      if (result.reason === 'max_steps') return 'max_turn_requests';
      return undefined;
  }
}

/** The session's todo list as an ACP plan (cancelled items are left out). */
export function todoPlan(todos: readonly Todo[]): PlanEntry[] {
  return todos
    .filter((t) => t.status !== 'cancelled')
    .map((t) => ({
      content: t.status === 'in_progress' && t.active_form ? t.active_form : t.content,
      priority: 'medium',
      status: t.status === 'completed' ? 'completed' : t.status === 'in_progress' ? 'in_progress' : 'pending',
    }));
}

/** A staged plan's markdown as ACP plan entries: its list items, in order. */
export function markdownPlan(markdown: string): PlanEntry[] {
  const entries: PlanEntry[] = [];
  for (const line of markdown.split('\n')) {
    const m = /^\s{0,3}(?:\d+[.)]|[-*+])\s+(?:\[( |x|X)\]\s+)?(.+)$/.exec(line);
    if (!m) continue;
    entries.push({
      content: m[2].trim(),
      priority: 'medium',
      status: m[1] && m[1] !== ' ' ? 'completed' : 'pending',
    });
  }
  return entries;
}

const MAX_REPLAY_CHARS = 4000;

/** The updates that show a stored conversation again (`session/load`). */
export function replayUpdates(messages: readonly Message[], workspace: string): SessionUpdate[] {
  const updates: SessionUpdate[] = [];
  for (const message of messages) {
    for (const part of message.parts) {
      if (part.type === 'text' && part.text) {
        if (message.role === 'user')
          updates.push({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: part.text } });
        else if (message.role === 'assistant')
          updates.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: part.text } });
      } else if (part.type === 'reasoning' && part.text) {
        updates.push({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: part.text } });
      } else if (part.type === 'tool-call') {
        const input = (part.input ?? {}) as Record<string, unknown>;
        const target = input.path ?? input.command ?? input.pattern ?? input.url;
        const title = typeof target === 'string' ? `${part.tool} ${target}` : part.tool;
        updates.push({
          sessionUpdate: 'tool_call',
          toolCallId: part.tool_call_id,
          title,
          kind: toolKind(part.tool),
          status: 'pending',
          rawInput: part.input,
          locations: toolLocations(part.tool, title, workspace),
        });
      } else if (part.type === 'tool-result') {
        const text = typeof part.output === 'string' ? part.output : JSON.stringify(part.output);
        updates.push({
          sessionUpdate: 'tool_call_update',
          toolCallId: part.tool_call_id,
          status: part.is_error ? 'failed' : 'completed',
          content: [
            {
              type: 'content',
              content: {
                type: 'text',
                text: text.length > MAX_REPLAY_CHARS ? `${text.slice(0, MAX_REPLAY_CHARS)}…` : text,
              },
            },
          ],
        });
      }
    }
  }
  return updates;
}

const PROTOCOLS: Record<string, string> = {
  anthropic: 'anthropic',
  'anthropic-compat': 'anthropic',
  openai: 'openai',
  'openai-compat': 'openai',
  azure: 'azure',
  'google-vertex': 'vertex',
  'amazon-bedrock': 'bedrock',
};

/** The wire protocol of a provider type (`_<type>` for the ones ACP does not name). */
export function llmProtocol(type: string): string {
  return PROTOCOLS[type] ?? `_${type}`;
}

export interface ModelPickerRow {
  /** `<provider>/<model>` */
  selector: string;
  provider: string;
  name: string;
  context_window: number | null;
  /** Whether the provider can serve it now; unavailable rows are listed too (AUTH-54). */
  ready: boolean;
  /** Why not, with the fix; null when ready. */
  reason: string | null;
}

/**
 * One `providers/list` row: ACP's ProviderInfo (routing in `current` when the provider is ready,
 * null when it is not usable now) with the model picker rows of the provider in `_meta.svc`.
 * Never a credential: only where one comes from.
 */
export function providerInfo(entry: ProviderEntry, readiness: Readiness): ProviderInfo {
  const protocol = llmProtocol(entry.type);
  const models: ModelPickerRow[] = entry.models.map((m) => ({
    selector: `${entry.id}/${m.id}`,
    provider: entry.id,
    name: m.name ?? m.id,
    context_window: m.context_window ?? null,
    ready: readiness.ready,
    reason: readiness.reason,
  }));
  return {
    providerId: entry.id,
    supported: [protocol],
    required: false,
    current: readiness.ready && entry.base_url ? { apiType: protocol, baseUrl: entry.base_url } : null,
    _meta: {
      svc: {
        name: entry.name,
        type: entry.type,
        auth: entry.auth,
        configured: entry.configured,
        disabled: entry.disabled,
        ready: readiness.ready,
        reason: readiness.reason,
        credential_source: readiness.source,
        recommended_model: entry.default_large ?? null,
        models,
      },
    },
  };
}
