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
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, normalize, relative } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { agentSchema, mcpServerSchema } from '../config/schema';
import { SvcError } from '../errors';
import { lazy } from '../util/lazy';
import { printable } from '../util/terminal-text';

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
  const realDir = realpathSync(dir);
  insidePlugin(realDir, MANIFEST_FILE);
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
    if (isDirectory(candidate)) {
      insidePlugin(realDir, relative(dir, candidate));
      dirs[kind] = candidate;
    } else if (manifest[kind])
      throw new SvcError(
        'invalid_input',
        `${MANIFEST_FILE}: ${kind}: "${manifest[kind]}" is not a directory of the plugin`,
      );
  }
  // The names listed below must not disclose what a symlink out of the plugin points to.
  const listed = (kind: keyof LoadedManifest['dirs']) => {
    const at = dirs[kind];
    if (!at) return [];
    const names = entries(at);
    for (const name of names) insidePlugin(realDir, relative(dir, join(at, name)));
    return names;
  };
  return {
    manifest,
    dirs,
    summary: {
      mcp_servers: Object.keys(manifest.mcp).sort(),
      agents: Object.keys(manifest.agents).sort(),
      packs: listed('packs').filter((name) => existsSync(join(dirs.packs as string, name, 'pack.toml'))),
      recipes: listed('recipes').filter((name) => isFile(join(dirs.recipes as string, name))),
      commands: listed('commands')
        .filter((name) => name.endsWith('.md'))
        .map((name) => name.slice(0, -3)),
    },
  };
}

/** Whether `path` is `root` or inside it (both absolute; compare real paths for symlinks). */
export function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** A piece of the plugin (`rel` from its root) must really be inside it, not a symlink out. */
function insidePlugin(realDir: string, rel: string): void {
  let real: string;
  try {
    real = realpathSync(join(realDir, rel));
  } catch {
    return; // nothing there (a piece that does not exist is reported where it is needed)
  }
  if (!within(realDir, real)) {
    throw new SvcError(
      'invalid_input',
      `${printable(rel, 200)}: a symlink that leaves the plugin; a plugin's files and folders must stay inside it`,
    );
  }
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
