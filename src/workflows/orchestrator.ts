/**
 * orchestrate_workflow: run a saved workflow template. Its parameters are resolved like a
 * recipe's; the definition is checked again (a recipe it names may have changed since it was
 * saved); then its steps run as a DAG under the workflow's pipeline run: a recipe step is a
 * nested recipe pipeline (its own session and run, children of the workflow's), an agent step a
 * sub-agent run. Independent steps run in parallel up to `max_parallel`.
 * @module
 */
import { SvcError, toSvcError } from '../errors';
import { type ParamValue, resolveParams } from '../recipes/recipe-runner';
import type { RecipeService } from '../recipes/types';
import type { OpContext } from '../workspace/context';
import { applyOutcomes, dagVerdict, type NodeStatus, runDag } from './dag';
import type { DagDeps } from './dag-runner';
import type { Caller } from './lineage';
import type { Pipeline } from './pipeline';
import { outputReference, renderTemplate } from './template';
import { modelOutputParams, type WorkflowStep, workflowProblems } from './workflow-definition';
import type { WorkflowRun } from './workflow-runs';
import type { WorkflowService } from './workflow-service';

export interface WorkflowStepResult {
  id: string;
  kind: 'recipe' | 'agent';
  status: NodeStatus;
  depends_on: string[];
  /** The step's run: a recipe's pipeline run, or the agent step's sub-agent run. */
  run_id: string | null;
  session_id: string | null;
  /** For recipe steps: the nested recipe run. */
  recipe_run_id: string | null;
  output: string;
  error: string | null;
}

export interface OrchestrationResult {
  workflow_run_id: string;
  workflow: string;
  revision: number;
  status: WorkflowRun['status'];
  session_id: string;
  run_id: string;
  parent_run_id: string | null;
  family_session_id: string;
  params: Record<string, ParamValue>;
  steps: WorkflowStepResult[];
  finished_order: string[];
  error: string | null;
  warnings: string[];
}

/** The workflows and recipes domains, as a workflow template's run uses them. */
export interface OrchestrationServices {
  workflows: Pick<WorkflowService, 'templates' | 'start'>;
  recipes: Pick<RecipeService, 'get' | 'validate' | 'run'>;
}

export async function orchestrateWorkflow(
  host: DagDeps,
  deps: OrchestrationServices,
  caller: Caller,
  input: {
    name: string;
    params: Record<string, unknown>;
    max_parallel?: number;
    approve?: OpContext['approve'];
  },
): Promise<OrchestrationResult> {
  const template = await deps.workflows.templates.get(input.name);
  if (!template) {
    const known = (await deps.workflows.templates.list()).map((t) => t.name);
    throw new SvcError(
      'not_found',
      `name: no workflow template "${input.name}"; ${known.length ? `saved: ${known.join(', ')}` : 'none saved yet'} (workflow_template action save)`,
    );
  }
  const definition = template.definition;
  const problems = workflowProblems(definition, {
    config: host.config,
    tools: host.tools.gates().map((g) => g.tool),
    recipes: deps.recipes,
  });
  if (problems.length) {
    throw new SvcError(
      'invalid_input',
      `name: workflow "${input.name}" cannot run: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`,
      { details: { problems } },
    );
  }
  const params = resolveParams(input.name, definition, input.params);
  const maxParallel =
    input.max_parallel ?? definition.max_parallel ?? host.config.options.workflows.max_parallel;
  const pipeline = await deps.workflows.start(caller, {
    kind: 'workflow',
    name: input.name,
    ref: input.name,
    title: `workflow ${input.name}`,
    request: `Run workflow ${input.name} (revision ${template.revision})${
      Object.keys(params).length
        ? ` with ${Object.entries(params)
            .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
            .join(', ')}`
        : ''
    }${definition.description ? `: ${definition.description}` : ''}`,
    input: { workflow: input.name, revision: template.revision, params, max_parallel: maxParallel },
  });
  const results = new Map<string, WorkflowStepResult>(
    definition.steps.map((s) => [
      s.id,
      {
        id: s.id,
        kind: s.recipe !== undefined ? 'recipe' : 'agent',
        status: 'skipped',
        depends_on: s.depends_on,
        run_id: null,
        session_id: null,
        recipe_run_id: null,
        output: '',
        error: null,
      },
    ]),
  );
  const lookup = (ref: string): string | undefined => {
    if (ref in params) return String(params[ref]);
    const output = outputReference(ref, 'steps');
    const step = output ? results.get(output.id) : undefined;
    if (!step || !output) return undefined;
    return output.field === 'status' ? step.status : step.output;
  };
  const finished: string[] = [];
  let failure: string | null = null;
  try {
    const outcomes = await runDag(definition.steps, {
      maxParallel,
      signal: pipeline.signal,
      run: async (node) => {
        const index = definition.steps.findIndex((s) => s.id === node.id);
        const outcome = await runStep(
          host,
          deps,
          pipeline,
          caller,
          definition.steps[index],
          index,
          results,
          lookup,
          input.approve,
        );
        finished.push(node.id);
        return outcome;
      },
      onSkip: (node, reason) => {
        results.get(node.id)!.error = reason;
        pipeline.event('workflow.step.skipped', { step: node.id, reason });
      },
    });
    applyOutcomes(results, outcomes);
  } catch (error) {
    failure = host.redactor.string(toSvcError(error).message);
  }
  const steps = definition.steps.map((s) => results.get(s.id)!);
  const { status, error } = dagVerdict(steps, failure, pipeline.signal.aborted);
  const last = finished.length ? results.get(finished.at(-1)!) : undefined;
  const row = await pipeline.finish({
    status,
    error,
    text: [
      `Workflow ${input.name} ${status}.`,
      ...steps.map((s) => `- ${s.id} (${s.kind}): ${s.status}${s.run_id ? ` (run ${s.run_id})` : ''}`),
      ...(last?.output && status === 'completed' ? ['', last.output] : []),
    ].join('\n'),
    result: { steps, finished_order: finished, warnings: pipeline.warnings },
  });
  return {
    workflow_run_id: pipeline.id,
    workflow: input.name,
    revision: template.revision,
    status: row.status,
    session_id: pipeline.sessionId,
    run_id: pipeline.runId,
    parent_run_id: pipeline.parentRunId,
    family_session_id: pipeline.familySessionId,
    params,
    steps,
    finished_order: finished,
    error: row.error ?? error,
    warnings: pipeline.warnings,
  };
}

