/**
 * `config set/unset`: edit the workspace `svc.toml` atomically (temp file + rename), validating
 * the result first. Edits are line-level where the key is written plainly, so comments and layout
 * survive; otherwise the file is re-serialized.
 * @module
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { SvcError } from '../errors';
import { sameItems } from '../util/arrays';
import { getPath, setPath } from './config-tree';
import { configSchema } from './schema';
import { splitKey } from './toml-locate';

export function parseConfigValue(text: string): unknown {
  try {
    return (parseToml(`v = ${text}`) as { v: unknown }).v;
  } catch {
    return text;
  }
}

export function writeConfigKey(
  file: string,
  key: string,
  value: unknown | undefined,
  options: {
    /** Checks the whole text as it would be written (e.g. a full config load); throws to refuse. */
    check?: (text: string) => void;
  } = {},
): { file: string; changed: boolean } {
  const path = splitKey(key);
  if (path.length === 0) throw new SvcError('invalid_input', `key: "${key}" is not a config key path`);
  const before = existsSync(file) ? readFileSync(file, 'utf8') : '';
  let tree: Record<string, unknown>;
  try {
    tree = parseToml(before) as Record<string, unknown>;
  } catch (error) {
    throw new SvcError(
      'config_error',
      `config: ${file}: cannot edit, the file has a TOML syntax error: ${(error as Error).message.split('\n')[0]}`,
    );
  }
  const next = structuredClone(tree);
  if (value === undefined) {
    if (getPath(next, path) === undefined) return { file, changed: false };
    const parent = getPath(next, path.slice(0, -1)) as Record<string, unknown>;
    delete parent[path[path.length - 1]];
  } else {
    setPath(next, path, value);
  }
  // Validate the file as it would be, before anything is written. Only what this edit brings in
  // refuses it: an unknown key elsewhere is a warning, as for the loader and `config validate`
  // (one validation, one answer), and a problem the file already had is the loader's to name, with
  // its line (the `check` below).
  const problem = newProblem(tree, next, path);
  if (problem) {
    throw new SvcError('invalid_input', `config: refusing to write ${key}: ${problem}; ${file} is unchanged`);
  }
  let text = lineEdit(before, path, value);
  if (text === undefined || !sameTree(text, next)) text = stringifyToml(next);
  text = text.endsWith('\n') ? text : `${text}\n`;
  try {
    options.check?.(text);
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error)).replace(/^config: /, '');
    throw new SvcError(
      'invalid_input',
      `config: refusing to write ${key}: ${reason}; ${file} is unchanged (fix that first; svc config validate lists every problem)`,
      { cause: error },
    );
  }
  const temp = join(dirname(file), `.${Date.now()}.${process.pid}.svc.toml.tmp`);
  writeFileSync(temp, text, { mode: 0o600 });
  renameSync(temp, file);
  return { file, changed: true };
}

function sameTree(text: string, expected: unknown): boolean {
  try {
    return JSON.stringify(parseToml(text)) === JSON.stringify(expected);
  } catch {
    return false;
  }
}

/** Replace, insert or remove one `key = value` line. Undefined when the layout is not simple. */
function lineEdit(text: string, path: string[], value: unknown | undefined): string | undefined {
  const lines = text === '' ? [] : text.split('\n');
  const parent = path.slice(0, -1);
  const leaf = path[path.length - 1];
  const rendered = value === undefined ? undefined : renderValue(leaf, value);
  if (rendered === undefined && value !== undefined) return undefined;
  let table: string[] = [];
  let tableEnd = -1; // last key line of the parent table
  let headerSeen = parent.length === 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    const header = /^\[\[?\s*([^\]]+?)\s*\]\]?$/.exec(line);
    if (header) {
      table = splitKey(header[1]);
      if (sameItems(table, parent)) {
        headerSeen = true;
        tableEnd = i;
      }
      continue;
    }
    if (!sameItems(table, parent)) continue;
    const assign = /^((?:"[^"]*"|'[^']*'|[A-Za-z0-9_.\-\s])+?)\s*=/.exec(line);
    if (!assign) continue;
    tableEnd = i;
    if (sameItems(splitKey(assign[1]), [leaf])) {
      if (rendered === undefined) lines.splice(i, 1);
      else lines[i] = rendered;
      return lines.join('\n');
    }
  }
  if (rendered === undefined) return undefined;
  if (headerSeen && (tableEnd >= 0 || parent.length === 0)) {
    if (parent.length === 0) {
      // Top-level keys must come before the first table header.
      const firstHeader = lines.findIndex((l) => /^\s*\[/.test(l));
      lines.splice(firstHeader === -1 ? lines.length : firstHeader, 0, rendered);
    } else lines.splice(tableEnd + 1, 0, rendered);
    return lines.join('\n');
  }
  const header = `[${parent.map(quoteKey).join('.')}]`;
  return [
    ...lines,
    ...(lines.length && lines[lines.length - 1].trim() !== '' ? [''] : []),
    header,
    rendered,
  ].join('\n');
}

function renderValue(leaf: string, value: unknown): string | undefined {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) return undefined;
  try {
    return stringifyToml({ [leaf]: value }).trim();
  } catch {
    return undefined;
  }
}

function quoteKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

type SchemaIssue = { code: string; path: PropertyKey[]; message: string; keys?: string[] };

/** The first schema problem of `next` that `before` did not have and that concerns the edit. */
function newProblem(before: Record<string, unknown>, next: Record<string, unknown>, edited: string[]) {
  const check = configSchema().safeParse(next);
  if (check.success) return undefined;
  const had = new Set(issuesOf(before).map(issueId));
  const describe = (issue: SchemaIssue, reason: string) => {
    const where = issue.path.join('.');
    return `${where ? `${where}: ` : ''}${reason}`;
  };
  for (const issue of check.error.issues as SchemaIssue[]) {
    if (issue.code === 'unrecognized_keys') {
      // Refused only when the key being written is the unknown one (or under it).
      const unknown = (issue.keys ?? []).find((k) => isPrefix([...issue.path.map(String), k], edited));
      if (unknown !== undefined) return describe(issue, `unknown key ${unknown}`);
      continue;
    }
    if (!had.has(issueId(issue))) return describe(issue, issue.message);
  }
  return undefined;
}

function issuesOf(tree: Record<string, unknown>): SchemaIssue[] {
  const check = configSchema().safeParse(tree);
  return check.success ? [] : (check.error.issues as SchemaIssue[]);
}

const issueId = (issue: SchemaIssue) => `${issue.path.map(String).join('.')}|${issue.code}|${issue.message}`;

function isPrefix(prefix: string[], path: string[]): boolean {
  return prefix.length <= path.length && prefix.every((part, i) => part === path[i]);
}
