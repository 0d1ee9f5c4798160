/**
 * The workflow template format: parameters (as in recipes) and steps forming a DAG, each step
 * either a recipe (`recipe` + `params`, values may use templates) or an agent task (`prompt`,
 * optional `agent`, `tools`, `max_turns`). `{{ name }}` is a workflow parameter and
 * `{{ steps.<id>.output }}` the answer of a step this one (transitively) depends on.
 * @module
 */
import { z } from 'zod';
import { agentKinds } from '../agent/agent-kinds';
import type { Config } from '../config/schema';
import type { ToolFacts } from '../permissions/tool-policy';
import { assertCommandParams } from '../recipes/check-command';
import { recipeParameterSchema } from '../recipes/recipe-schema';
import type { RecipeCatalog } from '../recipes/types';
import { lazy } from '../util/lazy';
import { ancestorMap, type DagProblem, dagProblems } from './dag';
import { outputReference, templateRefs } from './template';

const slug = /^[a-z0-9][a-z0-9_-]*$/;

export const workflowStepSchema = lazy(() =>
  z
    .strictObject({
      id: z
        .string()
        .regex(slug, 'lowercase letters, digits, - or _')
        .describe('Step id, unique in the workflow.'),
      recipe: z.string().min(1).optional().describe('Run this recipe (recipe_list). Give recipe or prompt.'),
      params: z
        .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
        .optional()
        .describe('Recipe parameters; string values may use {{ name }} and {{ steps.<id>.output }}.'),
      prompt: z
        .string()
        .min(1)
        .optional()
        .describe('Task of an agent step (a sub-agent). Give recipe or prompt.'),
      agent: z.string().min(1).optional().describe('Sub-agent kind of an agent step (default general).'),
      tools: z.array(z.string().min(1)).min(1).optional().describe('Narrow an agent step to these tools.'),
      max_turns: z.number().int().min(1).max(500).optional().describe('Step limit of an agent step.'),
      depends_on: z
        .array(z.string().min(1))
        .default([])
        .describe('Ids of steps that must complete first. Steps without dependencies run in parallel.'),
    })
    .refine((s) => (s.recipe === undefined) !== (s.prompt === undefined), {
      message: 'give exactly one of recipe (run a recipe) or prompt (an agent task)',
    }),
);

/** Most steps of a workflow template: execute_dag's cap (a definition is checked before the prompt). */
export const MAX_WORKFLOW_STEPS = 50;

/** The steps array, capped at MAX_WORKFLOW_STEPS with a message saying so. */
export const workflowSteps = () =>
  z
    .array(workflowStepSchema())
    .min(1)
    .max(
      MAX_WORKFLOW_STEPS,
      `at most ${MAX_WORKFLOW_STEPS} steps (as execute_dag's tasks); split the work into several templates`,
    );

export const workflowDefinitionSchema = lazy(() =>
  z.strictObject({
    description: z.string().default('').describe('What the workflow does.'),
    parameters: z
      .array(recipeParameterSchema())
      .default([])
      .describe(
        'Parameters, as in recipes: name, type (string, number, boolean), description, required, default, choices.',
      ),
    steps: workflowSteps().describe('The steps, a DAG through depends_on.'),
    max_parallel: z
      .number()
      .int()
      .min(1)
      .max(16)
      .optional()
      .describe('Most steps running at once (default options.workflows.max_parallel).'),
  }),
);

export type WorkflowDefinition = z.output<ReturnType<typeof workflowDefinitionSchema>>;
export type WorkflowStep = z.output<ReturnType<typeof workflowStepSchema>>;

export interface WorkflowCheckEnv {
  config: Config;
  tools: readonly ToolFacts[];
  recipes: RecipeCatalog;
}

/** The recipe parameters of a step whose value holds a step's output (model output). */
export function modelOutputParams(step: Pick<WorkflowStep, 'params'>): string[] {
  return Object.entries(step.params ?? {})
    .filter(
      ([, value]) =>
        typeof value === 'string' &&
        templateRefs(value).some((ref) => outputReference(ref, 'steps')?.field === 'output'),
    )
    .map(([key]) => key);
}

