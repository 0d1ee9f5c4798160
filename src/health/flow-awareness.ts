/**
 * `list_recent_flow_awareness_events`: how the work flowed, from the session event log (what the
 * bus persisted, so any process sees it). Kinds and the events behind them:
 *
 * | kind              | event                          | fields                                   |
 * |-------------------|--------------------------------|------------------------------------------|
 * | phase_change      | `workflow.phase_changed`       | `phase`, `previous`                       |
 * | plan_update       | `plan.updated`                 | `has_plan`                               |
 * | queue_change      | `queue.changed`                | `length` (prompt text is never listed)   |
 * | claim_negotiation | `claim.negotiation_requested`  | `claim_id`, `negotiation_id`, `from_session_id` |
 * | handoff           | `session.created` of a child   | `parent_session_id`, `child_session_id`  |
 *
 * A session filter covers the session and its sub-agent sessions. Newest first.
 * @module
 */
import { type HealthReadoutDeps, type LoggedEvent, loggedEvents, scopeOf } from './evidence';

export const FLOW_KINDS = [
  'phase_change',
  'plan_update',
  'queue_change',
  'claim_negotiation',
  'handoff',
] as const;
export type FlowKind = (typeof FLOW_KINDS)[number];

const TYPE_OF: Record<FlowKind, string> = {
  phase_change: 'workflow.phase_changed',
  plan_update: 'plan.updated',
  queue_change: 'queue.changed',
  claim_negotiation: 'claim.negotiation_requested',
  handoff: 'session.created',
};

export interface FlowEvent {
  id: number;
  at: number;
  session_id: string;
  kind: FlowKind;
  type: string;
  summary: string;
  details: Record<string, unknown>;
}

export interface FlowAwarenessEvents {
  session_id: string | null;
  kinds: FlowKind[];
  count: number;
  counts: Record<FlowKind, number>;
  events: FlowEvent[];
}

export async function recentFlowAwarenessEvents(
  app: HealthReadoutDeps,
  input: { session_id?: string; kinds?: FlowKind[]; limit: number; after_id?: number },
): Promise<FlowAwarenessEvents> {
  const scope = await scopeOf(app, { session_id: input.session_id });
  const kinds = input.kinds?.length ? [...new Set(input.kinds)] : [...FLOW_KINDS];
  const rows = await loggedEvents(
    app,
    scope,
    kinds.map((k) => TYPE_OF[k]),
    { afterId: input.after_id },
  );
  const events = rows
    .map(toFlowEvent)
    .filter((e): e is FlowEvent => e !== undefined && kinds.includes(e.kind));
  const counts = Object.fromEntries(FLOW_KINDS.map((k) => [k, 0])) as Record<FlowKind, number>;
  for (const event of events) counts[event.kind]++;
  return {
    session_id: input.session_id ?? null,
    kinds,
    count: events.length,
    counts,
    events: events.slice(0, input.limit).map((e) => ({ ...e, summary: app.redactor.string(e.summary) })),
  };
}

function toFlowEvent(event: LoggedEvent): FlowEvent | undefined {
  const p = event.payload;
  const base = { id: event.id, at: event.created_at, session_id: event.session_id, type: event.type };
  switch (event.type) {
    case 'workflow.phase_changed':
      return {
        ...base,
        kind: 'phase_change',
        summary: `phase ${String(p.previous)} → ${String(p.phase)}`,
        details: { phase: p.phase, previous: p.previous },
      };
    case 'plan.updated':
      return {
        ...base,
        kind: 'plan_update',
        summary: p.has_plan ? 'plan updated' : 'plan cleared',
        details: { has_plan: p.has_plan === true },
      };
    case 'queue.changed':
      return {
        ...base,
        kind: 'queue_change',
        summary: `queue length ${Number(p.length ?? 0)}`,
        details: { length: Number(p.length ?? 0) },
      };
    case 'claim.negotiation_requested':
      return {
        ...base,
        kind: 'claim_negotiation',
        summary: `session ${String(p.from_session_id)} asked to release claim ${String(p.claim_id)}`,
        details: {
          claim_id: p.claim_id,
          negotiation_id: p.negotiation_id,
          from_session_id: p.from_session_id,
        },
      };
    case 'session.created':
      if (!p.parent_id) return undefined;
      return {
        ...base,
        kind: 'handoff',
        summary: `handed off to sub-agent session ${event.session_id}`,
        details: { parent_session_id: p.parent_id, child_session_id: event.session_id },
      };
    default:
      return undefined;
  }
}
