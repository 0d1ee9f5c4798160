/**
 * Inspect family: what tools exist, which are in a session's effective set and, for every one
 * that is not, which funnel stage removed it and why.
 * `get_workflow_tools_status` (GET /v1/workflow-tools) and `get_primitive_tools_status`
 * (GET /v1/primitive-tools) differ only by tag.
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import { isRemoteTool } from '../mcp-client/remote-tools';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import { VERSION } from '../version';
import { type AnyTool, defineTool, type ToolTag } from './core/define-tool';
import { FUNNEL_STAGES, type FunnelEntry } from './core/funnel';
import { inputSchemaOf } from './core/input-schema';
import type { ToolHost } from './core/types';

export const funnelInput = () =>
  z.strictObject({
    session_id: sessionIdInput(
      'context-or-none',
      'Session whose mode, phase and agent narrow the set. Omit for the defaults.',
    ),
    agent: z
      .string()
      .min(1)
      .optional()
      .describe('Agent id whose [agents.<id>.tools] policy applies. Omit for the session agent.'),
    mode: z
      .enum(['build', 'plan'])
      .optional()
      .describe('Session mode to evaluate instead of the session one.'),
  });
type FunnelInput = z.output<ReturnType<typeof funnelInput>>;

export async function funnelFor(
  app: ToolHost,
  input: FunnelInput,
  defaultSession?: string,
): Promise<{ context: Record<string, unknown>; entries: FunnelEntry[] }> {
  const sessionId =
    (await resolveSession(app, input, { onMissing: 'context-or-none', context: defaultSession }))
      .session_id ?? undefined;
  const overrides: Record<string, unknown> = {};
  if (input.agent) overrides.agent = input.agent;
  if (input.mode) overrides.mode = input.mode;
  const context = await app.funnelContext(sessionId, overrides);
  // No session: report what a new session gets, and a new session's agent is build (session store).
  context.agent ??= 'build';
  return {
    context: {
      session_id: sessionId ?? null,
      mode: context.mode ?? 'build',
      phase: context.phase ?? null,
      agent: context.agent ?? null,
    },
    entries: app.funnel(context),
  };
}

async function tagStatus(app: ToolHost, tag: ToolTag, input: FunnelInput, sessionId?: string) {
  const { context, entries } = await funnelFor(app, input, sessionId);
  const rows = entries.filter((e) => e.tag === tag).sort((a, b) => a.name.localeCompare(b.name));
  return {
    tag,
    context,
    stages: FUNNEL_STAGES,
    counts: {
      defined: rows.length,
      registered: rows.filter((r) => r.registered).length,
      effective: rows.filter((r) => r.effective).length,
    },
    tools: rows,
  };
}

const renderStatus = (result: Awaited<ReturnType<typeof tagStatus>>) =>
  [
    `${result.tag} tools: ${result.counts.effective} effective / ${result.counts.registered} registered / ${result.counts.defined} defined`,
    ...result.tools.map(
      (t) =>
        `  ${t.effective ? '✓' : '✗'} ${t.name.padEnd(38)} ${t.effective ? `permission ${t.permission}` : `removed by ${t.removed_by}: ${t.reason}`}`,
    ),
  ].join('\n');

export const getWorkflowToolsStatus = defineTool({
  name: 'get_workflow_tools_status',
  family: 'inspect',
  tag: 'primitive',
  description:
    'Workflow-tagged tools (agent, spawn_agents_on_csv, …): for each, whether it is registered and in the effective set, and which funnel stage removed it otherwise.',
  input: funnelInput,
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/workflow-tools' },
    mcp: 'svc_get_workflow_tools_status',
    cli: { command: 'config show-workflow-tools', text: renderStatus },
  },
  run: async (ctx, input) => await tagStatus(ctx.app, 'workflow', input, ctx.sessionId),
});

export const getPrimitiveToolsStatus = defineTool({
  name: 'get_primitive_tools_status',
  family: 'inspect',
  tag: 'primitive',
  description:
    'Primitive-tagged tools: for each, whether it is registered and in the effective set, and which funnel stage removed it otherwise.',
  input: funnelInput,
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/primitive-tools' },
    mcp: 'svc_get_primitive_tools_status',
    cli: { command: 'config show-primitive-tools', text: renderStatus },
  },
  run: async (ctx, input) => await tagStatus(ctx.app, 'primitive', input, ctx.sessionId),
});

function surfacesOf(tool: AnyTool) {
  const http = tool.surfaces?.http;
  return {
    http: (Array.isArray(http) ? http : http ? [http] : []).map((b) => `${b.method} ${b.path}`),
    mcp: tool.surfaces?.mcp ?? null,
    cli: [tool.surfaces?.cli ?? []].flat().map((b) => `svc ${b.command}`),
  };
}

/**
 * A tool's input schema for the listing, or why it is left out: a schema that cannot be converted
 * to JSON Schema (left out of the model's tools too, agent-toolbox) must not fail the whole listing.
 */
