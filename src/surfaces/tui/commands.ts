/**
 * The slash commands. Readouts name the tool they read (the same tool as their CLI/HTTP twin)
 * and are called by name through the client, so a tool that lands later works with no TUI change;
 * until then the view says it is not available.
 * @module
 */

export type CommandKind = 'readout' | 'dialog' | 'action';

export interface SlashCommand {
  name: string;
  aliases?: string[];
  description: string;
  /** Argument hint shown in /help and the palette. */
  args?: string;
  kind: CommandKind;
  /** Readouts: native tool names to try, in order. */
  tools?: string[];
  /** Readouts: the CLI twin, used to find the tool when its native name differs. */
  cli?: string;
  /** Readouts: input built from the argument text and the active session. */
  input?: (args: string, sessionId: string | undefined) => Record<string, unknown>;
}

const withSession = (_args: string, sessionId: string | undefined) =>
  sessionId ? { session_id: sessionId } : {};

export const COMMANDS: SlashCommand[] = [
  { name: 'help', description: 'keys and slash commands', kind: 'dialog' },
  { name: 'new', description: 'start a new session', kind: 'action' },
  { name: 'why', description: 'details of the latest failure: what failed, the next step', kind: 'dialog' },
  { name: 'sessions', description: 'list, switch to, or start sessions', kind: 'dialog' },
  {
    name: 'model',
    args: '[<provider>/<model>]',
    description: 'pick the model for this session, or switch to one by name',
    kind: 'dialog',
    tools: ['list_models', 'set_session_model'],
  },
  {
    name: 'model-selection',
    description: 'which model the next turn uses, and why',
    kind: 'readout',
    tools: ['get_model_selection'],
    cli: 'config show-model-selection',
    input: withSession,
  },
  {
    name: 'provider-status',
    description: 'providers: configured, ready, ambiguous, refreshed',
    kind: 'readout',
    tools: ['get_provider_status'],
    cli: 'config show-provider-status',
  },
  { name: 'providers', description: 'Manage Providers: status, svc auth, paste an API key', kind: 'dialog' },
  {
    name: 'config-status',
    description: 'config files, errors, warnings, data dir, database',
    kind: 'readout',
    tools: ['config_status'],
    cli: 'config show-config-status',
  },
  {
    name: 'tools',
    description: 'every tool and where it stands in the funnel for this session',
    kind: 'readout',
    tools: ['list_tool_capabilities'],
    cli: 'tools',
    input: withSession,
  },
  {
    name: 'capabilities',
    description: 'what this build and process can do',
    kind: 'readout',
    tools: ['capabilities'],
    cli: 'capabilities',
  },
  {
    name: 'agent_kinds',
    description: 'the agent kinds (build, plan, …)',
    kind: 'readout',
    tools: ['list_agent_kinds'],
    cli: 'agent-kinds',
  },
  {
    name: 'enqueue',
    args: '<prompt>',
    description: 'queue a prompt to run after the active run (also ctrl+enter)',
    kind: 'action',
    tools: ['queue_enqueue'],
  },
  {
    name: 'approve',
    description: 'approve the staged plan (planning → execute)',
    kind: 'action',
    tools: ['approve_plan'],
  },
  {
    name: 'pack',
    description: 'operating pack picker for this session',
    kind: 'dialog',
    tools: ['session_list_packs', 'session_set_pack', 'session_clear_pack', 'get_operating_mode'],
  },
  {
    name: 'cognition',
    args: '[<zone>]',
    description: 'operator cognition readout',
    kind: 'readout',
    tools: ['operator_cognition_readout'],
    cli: 'stigmergy cognition',
    input: (args) => (args.trim() ? { zone: args.trim() } : {}),
  },
  {
    name: 'multiplayer_dashboard',
    aliases: ['multiplayer-coordination-dashboard', 'multiplayer_coordination_dashboard'],
    description: 'multiplayer coordination dashboard (r refreshes)',
    kind: 'dialog',
    tools: ['get_multiplayer_coordination_dashboard'],
  },
  {
    name: 'compact',
    description: 'summarize older turns to free context (during a run: before its next step)',
    kind: 'action',
    tools: ['summarize_session'],
  },
  {
    name: 'undo',
    description: 'restore a checkpoint (one is taken before each prompt)',
    kind: 'dialog',
    tools: ['checkpoint_list', 'checkpoint_restore'],
  },
  {
    name: 'mcp',
    description: 'MCP servers svc is connected to',
    kind: 'readout',
    tools: ['mcp_status'],
    cli: 'mcp status',
    // Report at once: servers still connecting show as such (the view refreshes with r).
    input: () => ({ wait_ms: 0 }),
  },
  { name: 'quit', aliases: ['exit'], description: 'leave svc', kind: 'action' },
];

export interface ParsedCommand {
  command: SlashCommand;
  args: string;
}

/** `/name args…` → the command; undefined when the line is not a known command. */
export function parseCommand(line: string, commands: SlashCommand[] = COMMANDS): ParsedCommand | undefined {
  const match = /^\/([A-Za-z0-9_-]+)(?:\s+([\s\S]*))?$/.exec(line.trim());
  if (!match) return undefined;
  const name = match[1];
  const command = commands.find((c) => c.name === name || c.aliases?.includes(name));
  return command ? { command, args: match[2]?.trim() ?? '' } : undefined;
}

/** Commands whose name or alias starts with the typed prefix (palette, completion). */
export function matchCommands(prefix: string, commands: SlashCommand[] = COMMANDS): SlashCommand[] {
  const p = prefix.replace(/^\//, '').toLowerCase();
  if (!p) return commands;
  const starts = commands.filter((c) => c.name.startsWith(p) || c.aliases?.some((a) => a.startsWith(p)));
  const contains = commands.filter(
    (c) => !starts.includes(c) && (c.name.includes(p) || c.description.toLowerCase().includes(p)),
  );
  return [...starts, ...contains];
}
