/**
 * The recipes domain (`app.recipes`): list, validate and run recipes. The scheduler runs one by
 * name through `run` (or the `run_recipe` tool); every run is a pipeline (its own session and run
 * in the ledger, one sub-agent run per step attempt) and a `workflow_runs` row of kind `recipe`.
 * @module
 */
import { join } from 'node:path';
import { globalConfigDir } from '../config/load';
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { Redactor } from '../redact';
import type { ToolCatalog } from '../workflows/ports';
import type { WorkflowService } from '../workflows/workflow-service';
import type { Workspace } from '../workspace/workspace';
import { assertCommandParams } from './check-command';
import { checkRecipe } from './recipe-check';
import { executeRecipe, type ParamValue, type RecipeStepResult, resolveParams } from './recipe-runner';
import type { RecipeDiagnostic } from './recipe-schema';
import { discoverRecipes, type LoadedRecipe, loadRecipe, readRecipeText } from './recipe-store';
import type {
  RecipeRunOptions,
  RecipeRunResult,
  RecipeService,
  RecipeSummary,
  RecipeValidation,
} from './types';

export type {
  RecipeCatalog,
  RecipeRunOptions,
  RecipeRunResult,
  RecipeService,
  RecipeSummary,
  RecipeValidation,
} from './types';

/**
 * What the recipes domain needs: where recipes live (the workspace, the user's config dir), the
 * config and tool catalog a recipe is checked against, the workspace's paths and shell (a recipe
 * file by path, expect commands) and the workflows domain its runs are pipelines of.
 */
export interface RecipeDeps {
  readonly workspace: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly config: () => Config;
  readonly tools: () => ToolCatalog;
  /** The workspace (a thunk: it is built after the recipes domain). */
  readonly ws: () => Pick<Workspace, 'paths' | 'shell'>;
  readonly redactor: Pick<Redactor, 'string'>;
  readonly workflows: () => Pick<WorkflowService, 'runs' | 'start'>;
}

export function createRecipeService(deps: RecipeDeps): RecipeService {
  const dirs = {
    workspace: join(deps.workspace, '.svc', 'recipes'),
    user: join(globalConfigDir(deps.env), 'recipes'),
  };
  const discover = () => discoverRecipes(dirs);
  const validation = (recipe: LoadedRecipe) => validationOf(deps, recipe);

  const service: RecipeService = {
    dirs,
    list() {
      return Promise.all(discover().map((recipe) => summaryOf(recipe, validation(recipe), deps.workflows())));
    },
    get(name) {
      const all = discover();
      const recipe = all.find((r) => r.name === name);
      if (!recipe) {
        throw new SvcError(
          'not_found',
          `name: no recipe "${name}"; known: ${all.map((r) => r.name).join(', ')} (add ${join(dirs.workspace, `${name}.toml`)})`,
        );
      }
      return recipe;
    },
    validate(input) {
      const given = [input.name, input.path, input.content].filter((v) => v !== undefined).length;
      if (given !== 1) {
        throw new SvcError(
          'invalid_input',
          'give exactly one of name (a known recipe), path (a .toml file) or content (TOML text)',
        );
      }
      if (input.name !== undefined) return validation(service.get(input.name));
      if (input.content !== undefined) {
        return validation(loadRecipe({ name: 'inline', source: 'inline', path: null, text: input.content }));
      }
      const target = deps.ws().paths.resolve(input.path!, 'path');
      let text: string;
      try {
        text = readRecipeText(target.abs);
      } catch {
        throw new SvcError('not_found', `path: no readable file ${target.rel}`);
      }
      const stem = target.rel
        .split('/')
        .pop()!
        .replace(/\.toml$/, '');
      return validation(loadRecipe({ name: stem, source: 'workspace', path: target.abs, text }));
    },
    async run(name, given, options) {
      return runRecipe(deps, service.get(name), name, given, options);
    },
  };
  return service;
}

function validationOf(deps: RecipeDeps, recipe: LoadedRecipe): RecipeValidation {
  const diagnostics: RecipeDiagnostic[] = [
    ...recipe.diagnostics,
    ...(recipe.definition
      ? checkRecipe(
          recipe.definition,
          {
            config: deps.config(),
            tools: deps
              .tools()
              .gates()
              .map((g) => g.tool),
          },
          recipe.source === 'inline' ? undefined : recipe.name,
        )
      : []),
  ];
  const errors = diagnostics.filter((d) => d.severity === 'error').length;
  return {
    name: recipe.definition?.name ?? recipe.name,
    source: recipe.source,
    path: recipe.path,
    valid: errors === 0,
    errors,
    warnings: diagnostics.length - errors,
    diagnostics,
    recipe: recipe.definition ?? null,
  };
}

