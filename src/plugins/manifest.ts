/**
 * The plugin manifest, `svc-plugin.toml` at the root of a plugin directory or git repository:
 *
 * ```toml
 * name = "review-kit"            # required: letters, digits, - and _
 * version = "1.2.0"
 * description = "Code review helpers"
 * packs = "packs"                # operating packs: <dir>/<pack>/pack.toml (default "packs" when present)
 * recipes = "recipes"            # recipe files (default "recipes" when present)
 * commands = "commands"          # custom slash commands / prompts, *.md (default "commands" when present)
 *
 * [mcp.reviewer]                 # same keys as [mcp.<id>] in svc.toml
 * command = "node"
 * args = ["${SVC_PLUGIN_DIR}/server.js"]
 *
 * [agents.reviewer]              # same keys as [agents.<id>] in svc.toml
 * description = "Reviews diffs"
 * read_only = true
 * ```
 *
 * `${SVC_PLUGIN_DIR}` in MCP blocks is the installed plugin's directory.
 * @module
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, normalize, relative } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { agentSchema, mcpServerSchema } from '../config/schema';
import { SvcError } from '../errors';
import { lazy } from '../util/lazy';

export const MANIFEST_FILE = 'svc-plugin.toml';
export const PLUGIN_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

const relativeDir = lazy(() =>
  z
    .string()
    .min(1)
    .refine(
      (value) => !isAbsolute(value) && !normalize(value).startsWith('..'),
      'must be a directory inside the plugin',
    ),
);

export const manifestSchema = lazy(() =>
  z.strictObject({
    name: z
      .string()
      .regex(PLUGIN_NAME, 'letters, digits, - and _, starting with a letter or digit (at most 63)'),
    version: z.string().default(''),
    description: z.string().default(''),
    packs: relativeDir().optional(),
    recipes: relativeDir().optional(),
    commands: relativeDir().optional(),
    mcp: z.record(z.string().regex(/^[A-Za-z0-9_-]+$/), mcpServerSchema()).default({}),
    agents: z.record(z.string().regex(/^[A-Za-z0-9_-]+$/), agentSchema()).default({}),
  }),
);

export type PluginManifest = z.output<ReturnType<typeof manifestSchema>>;

/** What a plugin brings, by kind: names only (what the approval prompt and plugin_list show). */
export interface PluginSummary {
  mcp_servers: string[];
  agents: string[];
  packs: string[];
  recipes: string[];
  commands: string[];
}

export interface LoadedManifest {
  manifest: PluginManifest;
  summary: PluginSummary;
  /** Absolute directories of each piece kind (present only when the directory exists). */
  dirs: { packs?: string; recipes?: string; commands?: string };
}

/** Read and validate `<dir>/svc-plugin.toml`; a clear `invalid_input` naming the field otherwise. */
export function loadManifest(dir: string): LoadedManifest {
  const path = join(dir, MANIFEST_FILE);
  if (!existsSync(path)) {
    throw new SvcError(
      'invalid_input',
      `source: no ${MANIFEST_FILE} at the root of ${dir}; a plugin needs one (name = "…")`,
    );
  }
  let raw: unknown;
  try {
    raw = parseToml(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new SvcError(
      'invalid_input',
      `${MANIFEST_FILE}: TOML syntax error: ${(error as Error).message.split('\n')[0]}`,
    );
  }
  const parsed = manifestSchema().safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue.path.length ? issue.path.join('.') : 'manifest';
    const detail =
      issue.code === 'unrecognized_keys'
        ? `unknown key(s) ${(issue as { keys: string[] }).keys.join(', ')}`
        : issue.message;
    throw new SvcError('invalid_input', `${MANIFEST_FILE}: ${where}: ${detail}`, {
      details: { issues: parsed.error.issues.length },
    });
  }
  const manifest = parsed.data;
  const dirs: LoadedManifest['dirs'] = {};
  for (const kind of ['packs', 'recipes', 'commands'] as const) {
    const candidate = join(dir, manifest[kind] ?? kind);
    if (relative(dir, candidate).startsWith('..')) continue;
    if (isDirectory(candidate)) dirs[kind] = candidate;
    else if (manifest[kind])
      throw new SvcError(
        'invalid_input',
        `${MANIFEST_FILE}: ${kind}: "${manifest[kind]}" is not a directory of the plugin`,
      );
  }
  return {
    manifest,
    dirs,
    summary: {
      mcp_servers: Object.keys(manifest.mcp).sort(),
      agents: Object.keys(manifest.agents).sort(),
      packs: dirs.packs
        ? entries(dirs.packs).filter((name) => existsSync(join(dirs.packs as string, name, 'pack.toml')))
        : [],
      recipes: dirs.recipes
        ? entries(dirs.recipes).filter((name) => isFile(join(dirs.recipes as string, name)))
        : [],
      commands: dirs.commands
        ? entries(dirs.commands)
            .filter((name) => name.endsWith('.md'))
            .map((name) => name.slice(0, -3))
        : [],
    },
  };
}

/** `${SVC_PLUGIN_DIR}` in the plugin's MCP blocks becomes its installed directory. */
export function withPluginDir<T>(value: T, dir: string): T {
  if (typeof value === 'string') return value.split('${SVC_PLUGIN_DIR}').join(dir) as T;
  if (Array.isArray(value)) return value.map((item) => withPluginDir(item, dir)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, withPluginDir(item, dir)]),
    ) as T;
  }
  return value;
}

function entries(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((name) => !name.startsWith('.'))
      .sort();
  } catch {
    return [];
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
