/**
 * execute_dag: a graph of agent tasks. The whole graph is checked before anything runs (ids,
 * dependencies, cycles, agent kinds, tools, template references); then every task whose
 * dependencies completed runs as a sub-agent of the DAG's pipeline run, independent tasks in
 * parallel up to `max_parallel`. A task sees its dependencies' answers through
 * `{{ tasks.<id>.output }}`, or appended after its prompt when it does not reference them.
 * @module
 */
import { z } from 'zod';
import { agentKinds } from '../agent/agent-kinds';
import type { Config } from '../config/schema';
import { SvcError, toSvcError } from '../errors';
import type { Redactor } from '../redact';
import { lazy } from '../util/lazy';
import {
  ancestorMap,
  applyOutcomes,
  type DagProblem,
  dagProblems,
  dagVerdict,
  type NodeStatus,
  runDag,
} from './dag';
import type { Caller } from './lineage';
import type { Pipeline } from './pipeline';
import type { ToolCatalog } from './ports';
import { outputReference, renderTemplate, templateRefs } from './template';
import type { WorkflowRun } from './workflow-runs';
import type { WorkflowService } from './workflow-service';

export const dagTaskSchema = lazy(() =>
  z.strictObject({
    id: z
      .string()
      .regex(/^[A-Za-z0-9][\w-]*$/, 'letters, digits, - or _')
      .describe('Task id, unique in the DAG; other tasks name it in depends_on.'),
    prompt: z
      .string()
      .min(1)
      .describe(
        'The complete task for its sub-agent. {{ tasks.<id>.output }} inserts the answer of a task it depends on; dependencies not referenced are appended after the prompt.',
      ),
    depends_on: z
      .array(z.string().min(1))
      .default([])
      .describe('Ids of tasks that must complete first. Omit for a task that can start at once.'),
    agent: z
      .string()
      .min(1)
      .default('general')
      .describe('Sub-agent kind: general (default) or explore (read-only).'),
    tools: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe("Narrow the task's sub-agent to these tools."),
    max_turns: z.number().int().min(1).max(500).optional().describe('Step limit of the task.'),
    description: z.string().max(120).optional().describe('A few words naming the task (its session title).'),
  }),
);

export type DagTask = z.output<ReturnType<typeof dagTaskSchema>>;

export interface TaskResult {
  id: string;
  status: NodeStatus;
  agent: string;
  depends_on: string[];
  run_id: string | null;
  session_id: string | null;
  output: string;
  error: string | null;
}

export interface DagRunResult {
  dag_run_id: string;
  status: WorkflowRun['status'];
  session_id: string;
  run_id: string;
  parent_run_id: string | null;
  family_session_id: string;
  tasks: TaskResult[];
  /** Task ids in the order they finished. */
  finished_order: string[];
  max_parallel: number;
  error: string | null;
  warnings: string[];
}

/** Every problem of a task list, by field. */
/** What checking a DAG reads: the agent kinds (config) and the tool catalog. */
export interface DagCheckDeps {
  readonly config: Config;
  readonly tools: Pick<ToolCatalog, 'gates'>;
}

/** What running a DAG uses besides its pipeline. */
export interface DagDeps extends DagCheckDeps {
  readonly redactor: Pick<Redactor, 'string'>;
}

export function dagTaskProblems(deps: DagCheckDeps, tasks: readonly DagTask[]): DagProblem[] {
  const problems = dagProblems(tasks, 'tasks');
  if (problems.length) return problems;
  const kinds = agentKinds(deps.config);
  const known = new Map(deps.tools.gates().map((g) => [g.tool.name, g.tool]));
  const ancestors = ancestorMap(tasks);
  tasks.forEach((task, i) => {
    const field = `tasks[${i}]`;
    const kind = kinds.find((k) => k.id === task.agent);
    if (!kind)
      problems.push({
        field: `${field}.agent`,
        message: `no agent kind "${task.agent}"; see list_agent_kinds`,
      });
    else if (kind.mode === 'primary') {
      problems.push({
        field: `${field}.agent`,
        message: `"${task.agent}" is a primary agent; tasks run as sub-agents (general, explore)`,
      });
    }
    task.tools?.forEach((name, j) => {
      const tool = known.get(name);
      if (!tool) problems.push({ field: `${field}.tools[${j}]`, message: `unknown tool "${name}"` });
      else if (tool.tag === 'workflow') {
        problems.push({
          field: `${field}.tools[${j}]`,
          message: `"${name}" is a workflow tool; sub-agents cannot start workflows`,
        });
      }
    });
    const before = ancestors.get(task.id)!;
    for (const ref of templateRefs(task.prompt)) {
      const output = outputReference(ref, 'tasks');
      if (output?.field !== 'output') {
        problems.push({
          field: `${field}.prompt`,
          message: `{{ ${ref} }}: a task prompt can only use {{ tasks.<id>.output }}`,
        });
      } else if (!before.has(output.id)) {
        problems.push({
          field: `${field}.prompt`,
          message: `{{ ${ref} }}: task "${output.id}" is not among the tasks this one depends on; add it to depends_on`,
        });
      }
    }
  });
  return problems;
}

