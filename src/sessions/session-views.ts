/**
 * The public shapes of a session, used by every tool and surface: the session view (its fields,
 * its state and queue from the agent, its message count) and the session summary (the fields a
 * list or a client shows). A session looks the same from list_sessions, get_session,
 * session_diagnose, the HTTP session API and both TUI clients.
 * @module
 */
import type { Session, SessionStore } from './session-store';

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

/** A session in a list or a client: who it is, what it runs with, what it cost. */
export type SessionSummary = Pick<
  SessionView,
  | 'id'
  | 'title'
  | 'model'
  | 'mode'
  | 'agent'
  | 'parent_id'
  | 'prompt_tokens'
  | 'completion_tokens'
  | 'cost'
  | 'created_at'
  | 'updated_at'
>;

/** What the session view reads besides the row: the agent's state of it, its message count. */
export interface SessionViewDeps {
  sessions: Pick<SessionStore, 'messageCount'>;
  agent: { state(sessionId: string): Promise<{ state: string; queue_length: number }> };
}

export async function sessionView(deps: SessionViewDeps, session: Session): Promise<SessionView> {
  const state = await deps.agent.state(session.id);
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
    message_count: await deps.sessions.messageCount(session.id),
    prompt_tokens: session.prompt_tokens,
    completion_tokens: session.completion_tokens,
    cost: session.cost,
    created_at: session.created_at,
    updated_at: session.updated_at,
  };
}

export function sessionSummary(session: SessionSummary): SessionSummary {
  return {
    id: session.id,
    title: session.title,
    model: session.model,
    mode: session.mode,
    agent: session.agent,
    parent_id: session.parent_id,
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
