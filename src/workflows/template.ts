/**
 * Prompt templates of recipes, DAG tasks, workflow steps and CSV rows: `{{ name }}` inserts a
 * parameter (or a CSV column), `{{ steps.<id>.output }}` / `{{ tasks.<id>.output }}` the final
 * answer of an earlier step or task. Only `{{ identifier(.identifier)* }}` is a reference; any
 * other `{{…}}` (a Handlebars snippet in a prompt) is left as written.
 * @module
 */
import { SvcError } from '../errors';

const REFERENCE = /\{\{\s*([A-Za-z_][\w-]*(?:\.[\w-]+)*)\s*\}\}/g;

/** The references of a template, in order, without duplicates. */
export function templateRefs(template: string): string[] {
  const refs = new Set<string>();
  for (const match of template.matchAll(REFERENCE)) refs.add(match[1]);
  return [...refs];
}

/**
 * Replace every reference with its value. An unknown reference is an `invalid_input` error naming
 * `field` and the names that exist, never a silent empty string.
 */
export function renderTemplate(
  template: string,
  lookup: (reference: string) => string | undefined,
  field: string,
  options: { known?: () => string[] } = {},
): string {
  const missing: string[] = [];
  const text = template.replace(REFERENCE, (whole, reference: string) => {
    const value = lookup(reference);
    if (value === undefined) {
      missing.push(reference);
      return whole;
    }
    return value;
  });
  if (missing.length) {
    const known = options.known?.() ?? [];
    throw new SvcError(
      'invalid_input',
      `${field}: unknown template reference${missing.length > 1 ? 's' : ''} ${missing.map((m) => `{{ ${m} }}`).join(', ')}${known.length ? `; known: ${known.join(', ')}` : ''}`,
    );
  }
  return text;
}

/** `steps.<id>.output` → `{ scope: 'steps', id, field: 'output' }`; anything else → undefined. */
export function outputReference(
  reference: string,
  scope: 'steps' | 'tasks',
): { id: string; field: string } | undefined {
  const parts = reference.split('.');
  if (parts.length !== 3 || parts[0] !== scope) return undefined;
  return { id: parts[1], field: parts[2] };
}
