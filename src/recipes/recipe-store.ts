/**
 * Where recipes come from: `<workspace>/.svc/recipes/<name>.toml` (source `workspace`),
 * `<config dir>/svc/recipes/<name>.toml` (source `user`), and the built-ins (source `builtin`).
 * The first of these with a name wins; the others are reported as shadowed. Files are read on
 * every call (they are small), so an edited recipe is picked up at once.
 * @module
 */
import { existsSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { readRegularFile } from '../workspace/file-io';
import { BUILTIN_RECIPES } from './builtin-recipes';
import { parseRecipeText, type RecipeDefinition, type RecipeDiagnostic } from './recipe-schema';

export type RecipeSource = 'workspace' | 'user' | 'builtin' | 'inline';

export interface RecipeFile {
  name: string;
  source: RecipeSource;
  /** Absolute path, or null for built-ins and inline text. */
  path: string | null;
  text: string;
}

export interface LoadedRecipe extends RecipeFile {
  definition?: RecipeDefinition;
  /** Parse diagnostics only (the semantic check adds its own). */
  diagnostics: RecipeDiagnostic[];
  /** Sources of the same name this one hides. */
  shadows: RecipeSource[];
}

const MAX_RECIPE_BYTES = 256 * 1024;
const NAME = /^[a-z0-9][a-z0-9_-]*$/;

export interface RecipeDirs {
  workspace: string;
  user: string;
}

/** Every recipe file of one source directory, sorted by name. */
function filesIn(dir: string, source: RecipeSource): RecipeFile[] {
  if (!existsSync(dir)) return [];
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries
    .filter((file) => file.endsWith('.toml'))
    .sort()
    .flatMap((file): RecipeFile[] => {
      const path = join(dir, file);
      try {
        return [{ name: basename(file, '.toml'), source, path, text: readRecipeText(path) }];
      } catch {
        return [];
      }
    });
}

/**
 * The text of the recipe file at `path`; a file over `MAX_RECIPE_BYTES` gives a text that fails
 * to parse, saying so. The file is checked once opened, never by a stat before the read: a command
 * in the workspace can put a FIFO (a read of it waits for a writer, and svc's process with it) or a
 * huge file in its place between the two. Throws when it is missing or not a regular file
 * (`NotRegularFileError`, EISDIR).
 */
export function readRecipeText(path: string): string {
  const buffer = readRegularFile(path, MAX_RECIPE_BYTES + 1);
  if (buffer.length > MAX_RECIPE_BYTES) return `# recipe file is more than ${MAX_RECIPE_BYTES} bytes\n=`;
  return buffer.toString('utf8');
}

export function loadRecipe(file: RecipeFile): LoadedRecipe {
  const parsed = parseRecipeText(file.text);
  const diagnostics = [...parsed.diagnostics];
  if (!NAME.test(file.name)) {
    diagnostics.unshift({
      severity: 'error',
      field: 'file',
      message: `file name "${file.name}.toml" is not a valid recipe name (lowercase letters, digits, - or _)`,
    });
  }
  return { ...file, definition: parsed.definition, diagnostics, shadows: [] };
}

/** Every recipe by name, the winning source first. */
export function discoverRecipes(dirs: RecipeDirs): LoadedRecipe[] {
  const all = [
    ...filesIn(dirs.workspace, 'workspace'),
    ...filesIn(dirs.user, 'user'),
    ...Object.entries(BUILTIN_RECIPES).map(
      ([name, text]): RecipeFile => ({ name, source: 'builtin', path: null, text: text.trimStart() }),
    ),
  ];
  const byName = new Map<string, LoadedRecipe>();
  for (const file of all) {
    const existing = byName.get(file.name);
    if (existing) {
      existing.shadows.push(file.source);
      continue;
    }
    byName.set(file.name, loadRecipe(file));
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}
