/**
 * JSON read models of sessions, messages and runs, shared by every tool that returns them (so a
 * session looks the same from list_sessions, get_session and session_diagnose).
 * @module
 */
import type { App } from '../app';
import { SvcError } from '../errors';
import type { AgentRun } from '../runs/run-ledger';
import type { Message, Session } from '../sessions/session-store';

export interface SessionView {
  id: string;
  parent_id: string | null;
  title: string;
  mode: string;
  agent: string;
  model: string | null;
  reasoning_effort: string | null;
  workflow_phase: string;
  state: string;
  queue_length: number;
  message_count: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  created_at: number;
  updated_at: number;
}

export function sessionView(app: App, session: Session): SessionView {
  const state = app.agent.state(session.id);
  return {
    id: session.id,
    parent_id: session.parent_id,
    title: session.title,
    mode: session.mode,
    agent: session.agent,
    model: session.model,
    reasoning_effort: session.reasoning_effort,
    workflow_phase: workflowPhase(session),
    state: state.state,
    queue_length: state.queue_length,
    message_count: app.sessions.messageCount(session.id),
    prompt_tokens: session.prompt_tokens,
    completion_tokens: session.completion_tokens,
    cost: session.cost,
    created_at: session.created_at,
    updated_at: session.updated_at,
  };
}

/** planning, execute, or none when the staged workflow is not in use. */
export function workflowPhase(session: Session): string {
  const phase = session.metadata.workflow_phase;
  return typeof phase === 'string' && phase ? phase : 'none';
}

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

/**
 * The session a tool acts on: the one named, else the calling run's session, else the client's
 * current session. A clear error naming the field when there is none.
 */
export function targetSession(app: App, sessionId: string | undefined, contextSessionId?: string): Session {
  if (sessionId) return app.sessions.require(sessionId);
  if (contextSessionId) return app.sessions.require(contextSessionId);
  const current = app.agent.currentSession();
  if (current) return app.sessions.require(current);
  throw new SvcError(
    'invalid_input',
    'session_id: required here (there is no current session); pass session_id, or create one with create_session',
  );
}

export function preview(text: string, max = 80): string {
  const line = text.trim().split('\n')[0].replace(/\s+/g, ' ');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
