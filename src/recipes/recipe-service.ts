/**
 * The recipes domain (`app.recipes`): list, validate and run recipes. The scheduler runs one by
 * name through `run` (or the `run_recipe` tool); every run is a pipeline (its own session and run
 * in the ledger, one sub-agent run per step attempt) and a `workflow_runs` row of kind `recipe`.
 * @module
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { App } from '../app';
import { globalConfigDir } from '../config/load';
import { SvcError } from '../errors';
import type { Caller } from '../workflows/lineage';
import type { WorkflowRun } from '../workflows/workflow-runs';
import type { WorkflowService } from '../workflows/workflow-service';
import type { OpContext } from '../workspace/context';
import { checkRecipe } from './recipe-check';
import { executeRecipe, type ParamValue, type RecipeStepResult, resolveParams } from './recipe-runner';
import type { RecipeDiagnostic, RecipeParameter } from './recipe-schema';
import { discoverRecipes, type LoadedRecipe, loadRecipe, type RecipeSource } from './recipe-store';

export interface RecipeSummary {
  name: string;
  description: string;
  source: RecipeSource;
  path: string | null;
  valid: boolean;
  errors: number;
  warnings: number;
  parameters: RecipeParameter[];
  steps: { id: string; agent: string; description: string | null; expect: number }[];
  shadows: RecipeSource[];
  last_run: { recipe_run_id: string; status: string; run_id: string; created_at: number } | null;
}

export interface RecipeValidation {
  name: string;
  source: RecipeSource;
  path: string | null;
  valid: boolean;
  errors: number;
  warnings: number;
  diagnostics: RecipeDiagnostic[];
  /** The parsed recipe (defaults filled in) when the file has the right shape. */
  recipe: LoadedRecipe['definition'] | null;
}

export interface RecipeRunResult {
  recipe_run_id: string;
  recipe: string;
  source: RecipeSource;
  status: WorkflowRun['status'];
  /** The recipe's pipeline session and run; steps are its child sessions and runs. */
  session_id: string;
  run_id: string;
  parent_run_id: string | null;
  family_session_id: string;
  params: Record<string, ParamValue>;
  steps: RecipeStepResult[];
  /** The last completed step's answer. */
  output: string;
  error: string | null;
  warnings: string[];
}

export interface RecipeRunOptions {
  caller: Caller;
  /** How expect commands ask (the tool's ctx.ask); absent = the operator's own call. */
  approve?: OpContext['approve'];
}

export interface RecipeService {
  /** Recipe directories: workspace and user. */
  readonly dirs: { workspace: string; user: string };
  list(): RecipeSummary[];
  /** The effective recipe of a name; `not_found` naming the known ones. */
  get(name: string): LoadedRecipe;
  /** Validate by name, by file path, or inline TOML text. Never throws for a bad recipe. */
  validate(input: { name?: string; path?: string; content?: string }): RecipeValidation;
  run(name: string, params: Record<string, unknown>, options: RecipeRunOptions): Promise<RecipeRunResult>;
}

export function createRecipeService(app: App, workflows: () => WorkflowService): RecipeService {
  const dirs = {
    workspace: join(app.workspace, '.svc', 'recipes'),
    user: join(globalConfigDir(app.env), 'recipes'),
  };
  const discover = () => discoverRecipes(dirs);
  const check = (recipe: LoadedRecipe): RecipeDiagnostic[] => [
    ...recipe.diagnostics,
    ...(recipe.definition
      ? checkRecipe(
          recipe.definition,
          { config: app.config, tools: app.tools.gates().map((g) => g.tool) },
          recipe.source === 'inline' ? undefined : recipe.name,
        )
      : []),
  ];
  const validation = (recipe: LoadedRecipe): RecipeValidation => {
    const diagnostics = check(recipe);
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
  };

  const service: RecipeService = {
    dirs,
    list() {
      return discover().map((recipe) => {
        const v = validation(recipe);
        const last = workflows().runs.list({ kind: 'recipe', name: recipe.name, limit: 1 })[0];
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
      });
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
      const target = app.ws.paths.resolve(input.path!, 'path');
      let text: string;
      try {
        if (!statSync(target.abs).isFile()) throw new Error('not a file');
        text = readFileSync(target.abs, 'utf8');
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
      const recipe = service.get(name);
      const v = validation(recipe);
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
      const params = resolveParams(name, definition, given);
      const pipeline = workflows().start(options.caller, {
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
          app,
          name,
          recipe: definition,
          params,
          pipeline,
          approve: options.approve,
        });
      } catch (error) {
        failure = app.redactor.string(error instanceof Error ? error.message : String(error));
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
      const row = pipeline.finish({
        status,
        text: summary,
        error,
        result: { steps, output, warnings: pipeline.warnings },
      });
      return {
        recipe_run_id: pipeline.id,
        recipe: name,
        source: recipe.source,
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
    },
  };
  return service;
}