export async function executeDag(
  deps: DagDeps,
  workflows: Pick<WorkflowService, 'start'>,
  caller: Caller,
  input: { tasks: DagTask[]; max_parallel?: number; title?: string },
): Promise<DagRunResult> {
  const problems = dagTaskProblems(deps, input.tasks);
  if (problems.length) {
    throw new SvcError('invalid_input', problems.map((p) => `${p.field}: ${p.message}`).join('; '), {
      details: { problems },
    });
  }
  const maxParallel = input.max_parallel ?? deps.config.options.workflows.max_parallel;
  const pipeline = await workflows.start(caller, {
    kind: 'dag',
    name: input.title ?? 'dag',
    title: input.title ? `dag: ${input.title}` : `dag of ${input.tasks.length} tasks`,
    request: `Run a DAG of ${input.tasks.length} tasks (${input.tasks.map((t) => t.id).join(', ')}), at most ${maxParallel} at once.`,
    input: { tasks: input.tasks, max_parallel: maxParallel },
  });
  const results = new Map<string, TaskResult>(
    input.tasks.map((t) => [
      t.id,
      {
        id: t.id,
        status: 'skipped',
        agent: t.agent,
        depends_on: t.depends_on,
        run_id: null,
        session_id: null,
        output: '',
        error: null,
      },
    ]),
  );
  const finished: string[] = [];
  let failure: string | null = null;
  try {
    const outcomes = await runDag(input.tasks, {
      maxParallel,
      signal: pipeline.signal,
      run: async (node) => {
        const task = input.tasks.find((t) => t.id === node.id)!;
        const index = input.tasks.indexOf(task);
        const outcome = await runTask(pipeline, task, index, results);
        finished.push(task.id);
        return outcome;
      },
      onSkip: (node, reason) => {
        const result = results.get(node.id)!;
        result.error = reason;
        pipeline.event('dag.task.skipped', { task: node.id, reason });
      },
    });
    applyOutcomes(results, outcomes);
  } catch (error) {
    failure = deps.redactor.string(toSvcError(error).message);
  }
  const tasks = input.tasks.map((t) => results.get(t.id)!);
  const { status, error } = dagVerdict(tasks, failure, pipeline.signal.aborted);
  const row = await pipeline.finish({
    status,
    error,
    text: [
      `DAG ${status}: ${tasks.filter((t) => t.status === 'completed').length} of ${tasks.length} tasks completed.`,
      ...tasks.map(
        (t) =>
          `- ${t.id}: ${t.status}${t.run_id ? ` (run ${t.run_id})` : ''}${t.error && t.status !== 'completed' ? ` — ${t.error}` : ''}`,
      ),
    ].join('\n'),
    result: { tasks, finished_order: finished, warnings: pipeline.warnings },
  });
  return {
    dag_run_id: pipeline.id,
    status: row.status,
    session_id: pipeline.sessionId,
    run_id: pipeline.runId,
    parent_run_id: pipeline.parentRunId,
    family_session_id: pipeline.familySessionId,
    tasks,
    finished_order: finished,
    max_parallel: maxParallel,
    error: row.error ?? error,
    warnings: pipeline.warnings,
  };
}

async function runTask(
  pipeline: Pipeline,
  task: DagTask,
  index: number,
  results: Map<string, TaskResult>,
): Promise<{ status: NodeStatus; reason?: string }> {
  const result = results.get(task.id)!;
  const field = `tasks[${index}]`;
  const referenced = new Set(
    templateRefs(task.prompt)
      .map((ref) => outputReference(ref, 'tasks')?.id)
      .filter(Boolean),
  );
  let prompt = renderTemplate(
    task.prompt,
    (ref) => {
      const output = outputReference(ref, 'tasks');
      return output ? results.get(output.id)?.output : undefined;
    },
    `${field}.prompt`,
  );
  const unreferenced = task.depends_on.filter((dep) => !referenced.has(dep));
  if (unreferenced.length) {
    prompt += `\n\n---\nResults of the tasks this one depends on:\n${unreferenced
      .map((dep) => `\n### ${dep}\n${results.get(dep)?.output || '(no answer)'}`)
      .join('\n')}`;
  }
  pipeline.event('dag.task.started', { task: task.id });
  try {
    const run = await pipeline.child({
      prompt,
      agent: task.agent,
      tools: task.tools,
      maxSteps: task.max_turns,
      title: task.description ?? `task ${task.id}`,
      metadata: { dag_task: task.id },
      field,
    });
    result.run_id = run.run_id;
    result.session_id = run.session_id;
    result.output = run.text;
    if (run.status === 'completed') return { status: 'completed' };
    result.error = `the run ended ${run.status}${run.reason ? ` (${run.reason})` : ''}${run.error ? `: ${run.error}` : ''}`;
    return {
      status: run.status === 'cancelled' || run.status === 'interrupted' ? 'cancelled' : 'failed',
      reason: result.error,
    };
  } catch (error) {
    result.error = toSvcError(error).message;
    return { status: pipeline.signal.aborted ? 'cancelled' : 'failed', reason: result.error };
  }
}
