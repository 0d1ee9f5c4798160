/**
 * A run's trace, built from its ledger events: phase spans, model steps with their tool calls,
 * permission decisions, errors, the events tools appended (local_shell_started, …) and the child
 * runs. Read-only; the ledger is the source.
 * @module
 */
import type { AgentRun, RunEvent, RunLedger } from './run-ledger';

export interface PhaseSpan {
  phase: string;
  step: number | null;
  started_at: number;
  ended_at: number | null;
  duration_ms: number | null;
}

export interface TraceToolCall {
  tool_call_id: string;
  tool: string;
  title: string | null;
  started_at: number;
  finished_at: number | null;
  duration_ms: number | null;
  is_error: boolean | null;
  error: string | null;
  /** Events the tool appended during the call (local_shell_started, …). */
  events: { type: string; payload: Record<string, unknown>; created_at: number }[];
}

export interface TraceStep {
  step: number;
  started_at: number;
  finished_at: number | null;
  duration_ms: number | null;
  finish_reason: string | null;
  usage: Record<string, unknown> | null;
  cost: number | null;
  tool_calls: TraceToolCall[];
}

/** Event types the loop itself writes; anything else was appended by a tool or another domain. */
const CORE_TYPES = new Set([
  'run.queued',
  'run.created',
  'run.started',
  'run.finished',
  'run.interrupted',
  'run.cancel_requested',
  'phase',
  'model.resolved',
  'prompt.assembled',
  'tool.started',
  'tool.finished',
  'step.finished',
  'permission.allowed',
  'permission.requested',
  'permission.resolved',
  'permission.unattended',
  'loop.detected',
  'compaction.finished',
  'compaction.failed',
  'error',
]);

/** Phase spans: each `phase` event opens one, closed by the next or by the run's end. */
export function phaseSpans(events: readonly RunEvent[], run: AgentRun): PhaseSpan[] {
  const spans: PhaseSpan[] = [];
  for (const event of events) {
    if (event.type !== 'phase') continue;
    const open = spans[spans.length - 1];
    if (open && open.ended_at === null) {
      open.ended_at = event.created_at;
      open.duration_ms = event.created_at - open.started_at;
    }
    spans.push({
      phase: String(event.payload.phase ?? 'unknown'),
      step: typeof event.payload.step === 'number' ? event.payload.step : null,
      started_at: event.created_at,
      ended_at: null,
      duration_ms: null,
    });
  }
  const last = spans[spans.length - 1];
  if (last && last.ended_at === null && run.finished_at !== null) {
    last.ended_at = run.finished_at;
    last.duration_ms = run.finished_at - last.started_at;
  }
  return spans;
}

export async function buildTrace(ledger: RunLedger, run: AgentRun) {
  const events = await ledger.events(run.id, { limit: 100_000 });
  const steps: TraceStep[] = [];
  const calls = new Map<string, TraceToolCall>();
  const permissions: Record<string, unknown>[] = [];
  const errors: Record<string, unknown>[] = [];
  const appended: { seq: number; type: string; payload: Record<string, unknown>; created_at: number }[] = [];
  let current: TraceStep | undefined;
  for (const event of events) {
    const p = event.payload;
    switch (event.type) {
      case 'phase':
        if (p.phase === 'model' && typeof p.step === 'number') {
          current = {
            step: p.step,
            started_at: event.created_at,
            finished_at: null,
            duration_ms: null,
            finish_reason: null,
            usage: null,
            cost: null,
            tool_calls: [],
          };
          steps.push(current);
        }
        break;
      case 'step.finished':
        if (current) {
          current.finished_at = event.created_at;
          current.duration_ms = event.created_at - current.started_at;
          current.finish_reason = (p.finish_reason as string | null) ?? null;
          current.usage = (p.usage as Record<string, unknown> | null) ?? null;
          current.cost = typeof p.cost === 'number' ? p.cost : null;
        }
        break;
      case 'tool.started': {
        const call: TraceToolCall = {
          tool_call_id: String(p.tool_call_id),
          tool: String(p.tool),
          title: typeof p.title === 'string' ? p.title : null,
          started_at: event.created_at,
          finished_at: null,
          duration_ms: null,
          is_error: null,
          error: null,
          events: [],
        };
        calls.set(call.tool_call_id, call);
        current?.tool_calls.push(call);
        break;
      }
      case 'tool.finished': {
        const call = calls.get(String(p.tool_call_id));
        if (call) {
          call.finished_at = event.created_at;
          call.duration_ms =
            typeof p.duration_ms === 'number' ? p.duration_ms : event.created_at - call.started_at;
          call.is_error = p.is_error === true;
          call.error = typeof p.error === 'string' ? p.error : null;
        }
        break;
      }
      case 'permission.allowed':
      case 'permission.requested':
      case 'permission.resolved':
      case 'permission.unattended':
        permissions.push({ type: event.type, ...p, at: event.created_at });
        break;
      case 'error':
      case 'compaction.failed':
        errors.push({ type: event.type, ...p, at: event.created_at });
        break;
      default:
        if (!CORE_TYPES.has(event.type)) {
          appended.push({ seq: event.seq, type: event.type, payload: p, created_at: event.created_at });
          const call = typeof p.tool_call_id === 'string' ? calls.get(p.tool_call_id) : undefined;
          call?.events.push({ type: event.type, payload: p, created_at: event.created_at });
        }
    }
  }
  const children = await ledger.list({ parent_run_id: run.id, limit: 500 });
  const toolCalls = [...calls.values()];
  return {
    phases: phaseSpans(events, run),
    steps,
    permissions,
    errors,
    ledger_events: appended,
    children,
    totals: {
      events: events.length,
      steps: steps.length,
      tool_calls: toolCalls.length,
      tool_errors: toolCalls.filter((c) => c.is_error).length,
      permission_prompts: permissions.filter((e) => e.type === 'permission.requested').length,
      child_runs: children.length,
    },
  };
}