/** Every problem of a definition, by field; empty when it can run. */
export function workflowProblems(definition: WorkflowDefinition, env: WorkflowCheckEnv): DagProblem[] {
  const problems: DagProblem[] = dagProblems(definition.steps, 'steps');
  const problem = (field: string, message: string) => problems.push({ field, message });
  const params = new Set(definition.parameters.map((p) => p.name));
  const kinds = agentKinds(env.config);
  const tools = new Map(env.tools.map((t) => [t.name, t]));
  const structural = problems.length > 0;
  const ancestors = structural ? new Map<string, Set<string>>() : ancestorMap(definition.steps);

  definition.steps.forEach((step, i) => {
    const field = `steps[${i}]`;
    const before = ancestors.get(step.id) ?? new Set<string>();
    const checkRefs = (text: string, where: string) => {
      for (const ref of templateRefs(text)) {
        if (params.has(ref)) continue;
        const output = outputReference(ref, 'steps');
        if (!output) {
          problem(
            where,
            `{{ ${ref} }}: unknown parameter; parameters: ${[...params].join(', ') || '(none)'}`,
          );
        } else if (output.field !== 'output' && output.field !== 'status') {
          problem(where, `{{ ${ref} }}: a step exposes output and status, not ${output.field}`);
        } else if (!structural && !before.has(output.id)) {
          problem(
            where,
            `{{ ${ref} }}: step "${output.id}" is not among the steps this one depends on; add it to depends_on`,
          );
        }
      }
    };
    if (step.recipe !== undefined) {
      for (const key of ['agent', 'tools', 'max_turns'] as const) {
        if (step[key] !== undefined)
          problem(`${field}.${key}`, 'applies to agent steps only (the recipe sets its own)');
      }
      let recipe: ReturnType<RecipeCatalog['get']> | undefined;
      try {
        recipe = env.recipes.get(step.recipe);
      } catch (error) {
        problem(`${field}.recipe`, (error as Error).message.replace(/^name: /, ''));
      }
      if (recipe) {
        const validation = env.recipes.validate({ name: step.recipe });
        if (!validation.valid)
          problem(`${field}.recipe`, `recipe "${step.recipe}" is not valid (see recipe_validate)`);
        const declared = recipe.definition?.parameters ?? [];
        for (const key of Object.keys(step.params ?? {})) {
          if (!declared.some((p) => p.name === key)) {
            problem(
              `${field}.params.${key}`,
              `recipe "${step.recipe}" has no parameter "${key}"; its parameters: ${declared.map((p) => p.name).join(', ') || '(none)'}`,
            );
          }
        }
        for (const param of declared) {
          if (param.required && param.default === undefined && step.params?.[param.name] === undefined) {
            problem(`${field}.params.${param.name}`, `required by recipe "${step.recipe}"`);
          }
        }
        if (recipe.definition) {
          try {
            // Model output never reaches a check command (values are not known yet: only that rule).
            assertCommandParams(step.recipe, recipe.definition, {}, modelOutputParams(step));
          } catch (error) {
            const message = (error as Error).message;
            problem(
              `${field}.${message.slice(0, message.indexOf(':'))}`,
              message.slice(message.indexOf(':') + 2),
            );
          }
        }
      }
      for (const [key, value] of Object.entries(step.params ?? {})) {
        if (typeof value === 'string') checkRefs(value, `${field}.params.${key}`);
      }
      return;
    }
    if (step.params !== undefined) problem(`${field}.params`, 'applies to recipe steps only');
    const agent = step.agent ?? 'general';
    const kind = kinds.find((k) => k.id === agent);
    if (!kind) problem(`${field}.agent`, `no agent kind "${agent}"; see list_agent_kinds`);
    else if (kind.mode === 'primary') {
      problem(
        `${field}.agent`,
        `"${agent}" is a primary agent; steps run as sub-agents (e.g. general, explore)`,
      );
    }
    step.tools?.forEach((name, j) => {
      const tool = tools.get(name);
      if (!tool) problem(`${field}.tools[${j}]`, `unknown tool "${name}"; see list_tool_capabilities`);
      else if (tool.tag === 'workflow')
        problem(`${field}.tools[${j}]`, `"${name}" is a workflow tool; sub-agents cannot start workflows`);
    });
    checkRefs(step.prompt!, `${field}.prompt`);
  });
  return problems;
}
