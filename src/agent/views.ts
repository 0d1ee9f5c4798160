/**
 * JSON read models of messages and runs, shared by every tool that returns them. A session's
 * shapes are sessions/session-views.ts.
 * @module
 */
import type { AgentRun } from '../runs/run-ledger';
import type { Message } from '../sessions/session-store';

// The session shapes live with the sessions (sessions/session-views.ts); re-exported for the
// domains that read the workflow phase from here.
export { workflowPhase } from '../sessions/session-views';

export function messageView(message: Message) {
  return {
    id: message.id,
    session_id: message.session_id,
    role: message.role,
    parts: message.parts,
    model: message.model,
    provider: message.provider,
    usage: message.usage,
    cost: message.cost,
    run_id: message.run_id,
    created_at: message.created_at,
    finished_at: message.finished_at,
  };
}

export function runView(run: AgentRun) {
  return {
    id: run.id,
    session_id: run.session_id,
    parent_run_id: run.parent_run_id,
    family_session_id: run.family_session_id,
    status: run.status,
    agent: run.agent,
    model: run.model,
    origin: run.origin,
    prompt_preview: preview(run.prompt, 120),
    reason: run.reason,
    error: run.error,
    failure: run.failure,
    steps: run.steps,
    usage: run.usage,
    cost: run.cost,
    result_message_id: run.result_message_id,
    pid: run.pid,
    cancel_requested: run.cancel_requested,
    created_at: run.created_at,
    started_at: run.started_at,
    finished_at: run.finished_at,
    duration_ms:
      run.started_at !== null && run.finished_at !== null ? run.finished_at - run.started_at : null,
  };
}

export type RunView = ReturnType<typeof runView>;

export function preview(text: string, max = 80): string {
  const line = text.trim().split('\n')[0].replace(/\s+/g, ' ');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