function schemaEntry(tool: AnyTool, app: ToolHost): { input_schema: unknown; input_schema_error?: string } {
  try {
    return { input_schema: inputSchemaOf(tool) };
  } catch (error) {
    app.log.warn('tool schema left out of the listing: it cannot be converted to JSON Schema', {
      tool: tool.name,
      error,
    });
    const reason = error instanceof Error ? error.message : String(error);
    return {
      input_schema: null,
      input_schema_error: `left out: it cannot be converted to JSON Schema (${reason.slice(0, 200)})`,
    };
  }
}

/**
 * The most schema JSON one listing holds, in bytes. One MCP server may register 256 tools of up
 * to 64 KiB of schema each (remote-tools.ts): 16 MiB handed to whoever asked, a model included.
 * svc's own tools come first (about 75 KB in all), so no server crowds them out; then the servers'
 * tools in name order. Past the budget a tool is listed with `input_schema: null` and how to ask
 * for its schema alone (`tool`), which always fits.
 */
export const MAX_LISTING_SCHEMA_BYTES = 256 * 1024;

type SchemaEntry = ReturnType<typeof schemaEntry>;

/** Each tool's schema entry, within MAX_LISTING_SCHEMA_BYTES in all. */
function listingSchemas(tools: AnyTool[], app: ToolHost): Map<string, SchemaEntry> {
  const ordered = [...tools].sort(
    (a, b) => Number(isRemoteTool(a)) - Number(isRemoteTool(b)) || a.name.localeCompare(b.name),
  );
  const entries = new Map<string, SchemaEntry>();
  let spent = 0;
  let exhausted = false;
  for (const tool of ordered) {
    const entry = exhausted ? undefined : schemaEntry(tool, app);
    const bytes = entry?.input_schema ? Buffer.byteLength(JSON.stringify(entry.input_schema)) : 0;
    if (entry && spent + bytes <= MAX_LISTING_SCHEMA_BYTES) {
      spent += bytes;
      entries.set(tool.name, entry);
      continue;
    }
    // The rest go without: a listing's answer stays bounded whatever the servers register.
    exhausted = true;
    entries.set(tool.name, {
      input_schema: null,
      input_schema_error: `left out: this listing's schemas reached their ${MAX_LISTING_SCHEMA_BYTES / 1024} KiB budget; list_tool_capabilities with tool "${tool.name}" and include_schemas gives its schema`,
    });
  }
  return entries;
}

export const listToolCapabilitiesInput = () =>
  funnelInput().extend({
    include_schemas: z
      .boolean()
      .default(false)
      .describe(
        `Include each tool input JSON Schema (${MAX_LISTING_SCHEMA_BYTES / 1024} KiB of schemas in all; past that, input_schema is null: ask with tool).`,
      ),
    tool: z.string().min(1).optional().describe('Only this tool (its name as listed). Omit for all.'),
  });

export const listToolCapabilities = defineTool({
  name: 'list_tool_capabilities',
  family: 'status',
  tag: 'primitive',
  description:
    'The whole tool registry: every defined tool with its family, tag, whether it mutates, its surfaces, and where it stands in the funnel for the session.',
  input: listToolCapabilitiesInput,
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/tools' },
    mcp: 'svc_list_tool_capabilities',
    cli: {
      command: 'tools',
      text: (r: { tools: (FunnelEntry & { surfaces: unknown })[] }) =>
        r.tools
          .map(
            (t) =>
              `${t.effective ? '✓' : '✗'} ${t.name.padEnd(38)} ${t.family.padEnd(14)} ${t.effective ? '' : `(${t.removed_by}: ${t.reason})`}`,
          )
          .join('\n'),
    },
  },
  run: async (ctx, input) => {
    const { context, entries } = await funnelFor(ctx.app, input, ctx.sessionId);
    const byName = new Map(ctx.app.tools.gates().map((g) => [g.tool.name, g.tool]));
    const listed = input.tool === undefined ? entries : entries.filter((e) => e.name === input.tool);
    if (input.tool !== undefined && listed.length === 0)
      throw new SvcError('not_found', `tool: no tool "${input.tool}"; list_tool_capabilities lists them`);
    const schemas = input.include_schemas
      ? listingSchemas(
          listed.map((e) => byName.get(e.name)!),
          ctx.app,
        )
      : undefined;
    const tools = listed
      .map((entry) => {
        const tool = byName.get(entry.name)!;
        return {
          ...entry,
          description: tool.description,
          surfaces: surfacesOf(tool),
          ...schemas?.get(entry.name),
        };
      })
      .sort((a, b) => a.name.localeCompare(b.name));
    return { context, count: tools.length, tools };
  },
});

