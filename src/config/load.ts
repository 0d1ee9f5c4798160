/**
 * Config sources, merge and provenance. Lowest to highest precedence: built-in defaults; extra
 * layers (installed plugins); the global file; workspace `svc.toml`; workspace `.svc/svc.toml`; the file named by `SVC_CONFIG`;
 * well-known `SVC_*` env overrides; `--config <file>`; `-c key.path=value` overrides.
 * Tables merge key by key (so `[providers.<id>]` blocks merge field by field); arrays replace.
 * @module
 */
import { readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import type { z } from 'zod';
import { SvcError } from '../errors';
import {
  getPath,
  isTable,
  MAX_CONFIG_DEPTH,
  mergeInto,
  setPath,
  stripPaths,
  tooDeepPath,
} from './config-tree';
import { scrubIssue } from './issue-scrub';
import { type Config, configSchema } from './schema';
import { parseBySection } from './section-parse';
import { locateKey, splitKey } from './toml-locate';
import {
  gateWorkspaceLayers,
  type PendingLayer,
  type WorkspaceTrustInput,
  type WorkspaceTrustReport,
} from './trust';
import { riskyWorkspaceKeys } from './trust-keys';

export type SourceKind = 'default' | 'plugin' | 'global' | 'workspace' | 'env' | 'flag' | 'override';

export interface ConfigSource {
  kind: SourceKind;
  /** Human label: a file path, `env SVC_HTTP_TOKEN`, `-c key=value`, `default`. */
  label: string;
  path?: string;
}

export interface ConfigFileStatus {
  path: string;
  kind: SourceKind;
  found: boolean;
  error?: string;
}

export interface ConfigIssue {
  message: string;
  file?: string;
  line?: number;
  key?: string;
  expected?: string;
}

export interface LoadedConfig {
  config: Config;
  provenance: Map<string, ConfigSource>;
  files: ConfigFileStatus[];
  warnings: string[];
  errors: ConfigIssue[];
  /** The merged raw tree before schema defaults: what the user actually wrote. */
  raw: Record<string, unknown>;
  /** Env values that were interpolated into config: secrets to scrub from output. */
  interpolated: string[];
  /** The workspace trust gate's verdict (config/trust.ts): risky keys found, those dropped. */
  trust?: WorkspaceTrustReport;
}

export interface ConfigSourcesInput {
  workspace: string;
  env: Record<string, string | undefined>;
  /** `--config <file>` */
  configFile?: string;
  /** `-c key.path=value`, in order. */
  overrides?: string[];
  /**
   * Extra layers just above the defaults, below every file (installed plugins' `[mcp.<id>]` and
   * `[agents.<id>]` blocks; src/plugins/config-layer.ts). Read on every load, so a reload sees a
   * plugin installed since. Their warnings join the config warnings.
   */
  layers?: () => ConfigLayer[];
  /**
   * Text to read instead of a file's content on disk, by absolute path: `config set/unset` checks
   * the workspace file as it would be before writing it.
   */
  contents?: Record<string, string>;
  /** What the surface says about workspace trust (config/trust.ts); unset: a headless surface. */
  trust?: WorkspaceTrustInput;
}

/** A config tree contributed by something other than a file the user wrote (a plugin). */
export interface ConfigLayer {
  tree: Record<string, unknown>;
  source: ConfigSource;
  warnings?: string[];
}

/** Well-known env vars that override one config key each. */
export const ENV_OVERRIDES: Record<
  string,
  {
    path: string[];
    parse?: (v: string) => unknown;
    /** `${ENV}` in the value is replaced, as in a file. */
    interpolate?: boolean;
  }
> = {
  SVC_HTTP_TOKEN: { path: ['services', 'http', 'token'] },
  SVC_MCP_TOKEN: { path: ['services', 'mcp', 'token'] },
  SVC_MODEL: { path: ['models', 'large'] },
  SVC_SMALL_MODEL: { path: ['models', 'small'] },
  SVC_LOG_LEVEL: { path: ['log', 'level'] },
  // The password through `${PGPASSWORD}` here too (a URL in a container's spec, the secret apart).
  SVC_STORE_URL: { path: ['store', 'url'], interpolate: true },
  SVC_DISABLED_TOOLS: {
    path: ['options', 'disabled_tools'],
    parse: (v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
  },
};

export function globalConfigDir(env: Record<string, string | undefined>): string {
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'svc');
}

/**
 * `$XDG_CACHE_HOME/svc`, else `$HOME/.cache/svc`: what svc can rebuild (the template database).
 * Undefined when neither is set, so an environment without a home keeps no cache.
 */
export function userCacheDir(env: Record<string, string | undefined>): string | undefined {
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, 'svc');
  return env.HOME ? join(env.HOME, '.cache', 'svc') : undefined;
}

