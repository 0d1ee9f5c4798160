/**
 * `get_task_aggregate`: a session family's tasks and how its work went — the todo lists of the
 * root session and every sub-agent session, the runs (by status, agent and start cue) and their
 * outcomes (success rate, failure reasons, the last outcome), tokens, cost and the plan state.
 * Named by the multiplayer dashboard's `parity_getter_unavailable` error as a suggested tool.
 * @module
 */
import { RUN_STATUSES } from '../runs/run-ledger';
import type { TodoStatus, TodoStore } from '../workspace/todos';
import { startKindOf } from './cue-ledger';
import {
  oneLine,
  ratio,
  readoutHeader,
  resolveSessionScope,
  round,
  type SessionReadoutDeps,
} from './session-scope';

const MAX_LISTED_TASKS = 20;

export interface TaskAggregateDeps extends SessionReadoutDeps {
  readonly ws: SessionReadoutDeps['ws'] & { readonly todos: Pick<TodoStore, 'get'> };
}

/** A stable kind for a run's end reason (svc's own wording, see run-loop and the run ledger). */
export function reasonKind(status: string, reason: string | null): string {
  if (status === 'completed') return reason?.startsWith('length') ? 'length' : 'completed';
  if (status === 'interrupted') return 'interrupted';
  if (status === 'cancelled') return reason === 'removed from the queue' ? 'removed_from_queue' : 'cancelled';
  const r = reason ?? '';
  if (r.startsWith('max_steps')) return 'max_steps';
  if (r.startsWith('loop detected')) return 'loop_detected';
  if (r === 'provider_error' || r === 'model_unavailable') return r;
  return 'error';
}

export async function buildTaskAggregate(
  app: TaskAggregateDeps,
  input: { session_id?: string },
  contextSessionId?: string,
) {
  const scope = await resolveSessionScope(app, input.session_id, contextSessionId);
  const header = readoutHeader(app, scope);
  if (!scope.session) return { ...header, family_session_id: null, warnings: scope.warnings };

  const root = await app.sessions.root(scope.session.id);
  const family = await app.sessions.family(root);
  const runs = await app.runs.queries.ofFamily(root, { order: 'asc' });

  const todoCounts: Record<TodoStatus, number> = { pending: 0, in_progress: 0, completed: 0, cancelled: 0 };
  const inProgress: { session_id: string; task: string }[] = [];
  const pending: { session_id: string; task: string }[] = [];
  const withTodos = await Promise.all(
    family.map(async (session) => ({ session, list: await app.ws.todos.get(session.id) })),
  );
  const sessions = withTodos.map(({ session, list }) => {
    for (const todo of list.todos) {
      todoCounts[todo.status]++;
      const entry = { session_id: session.id, task: oneLine(app, todo.content, 160) };
      if (todo.status === 'in_progress') inProgress.push(entry);
      if (todo.status === 'pending') pending.push(entry);
    }
    const own = runs.filter((r) => r.session_id === session.id);
    return {
      session_id: session.id,
      parent_id: session.parent_id,
      title: app.redactor.string(session.title),
      agent: session.agent,
      subagent: session.metadata.subagent === true,
      todos: { total: list.todos.length, counts: list.counts, updated_at: list.updated_at },
      runs: { total: own.length, last_status: own.at(-1)?.status ?? null },
    };
  });
  const todoTotal = Object.values(todoCounts).reduce((a, b) => a + b, 0);

  const byStatus = Object.fromEntries(RUN_STATUSES.map((s) => [s, 0])) as Record<string, number>;
  const byAgent: Record<string, number> = {};
  const byStart: Record<string, number> = {};
  const reasons: Record<string, number> = {};
  let inputTokens = 0;
  let outputTokens = 0;
  let cost = 0;
  for (const run of runs) {
    byStatus[run.status] = (byStatus[run.status] ?? 0) + 1;
    byAgent[run.agent] = (byAgent[run.agent] ?? 0) + 1;
    const start = startKindOf(run.origin);
    byStart[start] = (byStart[start] ?? 0) + 1;
    if (run.status !== 'queued' && run.status !== 'running') {
      const kind = reasonKind(run.status, run.reason);
      reasons[kind] = (reasons[kind] ?? 0) + 1;
    }
    inputTokens += run.usage.input_tokens;
    outputTokens += run.usage.output_tokens;
    cost += run.cost;
  }
  const finished = runs.filter((r) => r.status !== 'queued' && r.status !== 'running');
  const last = finished.at(-1);
  // The family's plan and phase live on its root session (sub-agents inherit the phase).
  const rootMeta = family[0]?.metadata ?? scope.session.metadata;
  const plan = rootMeta.plan as { revision?: number } | undefined;
  const phase = rootMeta.workflow_phase;
  const warnings = [...scope.warnings];
  if (todoCounts.in_progress > 1)
    warnings.push(`several_tasks_in_progress: ${todoCounts.in_progress} tasks are in progress at once`);
  if (finished.length > 0 && byStatus.completed === 0)
    warnings.push('no_completed_runs: none of the finished runs of this family completed');

  return {
    ...header,
    family_session_id: root,
    sessions,
    tasks: {
      total: todoTotal,
      by_status: todoCounts,
      completion_rate: ratio(todoCounts.completed, todoTotal - todoCounts.cancelled),
      in_progress: inProgress.slice(0, MAX_LISTED_TASKS),
      pending: pending.slice(0, MAX_LISTED_TASKS),
    },
    runs: {
      total: runs.length,
      by_status: byStatus,
      by_agent: byAgent,
      by_start_cue: byStart,
      sub_agent_runs: runs.filter((r) => r.parent_run_id !== null || r.session_id !== root).length,
    },
    outcomes: {
      finished: finished.length,
      success_rate: ratio(byStatus.completed, finished.length),
      by_reason: reasons,
      last: last
        ? {
            run_id: last.id,
            session_id: last.session_id,
            status: last.status,
            reason_kind: reasonKind(last.status, last.reason),
            finished_at: last.finished_at,
          }
        : null,
    },
    tokens: { input: inputTokens, output: outputTokens, total: inputTokens + outputTokens },
    cost: round(cost, 6),
    plan: {
      workflow_phase: typeof phase === 'string' && phase ? phase : 'none',
      has_plan: plan !== undefined && plan !== null,
      revision: typeof plan?.revision === 'number' ? plan.revision : null,
    },
    warnings,
  };
}