async function runStep(
  host: Pick<DagDeps, 'redactor'>,
  deps: Pick<OrchestrationServices, 'recipes'>,
  pipeline: Pipeline,
  caller: Caller,
  step: WorkflowStep,
  index: number,
  results: Map<string, WorkflowStepResult>,
  lookup: (ref: string) => string | undefined,
  approve: OpContext['approve'],
): Promise<{ status: NodeStatus; reason?: string }> {
  const result = results.get(step.id)!;
  const field = `steps[${index}]`;
  pipeline.event('workflow.step.started', { step: step.id, kind: result.kind });
  try {
    if (step.recipe !== undefined) {
      const params = Object.fromEntries(
        Object.entries(step.params ?? {}).map(([key, value]) => [
          key,
          typeof value === 'string' ? renderTemplate(value, lookup, `${field}.params.${key}`) : value,
        ]),
      );
      pipeline.throwIfStopped();
      const run = await deps.recipes.run(step.recipe, params, {
        modelOutputParams: modelOutputParams(step),
        caller: {
          sessionId: pipeline.sessionId,
          runId: pipeline.runId,
          signal: pipeline.signal,
          ceiling: caller.ceiling,
          yolo: caller.yolo,
          unattended: caller.unattended,
        },
        approve,
      });
      Object.assign(result, {
        run_id: run.run_id,
        session_id: run.session_id,
        recipe_run_id: run.recipe_run_id,
        output: run.output,
      });
      pipeline.warnings.push(...run.warnings.map((w) => `${step.id}: ${w}`));
      pipeline.event('workflow.step.finished', { step: step.id, run_id: run.run_id, status: run.status });
      if (run.status === 'completed') return { status: 'completed' };
      result.error = run.error;
      return {
        status: run.status === 'cancelled' || run.status === 'interrupted' ? 'cancelled' : 'failed',
        reason: run.error ?? undefined,
      };
    }
    const prompt = renderTemplate(step.prompt!, lookup, `${field}.prompt`);
    const run = await pipeline.child({
      prompt,
      agent: step.agent,
      tools: step.tools,
      maxSteps: step.max_turns,
      title: `${step.id}`,
      metadata: { workflow_step: step.id },
      field,
    });
    Object.assign(result, { run_id: run.run_id, session_id: run.session_id, output: run.text });
    if (run.status === 'completed') return { status: 'completed' };
    result.error = `the run ended ${run.status}${run.reason ? ` (${run.reason})` : ''}${run.error ? `: ${run.error}` : ''}`;
    return {
      status: run.status === 'cancelled' || run.status === 'interrupted' ? 'cancelled' : 'failed',
      reason: result.error,
    };
  } catch (error) {
    result.error = host.redactor.string(toSvcError(error).message);
    return { status: pipeline.signal.aborted ? 'cancelled' : 'failed', reason: result.error };
  }
}