export function globalConfigPath(env: Record<string, string | undefined>): string {
  return join(globalConfigDir(env), 'svc.toml');
}

/**
 * Loads and validates. With `tolerant`, problems are returned in `errors` (and the config falls
 * back to what could be read); otherwise the first problem is thrown as a `config_error`.
 */
export function loadConfig(input: ConfigSourcesInput, options: { tolerant?: boolean } = {}): LoadedConfig {
  const files: ConfigFileStatus[] = [];
  const errors: ConfigIssue[] = [];
  const warnings: string[] = [];
  const provenance = new Map<string, ConfigSource>();
  const interpolated: string[] = [];
  const texts = new Map<string, string>();
  let merged: Record<string, unknown> = {};
  // Merged at the end: the trust gate reads `[security]` from every source but the workspace's.
  const pending: PendingLayer<ConfigSource>[] = [];

  const fail = (issue: ConfigIssue) => {
    if (!options.tolerant) throw configError(scrubIssue(issue, interpolated, input.env));
    errors.push(issue);
  };

  const layer = (tree: Record<string, unknown>, source: ConfigSource, raw?: Record<string, unknown>) => {
    // A plugin under a data dir inside the workspace (the default `.svc/plugins`) may have come
    // with the repository: its keys need the workspace's trust too.
    const workspace =
      source.kind === 'workspace' ||
      (source.kind === 'plugin' &&
        !!source.path &&
        source.path.startsWith(`${resolve(input.workspace)}${sep}`));
    pending.push({ tree, source, workspace, risky: workspace ? riskyWorkspaceKeys(tree, raw) : [] });
  };

  const readFile = (path: string, kind: SourceKind, label: string, required: boolean) => {
    const status: ConfigFileStatus = { path, kind, found: false };
    files.push(status);
    let text: string;
    try {
      const candidate = input.contents?.[path];
      if (candidate !== undefined) text = candidate;
      else if (!statSync(path).isFile()) throw Object.assign(new Error('not a file'), { code: 'EISDIR' });
      else text = readFileSync(path, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && !required) return;
      status.error = code === 'ENOENT' ? 'file not found' : `cannot read: ${(error as Error).message}`;
      fail({ message: status.error, file: path });
      return;
    }
    status.found = true;
    texts.set(path, text);
    let tree: Record<string, unknown>;
    try {
      tree = parseToml(text) as Record<string, unknown>;
    } catch (error) {
      const line = error instanceof TomlError ? error.line : undefined;
      const reason = error instanceof Error ? firstLine(error.message) : String(error);
      status.error = `TOML syntax error${line ? ` at line ${line}` : ''}: ${reason}`;
      fail({ message: `TOML syntax error: ${reason}`, file: path, line });
      return;
    }
    const deep = nestingIssue(tree);
    if (deep) {
      status.error = deep.message;
      fail({ ...deep, file: path });
      return;
    }
    // The workspace's keys are listed as written, before `${ENV}` (config/trust-keys.ts).
    const raw = kind === 'workspace' ? structuredClone(tree) : undefined;
    const problems = interpolateTree(tree, input.env, [], interpolated);
    for (const p of problems) {
      const issue = { ...p, file: path, line: locateKey(text, splitPath(p.key)) };
      status.error ??= formatIssue(issue);
      fail(issue);
    }
    layer(tree, { kind, label, path }, raw);
  };

  for (const extra of input.layers?.() ?? []) {
    warnings.push(...(extra.warnings ?? []));
    const deep = nestingIssue(extra.tree);
    if (deep) fail({ ...deep, file: extra.source.path ?? extra.source.label });
    else layer(structuredClone(extra.tree), extra.source);
  }
  readFile(globalConfigPath(input.env), 'global', 'global', false);
  readFile(resolve(input.workspace, 'svc.toml'), 'workspace', 'workspace', false);
  readFile(resolve(input.workspace, '.svc', 'svc.toml'), 'workspace', 'workspace', false);
  if (input.env.SVC_CONFIG)
    readFile(resolve(input.workspace, input.env.SVC_CONFIG), 'env', 'env SVC_CONFIG', true);

  for (const [name, spec] of Object.entries(ENV_OVERRIDES)) {
    const value = input.env[name];
    if (value === undefined || value === '') continue;
    let text = value;
    if (spec.interpolate) {
      const result = interpolate(value, input.env);
      const key = spec.path.join('.');
      if (result.missing) {
        fail({
          key,
          file: `env ${name}`,
          message: `${key}: environment variable ${result.missing} is not set (write \${${result.missing}:-} to allow it to be empty)`,
        });
        continue;
      }
      interpolated.push(...result.values);
      text = result.value;
    }
    const tree = setPath({}, spec.path, spec.parse ? spec.parse(text) : text);
    if (name.endsWith('TOKEN')) interpolated.push(value);
    layer(tree, { kind: 'env', label: `env ${name}` });
  }

  if (input.configFile) readFile(resolve(input.workspace, input.configFile), 'flag', '--config', true);

  for (const override of input.overrides ?? []) {
    const parsed = parseOverride(override);
    if (!parsed.ok) {
      fail({ message: parsed.error, key: override });
      continue;
    }
    const tree = setPath({}, parsed.path, parsed.value);
    const deep = nestingIssue(tree);
    if (deep) fail({ ...deep, message: `-c ${deep.message}` });
    else layer(tree, { kind: 'override', label: `-c ${parsed.path.join('.')}` });
  }

  const trust = gateWorkspaceLayers(pending, {
    workspace: input.workspace,
    env: input.env,
    input: input.trust,
    configDir: globalConfigDir(input.env),
    warnings,
  });
  for (const p of pending) merged = mergeInto(merged, p.tree, [], provenance, p.source);

  const validated = validate(merged, provenance, texts, warnings);
  for (const issue of validated.errors) fail(issue);

  return { config: validated.config, provenance, files, warnings, errors, raw: merged, interpolated, trust };
}

