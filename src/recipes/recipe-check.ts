/**
 * What the schema cannot see: duplicate ids and parameter names, defaults of the wrong type,
 * template references to unknown parameters or to steps that have not run yet, agent kinds that
 * do not exist or cannot be sub-agents, tools that are unknown or workflow-tagged.
 * @module
 */
import { agentKinds } from '../agent/agent-kinds';
import type { Config } from '../config/schema';
import type { ToolFacts } from '../permissions/tool-policy';
import { outputReference, templateRefs } from '../workflows/template';
import { commandTemplateProblems } from './check-command';
import type { RecipeDefinition, RecipeDiagnostic, RecipeParameter } from './recipe-schema';

export interface RecipeCheckEnv {
  config: Config;
  /** Every defined tool (registered or not). */
  tools: readonly ToolFacts[];
}

const STEP_FIELDS = ['output', 'status'];

export function checkRecipe(
  recipe: RecipeDefinition,
  env: RecipeCheckEnv,
  expectedName?: string,
): RecipeDiagnostic[] {
  const out: RecipeDiagnostic[] = [];
  const error = (field: string, message: string) => out.push({ severity: 'error', field, message });
  const warning = (field: string, message: string) => out.push({ severity: 'warning', field, message });

  if (expectedName && recipe.name && recipe.name !== expectedName) {
    error('name', `"${recipe.name}" differs from the file name "${expectedName}"; rename one of them`);
  }

  const params = new Map<string, RecipeParameter>();
  recipe.parameters.forEach((param, i) => {
    const field = `parameters[${i}]`;
    if (params.has(param.name)) error(`${field}.name`, `duplicate parameter "${param.name}"`);
    params.set(param.name, param);
    const valueType = param.type === 'command' ? 'string' : param.type;
    if (param.default !== undefined && typeof param.default !== valueType) {
      error(`${field}.default`, `is a ${typeof param.default} but the parameter type is ${param.type}`);
    }
    if (param.choices) {
      if (param.type === 'boolean') error(`${field}.choices`, 'a boolean parameter takes no choices');
      param.choices.forEach((choice, j) => {
        if (param.type !== 'boolean' && typeof choice !== valueType) {
          error(`${field}.choices[${j}]`, `is a ${typeof choice} but the parameter type is ${param.type}`);
        }
      });
      if (param.default !== undefined && !param.choices.includes(param.default as string | number)) {
        error(`${field}.default`, `${JSON.stringify(param.default)} is not one of the choices`);
      }
    }
    if (param.required && param.default !== undefined) {
      warning(`${field}.required`, 'has no effect: the parameter has a default');
    }
  });

  const kinds = agentKinds(env.config);
  const tools = new Map(env.tools.map((t) => [t.name, t]));
  const seen = new Set<string>();
  recipe.steps.forEach((step, i) => {
    const field = `steps[${i}]`;
    if (seen.has(step.id)) error(`${field}.id`, `duplicate step id "${step.id}"`);

    const kind = kinds.find((k) => k.id === step.agent);
    if (!kind) {
      error(
        `${field}.agent`,
        `no agent kind "${step.agent}"; sub-agent kinds: ${kinds
          .filter((k) => k.mode !== 'primary')
          .map((k) => k.id)
          .join(', ')}`,
      );
    } else if (kind.mode === 'primary') {
      error(
        `${field}.agent`,
        `"${step.agent}" is a primary agent; steps run as sub-agents (e.g. general, explore)`,
      );
    }

    step.tools?.forEach((name, j) => {
      const tool = tools.get(name);
      if (!tool) error(`${field}.tools[${j}]`, `unknown tool "${name}"; see list_tool_capabilities`);
      else if (tool.tag === 'workflow') {
        error(`${field}.tools[${j}]`, `"${name}" is a workflow tool; sub-agents cannot start workflows`);
      } else if (kind?.read_only && tool.mutates) {
        warning(
          `${field}.tools[${j}]`,
          `"${name}" mutates but agent ${kind.id} is read-only: it will be withheld`,
        );
      }
    });

    const checkRefs = (text: string, where: string, allowSteps: boolean) => {
      for (const ref of templateRefs(text)) {
        if (params.has(ref)) continue;
        const output = outputReference(ref, 'steps');
        if (output && allowSteps) {
          if (!STEP_FIELDS.includes(output.field)) {
            error(where, `{{ ${ref} }}: a step exposes ${STEP_FIELDS.join(' and ')}, not ${output.field}`);
          } else if (!seen.has(output.id)) {
            const later = recipe.steps.some((s) => s.id === output.id);
            error(
              where,
              later
                ? `{{ ${ref} }} refers to a step that runs later (or this one); only earlier steps have output`
                : `{{ ${ref} }}: no step "${output.id}"`,
            );
          }
          continue;
        }
        error(
          where,
          `{{ ${ref} }}: unknown ${allowSteps ? 'reference' : 'parameter'}; parameters: ${[...params.keys()].join(', ') || '(none)'}${allowSteps ? '; step outputs: {{ steps.<id>.output }}' : ''}`,
        );
      }
    };
    checkRefs(step.prompt, `${field}.prompt`, true);
    step.expect.forEach((expect, j) => {
      // Commands take parameters only: model output never becomes part of a shell command.
      if (expect.command) {
        const where = `${field}.expect[${j}].command`;
        checkRefs(expect.command, where, false);
        for (const problem of commandTemplateProblems(expect.command, recipe.parameters))
          error(where, problem);
        const whole = /^\s*\{\{\s*(\w+)\s*\}\}\s*$/.exec(expect.command)?.[1];
        if (whole && params.get(whole)?.type === 'string') {
          warning(
            where,
            `{{ ${whole} }} is the whole command but "${whole}" is a string parameter: its value runs as one word (a program name without arguments); declare it type = "command" to run a command line`,
          );
        }
      }
      if (expect.contains) checkRefs(expect.contains, `${field}.expect[${j}].contains`, false);
    });
    seen.add(step.id);
  });
  return out;
}