async function summaryOf(
  recipe: LoadedRecipe,
  v: RecipeValidation,
  workflows: Pick<WorkflowService, 'runs'>,
): Promise<RecipeSummary> {
  const last = (await workflows.runs.list({ kind: 'recipe', name: recipe.name, limit: 1 }))[0];
  return {
    name: recipe.name,
    description: recipe.definition?.description ?? '',
    source: recipe.source,
    path: recipe.path,
    valid: v.valid,
    errors: v.errors,
    warnings: v.warnings,
    parameters: recipe.definition?.parameters ?? [],
    steps: (recipe.definition?.steps ?? []).map((s) => ({
      id: s.id,
      agent: s.agent,
      description: s.description ?? null,
      expect: s.expect.length,
    })),
    shadows: recipe.shadows,
    last_run: last
      ? {
          recipe_run_id: last.id,
          status: last.status,
          run_id: last.run_id,
          created_at: last.created_at,
        }
      : null,
  };
}

async function runRecipe(
  deps: RecipeDeps,
  recipe: LoadedRecipe,
  name: string,
  given: Record<string, unknown>,
  options: RecipeRunOptions,
): Promise<RecipeRunResult> {
  const v = validationOf(deps, recipe);
  if (!v.valid || !recipe.definition) {
    throw new SvcError(
      'invalid_input',
      `name: recipe "${name}" is not valid: ${v.diagnostics
        .filter((d) => d.severity === 'error')
        .map((d) => `${d.field}: ${d.message}`)
        .join('; ')} (see recipe_validate)`,
      { details: { diagnostics: v.diagnostics } },
    );
  }
  const definition = recipe.definition;
  const params: Record<string, ParamValue> = resolveParams(name, definition, given);
  assertCommandParams(name, definition, params, options.modelOutputParams);
  const pipeline = await deps.workflows().start(options.caller, {
    kind: 'recipe',
    name,
    title: `recipe ${name}`,
    request: `Run recipe ${name}${
      Object.keys(params).length
        ? ` with ${Object.entries(params)
            .map(([k, value]) => `${k}=${JSON.stringify(value)}`)
            .join(', ')}`
        : ''
    }: ${definition.description}`,
    input: { recipe: name, source: recipe.source, params },
  });
  let steps: RecipeStepResult[] = [];
  let failure: string | null = null;
  try {
    steps = await executeRecipe({
      deps: { ws: deps.ws(), redactor: deps.redactor },
      name,
      recipe: definition,
      params,
      pipeline,
      approve: options.approve,
    });
  } catch (error) {
    failure = deps.redactor.string(error instanceof Error ? error.message : String(error));
  }
  const failed = steps.find(
    (s) => s.status !== 'completed' && !definition.steps.find((d) => d.id === s.id)?.continue_on_failure,
  );
  const status =
    failure || failed
      ? pipeline.signal.aborted || failed?.status === 'cancelled'
        ? 'cancelled'
        : 'failed'
      : 'completed';
  const output = [...steps].reverse().find((s) => s.status === 'completed')?.output ?? '';
  const error =
    failure ??
    (failed ? `step "${failed.id}" ${failed.status}${failed.error ? `: ${failed.error}` : ''}` : null);
  const summary = [
    `Recipe ${name} ${status}.`,
    ...steps.map(
      (s) =>
        `- ${s.id}: ${s.status}${s.attempts > 1 ? ` after ${s.attempts} attempts` : ''}${s.run_id ? ` (run ${s.run_id})` : ''}`,
    ),
    ...(error ? [`Error: ${error}`] : []),
    ...(output ? ['', output] : []),
  ].join('\n');
  const row = await pipeline.finish({
    status,
    text: summary,
    error,
    result: { steps, output, warnings: pipeline.warnings },
  });
  return {
    recipe_run_id: pipeline.id,
    recipe: name,
    source: recipe.source,
    path: recipe.path,
    shadows: recipe.shadows,
    status: row.status,
    session_id: pipeline.sessionId,
    run_id: pipeline.runId,
    parent_run_id: pipeline.parentRunId,
    family_session_id: pipeline.familySessionId,
    params,
    steps,
    output,
    error: row.error ?? error,
    warnings: pipeline.warnings,
  };
}
