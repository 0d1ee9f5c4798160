/**
 * The recipes domain's shapes: what `list`, `validate` and `run` answer, and the service itself.
 * Workflow definitions check the recipes they name through `RecipeCatalog`.
 * @module
 */
import type { Caller } from '../workflows/lineage';
import type { WorkflowRun } from '../workflows/workflow-runs';
import type { OpContext } from '../workspace/context';
import type { ParamValue, RecipeStepResult } from './recipe-runner';
import type { RecipeDiagnostic, RecipeParameter } from './recipe-schema';
import type { LoadedRecipe, RecipeSource } from './recipe-store';

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
  /** The recipe file (null for a built-in). */
  path: string | null;
  /** Sources of the same name this recipe replaces (e.g. `builtin`). */
  shadows: RecipeSource[];
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
  /**
   * Parameters whose values came from a step's output (model output, in a workflow template):
   * refused when a check command uses them or they are `command` parameters.
   */
  modelOutputParams?: string[];
}

export interface RecipeService {
  /** Recipe directories: workspace and user. */
  readonly dirs: { workspace: string; user: string };
  list(): Promise<RecipeSummary[]>;
  /** The effective recipe of a name; `not_found` naming the known ones. */
  get(name: string): LoadedRecipe;
  /** Validate by name, by file path, or inline TOML text. Never throws for a bad recipe. */
  validate(input: { name?: string; path?: string; content?: string }): RecipeValidation;
  run(name: string, params: Record<string, unknown>, options: RecipeRunOptions): Promise<RecipeRunResult>;
}

/** What a workflow definition checks of the recipes it names. */
export type RecipeCatalog = Pick<RecipeService, 'get' | 'validate'>;
