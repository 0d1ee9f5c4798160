/**
 * Sub-agent runs: a child session under the parent's constraints, its run started (not queued)
 * and awaited, cancelled with the parent's signal.
 * @module
 */
import { SvcError } from '../errors';
import { agentKind } from './agent-kinds';
import { startRun } from './run-control';
import { type AgentCore, abortRun, preview } from './session-runtime';
import type { ChildRunInput, RunResult } from './types';

/** Run a sub-agent in a child session of the parent's and wait for its result. */
export async function runChild(core: AgentCore, input: ChildRunInput): Promise<RunResult> {
  const a = core.host;
  if (core.closing) throw new SvcError('unavailable', 'svc is shutting down; the sub-agent was not started');
  const parent = await a.sessions.require(input.parentSessionId);
  const kind = agentKind(a.config, input.agent ?? 'general', 'subagent');
  if (!input.prompt.trim()) throw new SvcError('invalid_input', 'prompt: must not be empty');
  if (input.maxSteps !== undefined && (!Number.isInteger(input.maxSteps) || input.maxSteps < 1)) {
    throw new SvcError('invalid_input', `max_steps: must be a positive integer, got ${input.maxSteps}`);
  }
  // The child works under the parent's constraints: same mode and staged-workflow phase.
  const child = await a.sessions.create({
    parent_id: parent.id,
    title: input.title ?? `${kind.id}: ${preview(input.prompt)}`,
    agent: kind.id,
    mode: parent.mode,
    model: parent.model,
    metadata: {
      ...input.metadata,
      subagent: true,
      ...(input.parentRunId ? { parent_run_id: input.parentRunId } : {}),
      ...(input.workspace ? { workspace_root: input.workspace.root } : {}),
      ...(typeof parent.metadata.workflow_phase === 'string'
        ? { workflow_phase: parent.metadata.workflow_phase }
        : {}),
    },
  });
  const run = await a.runs.create({
    session_id: child.id,
    family_session_id: await a.sessions.root(child.id),
    parent_run_id: input.parentRunId ?? null,
    agent: kind.id,
    model: input.model ?? null,
    origin: 'subagent',
    prompt: input.prompt,
    options: {
      ...(input.maxSteps !== undefined ? { max_steps: input.maxSteps } : {}),
      ...(input.yolo ? { yolo: true } : {}),
      ...(input.unattended ? { unattended: input.unattended } : {}),
      ...(input.tools?.length ? { tools: input.tools } : {}),
    },
  });
  const waiting = core.deferred(run.id).promise;
  // A sub-agent of a run of another workspace (the durable engine's queue) works in that one.
  const workspace = input.workspace ?? core.deps.workspaceAt?.(parent.workspace);
  if (!(await startRun(core, run, { kind, subagent: true, workspace }))) {
    throw new SvcError('conflict', `could not start the sub-agent run ${run.id}`);
  }
  const onAbort = () => abortRun(core, child.id, 'the parent run was cancelled');
  input.signal?.addEventListener('abort', onAbort, { once: true });
  if (input.signal?.aborted) onAbort();
  try {
    return await waiting;
  } finally {
    input.signal?.removeEventListener('abort', onAbort);
  }
}
