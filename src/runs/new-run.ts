/**
 * A new run as both backends write it: the row's columns from the create input, and the run's
 * first event (`run.queued`, or `run.created` for a run created running).
 * @module
 */
import type { RunRowInsert } from './run-repository';
import type { RunOptions } from './types';

export interface CreateRunInput {
  session_id: string;
  family_session_id: string;
  parent_run_id?: string | null;
  agent: string;
  model?: string | null;
  origin: string;
  prompt: string;
  options?: RunOptions;
  status?: 'queued' | 'running';
}

/** The row of a new run; a run created running is owned by `owner` from the start. */
export function newRunRow(
  input: CreateRunInput,
  id: string,
  now: number,
  owner: { pid: number; host: string; runner: string },
): RunRowInsert {
  const status = input.status ?? 'queued';
  const running = status === 'running';
  return {
    id,
    session_id: input.session_id,
    parent_run_id: input.parent_run_id ?? null,
    family_session_id: input.family_session_id,
    status,
    agent: input.agent,
    model: input.model ?? null,
    origin: input.origin,
    prompt: input.prompt,
    options: JSON.stringify(input.options ?? {}),
    created_at: now,
    started_at: running ? now : null,
    pid: running ? owner.pid : null,
    host: running ? owner.host : null,
    runner: running ? owner.runner : null,
  };
}

/** The type and payload of a new run's first event. */
export function firstRunEvent(row: Pick<RunRowInsert, 'status' | 'origin' | 'agent'>): {
  type: 'run.queued' | 'run.created';
  payload: { origin: string; agent: string };
} {
  return {
    type: row.status === 'queued' ? 'run.queued' : 'run.created',
    payload: { origin: row.origin, agent: row.agent },
  };
}
