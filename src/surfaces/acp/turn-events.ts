/**
 * The session's bus events of one run as ACP `session/update` notifications: message and thought
 * chunks, tool calls with their status, kind, locations and diffs, the plan from the todo list and
 * the staged plan, and permission requests relayed to the client.
 * @module
 */
import { resolve } from 'node:path';
import type * as acp from '@agentclientprotocol/sdk/unstable';
import type { App } from '../../app';
import type { SessionEvent } from '../../events/bus';
import type { SessionEventPayloads } from '../../events/types';
import { invokeTool } from '../../tools/core/call-tool';
import { markdownPlan, todoPlan, toolKind, toolLocations } from './mapping';
import { askClient } from './permission-relay';
import type { TurnContext } from './turn-context';

/** A listener for the session's events; those of other runs are skipped once `runId()` is known. */
export function turnEventHandler(
  turn: TurnContext,
  runId: () => string | undefined,
  early: SessionEvent[],
): (event: SessionEvent) => void {
  const { app, session, sessionId, updates } = turn;
  const update = updates.update;
  // The diffs of a call's file changes, read from the file history when the change is announced.
  const diffs = new Map<string, Promise<acp.ToolCallContent | undefined>[]>();
  const running: { id: string; tool: string }[] = [];

  return (event: SessionEvent) => {
    const p = event.payload as Record<string, unknown>;
    const current = runId();
    if (!current) {
      early.push(event);
      return;
    }
    if (typeof p.run_id === 'string' && p.run_id !== current) return;
    switch (event.type) {
      case 'message.delta': {
        const e = p as SessionEventPayloads['message.delta'];
        update({
          sessionUpdate: e.part === 'reasoning' ? 'agent_thought_chunk' : 'agent_message_chunk',
          content: { type: 'text', text: e.delta },
        });
        return;
      }
      case 'tool.started': {
        const e = p as SessionEventPayloads['tool.started'];
        running.push({ id: e.tool_call_id, tool: e.tool });
        update({
          sessionUpdate: 'tool_call',
          toolCallId: e.tool_call_id,
          title: e.title || e.tool,
          kind: toolKind(e.tool),
          status: 'in_progress',
          locations: toolLocations(e.tool, e.title, app.workspace),
        });
        return;
      }
      case 'file.changed': {
        const e = p as SessionEventPayloads['file.changed'];
        const call = [...running].reverse().find((c) => c.tool === e.tool);
        if (call) {
          // A history read that fails leaves the diff out, as a missing change did before.
          const diff = fileDiff(app, sessionId, e.path).catch(() => undefined);
          diffs.set(call.id, [...(diffs.get(call.id) ?? []), diff]);
        }
        return;
      }
      case 'tool.finished': {
        const e = p as SessionEventPayloads['tool.finished'];
        const at = running.findIndex((c) => c.id === e.tool_call_id);
        if (at !== -1) running.splice(at, 1);
        const pending = diffs.get(e.tool_call_id) ?? [];
        updates.updateFrom(
          Promise.all(pending).then((read) => ({
            sessionUpdate: 'tool_call_update' as const,
            toolCallId: e.tool_call_id,
            status: e.is_error ? ('failed' as const) : ('completed' as const),
            content: [
              ...read.filter((d) => d !== undefined),
              ...(e.summary
                ? [{ type: 'content' as const, content: { type: 'text' as const, text: e.summary } }]
                : []),
            ],
          })),
        );
        if (e.tool === 'todos' && !e.is_error)
          updates.updateFrom(
            app.ws.todos
              .get(sessionId)
              .then((list) => ({ sessionUpdate: 'plan' as const, entries: todoPlan(list.todos) })),
          );
        return;
      }
      case 'plan.updated': {
        const e = p as SessionEventPayloads['plan.updated'];
        void planEntries(app, sessionId, e.has_plan).then((entries) =>
          update({ sessionUpdate: 'plan', entries }),
        );
        return;
      }
      case 'permission.requested':
        askClient(turn, p as SessionEventPayloads['permission.requested']);
        return;
      case 'permission.resolved': {
        // Answered elsewhere (the TUI, an HTTP client): stop waiting for this client.
        const e = p as SessionEventPayloads['permission.resolved'];
        session.asks.get(e.request_id)?.abort();
        return;
      }
      default:
        return;
    }
  };
}

/** The latest recorded change of a file in this session, as an ACP diff. */
async function fileDiff(app: App, sessionId: string, path: string): Promise<acp.ToolCallContent | undefined> {
  const changes = await app.ws.history.list({ sessionId, path });
  const last = changes[changes.length - 1];
  const change = last ? await app.ws.history.get(last.id) : undefined;
  if (!change || change.after === null) return undefined;
  return {
    type: 'diff',
    path: resolve(app.workspace, path),
    oldText: change.before,
    newText: change.after,
  };
}

/** The staged plan's list items (read like the TUI reads it: an operator client's direct call). */
async function planEntries(app: App, sessionId: string, hasPlan: boolean): Promise<acp.PlanEntry[]> {
  if (!hasPlan) return [];
  try {
    const plan = (await invokeTool(
      app,
      'get_plan',
      { session_id: sessionId },
      { surface: 'acp', sessionId },
    )) as {
      plan?: { markdown?: string } | null;
      markdown?: string;
    };
    return markdownPlan(plan.plan?.markdown ?? plan.markdown ?? '');
  } catch {
    return [];
  }
}
