/**
 * workflow_template actions over the template store: save and update check the definition
 * (workflowProblems) and ask before they write; delete asks; list and inspect read (inspect adds
 * the template's recent runs).
 * @module
 */
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { PermissionRequest } from '../permissions/permission-service';
import type { RecipeCatalog } from '../recipes/types';
import type { ToolCatalog } from './ports';
import { type WorkflowDefinition, workflowDefinitionSchema, workflowProblems } from './workflow-definition';
import type { WorkflowService } from './workflow-service';

export interface TemplateAction {
  action: 'save' | 'list' | 'inspect' | 'update' | 'delete';
  name?: string;
  description?: string;
  parameters?: WorkflowDefinition['parameters'];
  steps?: WorkflowDefinition['steps'];
  max_parallel?: number;
}

/** What workflow_template reads and writes: the template store, its runs, what a definition is checked against. */
export interface TemplateManagerDeps {
  readonly workflows: Pick<WorkflowService, 'templates' | 'runs'>;
  readonly recipes: RecipeCatalog;
  readonly config: Config;
  readonly tools: Pick<ToolCatalog, 'gates'>;
}

export async function manageTemplate(
  deps: TemplateManagerDeps,
  input: TemplateAction,
  ask: (request: PermissionRequest) => Promise<void>,
) {
  const templates = deps.workflows.templates;
  const requireName = () => {
    if (!input.name) throw new SvcError('invalid_input', `name: required for action ${input.action}`);
    return input.name;
  };
  const existing = async (name: string) => {
    const template = await templates.get(name);
    if (!template) {
      throw new SvcError(
        'not_found',
        `name: no workflow template "${name}"; saved: ${
          (await templates.list()).map((t) => t.name).join(', ') || '(none)'
        }`,
      );
    }
    return template;
  };
  const checked = (definition: unknown): WorkflowDefinition => {
    const parsed = workflowDefinitionSchema().parse(definition);
    const problems = workflowProblems(parsed, {
      config: deps.config,
      tools: deps.tools.gates().map((g) => g.tool),
      recipes: deps.recipes,
    });
    if (problems.length) {
      throw new SvcError('invalid_input', problems.map((p) => `${p.field}: ${p.message}`).join('; '), {
        details: { problems },
      });
    }
    return parsed;
  };
  const runsOf = async (name: string) =>
    (await deps.workflows.runs.list({ kind: 'workflow', ref: name, limit: 10 })).map((run) => ({
      workflow_run_id: run.id,
      status: run.status,
      run_id: run.run_id,
      session_id: run.session_id,
      revision: run.input.revision ?? null,
      created_at: run.created_at,
      finished_at: run.finished_at,
      error: run.error,
    }));

  switch (input.action) {
    case 'list': {
      const list = await Promise.all(
        (await templates.list()).map(async (t) => ({
          name: t.name,
          description: t.description,
          revision: t.revision,
          steps: t.definition.steps.length,
          parameters: t.definition.parameters.map((p) => p.name),
          updated_at: t.updated_at,
          last_run: (await runsOf(t.name))[0] ?? null,
        })),
      );
      return { action: 'list', templates: list, count: list.length };
    }
    case 'inspect': {
      const template = await existing(requireName());
      return { action: 'inspect', template, runs: await runsOf(template.name) };
    }
    case 'save': {
      const name = requireName();
      if (!input.steps) throw new SvcError('invalid_input', 'steps: required for action save');
      if (await templates.get(name))
        throw new SvcError(
          'conflict',
          `name: workflow template "${name}" exists; use action update (or delete it first)`,
        );
      const definition = checked({
        description: input.description,
        parameters: input.parameters,
        steps: input.steps,
        max_parallel: input.max_parallel,
      });
      await ask({
        tool: 'workflow_template',
        title: `save workflow template ${name}`,
        scope: `workflow_template:${name}`,
      });
      return { action: 'save', template: await templates.insert(name, definition) };
    }
    case 'update': {
      const name = requireName();
      const current = await existing(name);
      if (
        [input.description, input.parameters, input.steps, input.max_parallel].every((v) => v === undefined)
      ) {
        throw new SvcError(
          'invalid_input',
          'give at least one of description, parameters, steps or max_parallel to update',
        );
      }
      const definition = checked({
        ...current.definition,
        ...(input.description !== undefined ? { description: input.description } : {}),
        ...(input.parameters !== undefined ? { parameters: input.parameters } : {}),
        ...(input.steps !== undefined ? { steps: input.steps } : {}),
        ...(input.max_parallel !== undefined ? { max_parallel: input.max_parallel } : {}),
      });
      await ask({
        tool: 'workflow_template',
        title: `update workflow template ${name}`,
        scope: `workflow_template:${name}`,
      });
      return { action: 'update', template: await templates.replace(name, definition) };
    }
    case 'delete': {
      const name = requireName();
      await existing(name);
      await ask({
        tool: 'workflow_template',
        title: `delete workflow template ${name}`,
        scope: `workflow_template:${name}`,
      });
      await templates.delete(name);
      return { action: 'delete', name, deleted: true };
    }
    default: {
      const never: never = input.action;
      throw new SvcError('invalid_input', `action: unknown ${String(never)}`);
    }
  }
}