function validate(
  raw: Record<string, unknown>,
  provenance: Map<string, ConfigSource>,
  texts: Map<string, string>,
  warnings: string[],
): { config: Config; errors: ConfigIssue[] } {
  let data = structuredClone(raw);
  const bySection = parseBySection(data);
  if (bySection) return { config: bySection, errors: [] };
  // Unknown keys are warnings, never errors: strip them and validate what is left.
  for (let attempt = 0; attempt < 20; attempt++) {
    // jitless: the config is parsed once or twice a process; compiling zod's fast path for its
    // hundreds of fields cost ~15 ms of every start (issue 17), interpreting it ~3 ms.
    const result = configSchema().safeParse(data, { jitless: true });
    if (result.success) return { config: result.data, errors: [] };
    const unknown = result.error.issues.filter((i) => i.code === 'unrecognized_keys');
    if (unknown.length === 0) {
      const errors = result.error.issues.map((issue) => describeIssue(issue, raw, provenance, texts));
      // Fall back to defaults for the parts that failed so tolerant callers still get a config.
      const fallback = configSchema().safeParse(
        stripPaths(
          data,
          result.error.issues.map((i) => i.path),
        ),
      );
      return { config: fallback.success ? fallback.data : configSchema().parse({}), errors };
    }
    for (const issue of unknown) {
      for (const key of (issue as { keys: string[] }).keys) {
        const path = [...issue.path.map(String), key];
        const source = provenance.get(path.join('.')) ?? findSource(provenance, path);
        warnings.push(
          `unknown config key ${path.join('.')}${source ? ` (in ${source.path ?? source.label})` : ''}; ignored`,
        );
      }
      data = stripPaths(
        data,
        (issue as { keys: string[] }).keys.map((k) => [...issue.path, k]),
      );
    }
  }
  return { config: configSchema().parse({}), errors: [{ message: 'config could not be validated' }] };
}

function describeIssue(
  issue: z.core.$ZodIssue,
  raw: Record<string, unknown>,
  provenance: Map<string, ConfigSource>,
  texts: Map<string, string>,
): ConfigIssue {
  const path = issue.path.map(String);
  const key = path.join('.');
  const source = provenance.get(key) ?? findSource(provenance, path);
  const text = source?.path ? texts.get(source.path) : undefined;
  const line = text ? locateKey(text, path) : undefined;
  const actual = getPath(raw, path);
  let expected: string | undefined;
  if (issue.code === 'invalid_type') expected = issue.expected;
  else if (issue.code === 'invalid_value')
    expected = `one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  else if (issue.code === 'too_small' || issue.code === 'too_big') expected = describeBound(issue);
  const message =
    expected !== undefined
      ? `${key}: expected ${expected}, got ${describeValue(actual)}`
      : `${key}: ${issue.message}`;
  return {
    message,
    file: source?.path ?? (source ? source.label : undefined),
    line,
    key,
    expected,
  };
}

/** A range issue's bound in words (zod's own "Too small: expected number to be >0" read badly). */
function describeBound(issue: z.core.$ZodIssueTooSmall | z.core.$ZodIssueTooBig): string {
  if (!/^Too (small|big): /.test(issue.message)) return issue.message; // the schema's own words
  const small = issue.code === 'too_small';
  const n = Number(small ? issue.minimum : issue.maximum);
  const word =
    issue.inclusive === false ? (small ? 'more than' : 'less than') : small ? 'at least' : 'at most';
  if (issue.origin === 'string') return `a string of ${word} ${n} character${n === 1 ? '' : 's'}`;
  if (issue.origin === 'array' || issue.origin === 'set') return `${word} ${n} item${n === 1 ? '' : 's'}`;
  return `a number ${word} ${String(small ? issue.minimum : issue.maximum)}`;
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'a table';
  if (typeof value === 'string')
    return `string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `${typeof value} ${String(value)}`;
}

