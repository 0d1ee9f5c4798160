/**
 * What a plugin's approval shows of what it will run: each MCP server's type, command line, env
 * keys (never values), header names, url and cwd, each agent kind's tools and prompt; for an
 * update, what changed (servers and agent kinds added, removed, changed, with the old and new
 * command lines). `command` is the same as one text (the TUI's permission dialog shows it whole).
 * Every string is printable (./../util/printable.ts): a manifest cannot hide a command behind
 * terminal escapes.
 * @module
 */
import { printable } from '../util/terminal-text';
import { type PluginManifest, withPluginDir } from './manifest';

type McpBlock = PluginManifest['mcp'][string];
type AgentBlock = PluginManifest['agents'][string];

export interface ServerView {
  type: 'stdio' | 'http' | 'sse';
  command_line?: string;
  command?: string;
  args?: string[];
  env_keys?: string[];
  cwd?: string;
  url?: string;
  header_names?: string[];
  disabled?: boolean;
}

export interface AgentView {
  description?: string;
  model?: string;
  mode?: string;
  read_only?: boolean;
  max_steps?: number;
  tools: unknown;
  prompt_chars: number;
  prompt_first_line?: string;
}

interface Changes {
  added: string[];
  removed: string[];
  changed: { id: string; fields: string[]; before?: string; after?: string }[];
}

/** The install approval's view of what runs (`dir`: the plugin's folder once installed). */
export function runDetails(manifest: PluginManifest, dir: string) {
  const servers = describeServers(manifest, dir);
  const lines = Object.entries(servers).map(([id, view]) => `mcp ${printable(id)}: ${runs(view)}`);
  return {
    ...(lines.length ? { command: lines.join('\n') } : {}),
    mcp_servers: servers,
    agents: describeAgents(manifest),
  };
}

/** The update approval's view: what runs after it, and what changed from the installed plugin. */
export function updateDetails(before: PluginManifest | undefined, after: PluginManifest, dir: string) {
  const now = runDetails(after, dir);
  if (!before) return { ...now, changes: 'unknown: the installed manifest could not be read' };
  const mcp = compare(describeServers(before, dir), now.mcp_servers, runs);
  const agents = compare(describeAgents(before), now.agents);
  const lines = [
    ...mcp.added.map((id) => `+ mcp ${printable(id)}: ${runs(now.mcp_servers[id])}`),
    ...mcp.changed.map((c) => `~ mcp ${printable(c.id)}: ${c.before} → ${c.after}`),
    ...mcp.removed.map((id) => `- mcp ${printable(id)}`),
  ];
  return {
    ...now,
    ...(lines.length ? { command: lines.join('\n') } : {}),
    changes: { mcp_servers: mcp, agents },
  };
}

function describeServers(manifest: PluginManifest, dir: string): Record<string, ServerView> {
  const out: Record<string, ServerView> = {};
  for (const id of Object.keys(manifest.mcp).sort())
    out[id] = describeServer(withPluginDir(manifest.mcp[id], dir));
  return out;
}

function describeServer(block: McpBlock): ServerView {
  const type = block.type ?? (block.url ? 'http' : 'stdio');
  const view: ServerView = { type };
  if (block.command !== undefined) {
    view.command = printable(block.command);
    view.args = (block.args ?? []).map((arg) => printable(arg));
    view.command_line = [block.command, ...(block.args ?? [])].map(quote).join(' ');
  }
  if (block.env)
    view.env_keys = Object.keys(block.env)
      .sort()
      .map((key) => printable(key));
  if (block.cwd !== undefined) view.cwd = printable(block.cwd);
  if (block.url !== undefined) view.url = printable(block.url);
  if (block.headers)
    view.header_names = Object.keys(block.headers)
      .sort()
      .map((key) => printable(key));
  if (block.disabled) view.disabled = true;
  return view;
}

function describeAgents(manifest: PluginManifest): Record<string, AgentView> {
  const out: Record<string, AgentView> = {};
  for (const id of Object.keys(manifest.agents).sort()) out[id] = describeAgent(manifest.agents[id]);
  return out;
}

function describeAgent(block: AgentBlock): AgentView {
  const prompt = block.prompt ?? '';
  const first = prompt.trim().split('\n')[0] ?? '';
  return {
    ...(block.description !== undefined ? { description: printable(block.description, 200) } : {}),
    ...(block.model !== undefined ? { model: printable(block.model) } : {}),
    ...(block.mode !== undefined ? { mode: block.mode } : {}),
    ...(block.read_only !== undefined ? { read_only: block.read_only } : {}),
    ...(block.max_steps !== undefined ? { max_steps: block.max_steps } : {}),
    tools: block.tools ?? 'default',
    prompt_chars: prompt.length,
    ...(first ? { prompt_first_line: printable(first, 200) } : {}),
  };
}

/** What runs: the command line of a stdio server, the url of another. */
function runs(view: ServerView): string {
  const what =
    view.type === 'stdio' ? (view.command_line ?? '(no command)') : `${view.type} ${view.url ?? '(no url)'}`;
  const env = view.env_keys?.length ? ` (env ${view.env_keys.join(', ')})` : '';
  return `${what}${env}${view.disabled ? ' (disabled)' : ''}`;
}

function compare<T extends object>(
  before: Record<string, T>,
  after: Record<string, T>,
  show?: (view: T) => string,
): Changes {
  const changes: Changes = { added: [], removed: [], changed: [] };
  for (const id of Object.keys(after)) if (!(id in before)) changes.added.push(id);
  for (const id of Object.keys(before)) if (!(id in after)) changes.removed.push(id);
  for (const id of Object.keys(after)) {
    if (!(id in before)) continue;
    const old = before[id] as Record<string, unknown>;
    const now = after[id] as Record<string, unknown>;
    const fields = [...new Set([...Object.keys(old), ...Object.keys(now)])]
      .filter((key) => JSON.stringify(old[key]) !== JSON.stringify(now[key]))
      .sort();
    if (!fields.length) continue;
    changes.changed.push({
      id,
      fields,
      ...(show ? { before: show(before[id]), after: show(after[id]) } : {}),
    });
  }
  return changes;
}

/** A word of a command line as a shell reads it: bare when plain, single-quoted otherwise. */
function quote(word: string): string {
  const shown = printable(word);
  if (/^[\w@%+=:,./-]+$/.test(shown)) return shown;
  return `'${shown.replace(/'/g, `'\\''`)}'`;
}
