/**
 * A tool step's only result held for its step end on PostgreSQL (issue 18 item 6, p-pgtoolend):
 * what ./step-recorder.ts keeps of it, the events the step end's statement appends for it, and the
 * message it stored; the step end's message updates, and its results in call order; the step's
 * later calls held with it (p-heldmulti) and their writes in its message's statement.
 * @module
 */
import type { Message, MessagePart } from '../sessions/session-store';
import type { MessagePatch, SessionEventWrite, StepCloseCreated, Usage } from '../sessions/types';
import type { AgentHost } from './deps';
import type { Held } from './held-event';
import type { CallStart, FinishedWrite, RecordedToolCall } from './step-message-writes';

/**
 * The held result's `tool.finished`, and its message once the step end took it (`created`), with
 * the session events after its `message.created` (`trailing`: the step's later calls' starts and
 * results held with it, p-heldmulti).
 */
export interface HeldResult {
  finished: FinishedWrite;
  created?: StepCloseCreated;
  trailing?: readonly SessionEventWrite[];
}

type Event = { type: string; payload: Record<string, unknown> };

/**
 * The step's completions in message order (assistant, then tool); led, for a result the step end
 * writes (`held` taken, its id known), by its `tool.finished` and `message.created`, as when its
 * message was written at the result; led before them, for an assistant message the step end
 * writes (`opened`, p-heldstep), by its `message.created` and what followed it (its call's start,
 * or its held deltas), as when it was written at the call's start or its first delta; the held
 * result's message followed by the step's later calls' starts and results (`trailing`).
 */
export function stepCompletions(
  session_id: string,
  run_id: string,
  assistantId: string | undefined,
  toolId: string | undefined,
  held: HeldResult | undefined,
  opened?: { id: string; events: readonly Event[] },
): Event[] {
  const events: Event[] = [];
  if (opened) {
    events.push({
      type: 'message.created',
      payload: { session_id, message_id: opened.id, role: 'assistant', run_id },
    });
    events.push(...opened.events);
  }
  const heldId = held?.created?.id;
  if (held && heldId) {
    events.push(...held.finished.events);
    events.push({
      type: 'message.created',
      payload: { session_id, message_id: heldId, role: 'tool', run_id },
    });
    if (held.trailing) events.push(...held.trailing);
  }
  for (const id of [assistantId ?? opened?.id, toolId ?? heldId]) {
    if (id) events.push({ type: 'message.completed', payload: { session_id, message_id: id, run_id } });
  }
  return events;
}

/** The tool message the step end's statement inserted, finished. */
export function heldToolMessage(
  id: string,
  session_id: string,
  run_id: string,
  parts: MessagePart[],
  now: number,
): Message {
  return {
    id,
    session_id,
    role: 'tool',
    parts,
    model: null,
    provider: null,
    usage: null,
    cost: 0,
    run_id,
    created_at: now,
    updated_at: now,
    finished_at: now,
  };
}

/** Results in the order the model made the calls (they can finish in another order). */
export function orderedResults(
  results: readonly MessagePart[],
  calls: readonly RecordedToolCall[],
): MessagePart[] {
  const index = (part: MessagePart) =>
    part.type === 'tool-result' ? calls.findIndex((c) => c.tool_call_id === part.tool_call_id) : -1;
  return [...results].sort((a, b) => index(a) - index(b));
}

/** A message of the step as `closingUpdates` takes it: `stored`, its parts are written already. */
interface Closing {
  id: string;
  parts: MessagePart[];
  stored: boolean;
}

/**
 * The step's end as message updates (assistant, then tool): the parts only when they changed
 * since they were last written; the assistant's usage and cost; both finished.
 */
export function closingUpdates(
  assistant: Closing | undefined,
  tool: Closing | undefined,
  usage: Usage | null,
  cost: number,
): { id: string; patch: MessagePatch }[] {
  const updates: { id: string; patch: MessagePatch }[] = [];
  // Two literals each, not `{ ...(stored ? {} : { parts }), finished }`: on Node 20 a property
  // after a spread that copied one goes through V8's runtime, a map of its own (p-sqlprofile).
  if (assistant)
    updates.push({
      id: assistant.id,
      patch: assistant.stored
        ? { usage, cost, finished: true }
        : { parts: [...assistant.parts], usage, cost, finished: true },
    });
  if (tool)
    updates.push({
      id: tool.id,
      patch: tool.stored ? { finished: true } : { parts: tool.parts, finished: true },
    });
  return updates;
}

/**
 * The call's result part, added to `results`; undefined, nothing added, when the call's result is
 * there already (a result reported twice).
 */
export function addResult(
  results: MessagePart[],
  toolCallId: string,
  tool: string,
  output: string,
  isError: boolean,
): MessagePart | undefined {
  if (results.some((r) => r.type === 'tool-result' && r.tool_call_id === toolCallId)) return undefined;
  const part: MessagePart = {
    type: 'tool-result',
    tool_call_id: toolCallId,
    tool,
    output,
    is_error: isError,
  };
  results.push(part);
  return part;
}

/** A call held after the step's first (p-heldmulti): its start, then its result's `tool.finished` once it came. */
export interface HeldLater {
  start: CallStart;
  finished?: FinishedWrite;
}

/** The call a held start is of. */
export const callOf = (start: CallStart) => start.event.payload.tool_call_id;

/** The held later calls' run events in call order: each start, then its result's when it came. */
export function laterEvents(later: readonly HeldLater[]): Held[] {
  return later.flatMap(({ start, finished }) => (finished ? [start.event, finished.event] : [start.event]));
}

/**
 * The held result's message's writes (p-heldmulti): its `tool.finished`, then the step's later
 * calls' starts and results (`later`), their run events one write in call order and their session
 * events after its `message.created` (`trailing`). `opened`: the step end's statement inserts the
 * assistant message too, its following write took the later events but the last (`heldOpen`), so
 * the last result's own write follows this message. No later call: the result's own write.
 */
export function heldToolWrite(
  app: Pick<AgentHost, 'runs'>,
  runId: string,
  held: HeldResult,
  later: readonly HeldLater[],
  opened: boolean,
): { write: Pick<FinishedWrite, 'write' | 'events'>; trailing?: SessionEventWrite[] } {
  if (later.length === 0) return { write: held.finished };
  const trailing = later.flatMap(({ start, finished }) => [start.announce, ...(finished?.events ?? [])]);
  const last = later.at(-1)?.finished;
  if (opened && last) return { write: { write: last.write, events: held.finished.events }, trailing };
  const list = app.runs.followingEvents?.(runId, [held.finished.event, ...laterEvents(later)]);
  if (!list) return { write: held.finished, trailing };
  return { write: { write: list.write, events: held.finished.events }, trailing };
}