export function formatIssue(issue: ConfigIssue): string {
  // A -c value's label is its key (`-c options.max_steps`), which the message names already.
  if (issue.file?.startsWith('-c ') && issue.key && issue.message.startsWith(`${issue.key}: `))
    return `config: -c ${issue.message}`;
  const where = issue.file ? `${issue.file}${issue.line ? `:${issue.line}` : ''}: ` : '';
  return `config: ${where}${issue.message}`;
}

export function configError(issue: ConfigIssue): SvcError {
  return new SvcError('config_error', formatIssue(issue), { details: { ...issue } });
}

/** A tree too deep to walk, as an issue naming the start of its key path. */
function nestingIssue(tree: Record<string, unknown>): ConfigIssue | undefined {
  const path = tooDeepPath(tree);
  if (!path) return undefined;
  const key = `${path.slice(0, 6).join('.')}.…`;
  return {
    key,
    message: `${key}: nests deeper than ${MAX_CONFIG_DEPTH} levels, the most svc reads; write it with fewer levels`,
  };
}

function interpolateTree(
  node: Record<string, unknown> | unknown[],
  env: Record<string, string | undefined>,
  path: string[],
  used: string[],
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const entries: [string | number, unknown][] = Array.isArray(node)
    ? node.map((v, i) => [i, v])
    : Object.entries(node);
  for (const [key, value] of entries) {
    const here = [...path, String(key)];
    if (typeof value === 'string') {
      const result = interpolate(value, env);
      if (result.missing) {
        issues.push({
          key: here.filter((_, i) => !Array.isArray(node) || i < here.length - 1).join('.'),
          message: `${here.join('.')}: environment variable ${result.missing} is not set (write \${${result.missing}:-} to allow it to be empty)`,
        });
        continue;
      }
      if (result.value !== value) {
        used.push(...result.values);
        (node as Record<string | number, unknown>)[key] = result.value;
      }
    } else if (Array.isArray(value) || isTable(value)) {
      issues.push(...interpolateTree(value as Record<string, unknown>, env, here, used));
    }
  }
  return issues;
}

/** `${NAME}` and `${NAME:-default}`; `$${` is a literal `${`. */
export function interpolate(
  text: string,
  env: Record<string, string | undefined>,
): { value: string; missing?: string; values: string[] } {
  const values: string[] = [];
  let missing: string | undefined;
  const value = text.replace(
    /\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}/g,
    (match, literal, name, hasDefault, fallback) => {
      if (literal) return match.slice(1);
      const v = env[name];
      if (v !== undefined && v !== '') {
        values.push(v);
        return v;
      }
      if (hasDefault !== undefined) return fallback ?? '';
      if (v === '') return '';
      missing ??= name;
      return match;
    },
  );
  return { value, missing, values };
}

function parseOverride(
  text: string,
): { ok: true; path: string[]; value: unknown } | { ok: false; error: string } {
  const eq = text.indexOf('=');
  if (eq <= 0) return { ok: false, error: `-c ${text}: expected key.path=value` };
  const key = text.slice(0, eq).trim();
  const rawValue = text.slice(eq + 1).trim();
  const path = splitKey(key);
  if (path.length === 0) return { ok: false, error: `-c ${text}: empty key` };
  let value: unknown = rawValue;
  try {
    value = (parseToml(`v = ${rawValue}`) as { v: unknown }).v;
  } catch {
    // Not a TOML value: take it as a bare string, which is what people mean by -c model=foo/bar.
  }
  return { ok: true, path, value };
}

function findSource(provenance: Map<string, ConfigSource>, path: string[]): ConfigSource | undefined {
  for (let i = path.length; i > 0; i--) {
    const s = provenance.get(path.slice(0, i).join('.'));
    if (s) return s;
  }
  // A parent table: any leaf below it names the file.
  const prefix = `${path.join('.')}.`;
  for (const [k, s] of provenance) if (k.startsWith(prefix)) return s;
  return undefined;
}

function splitPath(key: string | undefined): string[] {
  return key ? key.split('.') : [];
}

function firstLine(text: string): string {
  return text.split('\n')[0].trim();
}