/** Flags of what is really wired in this process (spec, Events: runtime_features). */
export function runtimeFeatures(app: ToolHost): Record<string, boolean> {
  const registered = (name: string) => app.tools.get(name) !== undefined;
  const httpWired = app.runtime.surfaces.has('http');
  const api = (name: string) =>
    httpWired && registered(name) && app.tools.get(name)?.surfaces?.http !== undefined;
  const config = app.config;
  return {
    http_server: httpWired,
    mcp_server: app.runtime.surfaces.has('mcp'),
    minimal_mcp_only: app.runtime.mcpOnly,
    durable_run_store: registered('list_agent_runs'),
    multiplayer_coordination_dashboard_api: api('get_multiplayer_coordination_dashboard'),
    multiplayer_coordination_dashboard_tool: registered('get_multiplayer_coordination_dashboard'),
    operator_cognition_api: api('operator_cognition_readout'),
    operator_cognition_tool: registered('operator_cognition_readout'),
    operating_packs: registered('get_operating_mode'),
    adaptive_orchestration: registered('get_adaptive_orchestration'),
    // The follow-on service is wired in every full app; the gate is the config.
    health_followons: app.health !== undefined && config.options.health_followons.enabled,
    // All gates of health_followon.activation but the activation itself (spec, Events).
    health_followon_activation_sse: app.health?.gates().activation_event_enabled ?? false,
    length_recovery:
      config.options.length_recovery.enabled && config.options.length_recovery.max_attempts > 0,
    // Commands run inside bubblewrap now (options.sandbox: auto or bwrap, and able to run here).
    sandbox_bwrap: app.sandbox?.status().enforced ?? false,
    sandbox_status_tool: registered('sandbox_status'),
    runtime_health_tools: [
      'get_runtime_incident_status',
      'get_alerts_status',
      'get_enforcement_status',
    ].every(registered),
    openai_compat: httpWired,
    openai_compat_ledger: config.options.openai_compat !== undefined,
    edit_predictions: config.options.openai_compat?.edit_predictions.enabled ?? false,
    edit_capsules: config.options.edit_capsules,
    process_lifecycle_tools: registered('daemon_restart'),
    workspace_environment_fields: config.options.workspace_environment_fields !== undefined,
  };
}

export const runtimeFeaturesTool = defineTool({
  name: 'runtime_features',
  family: 'status',
  tag: 'primitive',
  description: 'Boolean flags for what this svc process really has wired: surfaces, readouts, gates.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: { mcp: 'svc_runtime_features', cli: { command: 'features' } },
  run: async (ctx) => ({ features: runtimeFeatures(ctx.app) }),
});

export const capabilities = defineTool({
  name: 'capabilities',
  family: 'status',
  tag: 'primitive',
  description: 'What this svc runtime can do: version, surfaces, tool counts by family and tag, features.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/capabilities' },
    mcp: 'svc_capabilities',
    cli: { command: 'capabilities' },
  },
  run: async (ctx) => {
    const { app } = ctx;
    const entries = app.funnel(await app.funnelContext(ctx.sessionId));
    const families: Record<string, { defined: number; registered: number; effective: number }> = {};
    for (const e of entries) {
      families[e.family] ??= { defined: 0, registered: 0, effective: 0 };
      const f = families[e.family];
      f.defined++;
      if (e.registered) f.registered++;
      if (e.effective) f.effective++;
    }
    return {
      product: 'svc',
      version: VERSION,
      surfaces: {
        cli: true,
        tui: true,
        http: { command: 'svc service start http', wired: app.runtime.surfaces.has('http') },
        mcp: { command: 'svc service start mcp', wired: app.runtime.surfaces.has('mcp') },
      },
      tools: {
        defined: entries.length,
        registered: entries.filter((e) => e.registered).length,
        effective: entries.filter((e) => e.effective).length,
        workflow: entries.filter((e) => e.tag === 'workflow' && e.registered).length,
        primitive: entries.filter((e) => e.tag === 'primitive' && e.registered).length,
        by_family: Object.fromEntries(Object.entries(families).sort(([a], [b]) => a.localeCompare(b))),
      },
      features: runtimeFeatures(app),
    };
  },
});
