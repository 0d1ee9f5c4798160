/**
 * Which tools the MCP server exposes, and the start-up checks on that list.
 *
 * spec, `[services.mcp]`: only names listed in `services.mcp.exposed_tools` are exposed, and each
 * must be the `mcp` binding of a defined tool. spec, Operating mode surfaces: start-up fails when
 * `svc_get_operating_mode` is listed but `options.operating_packs` is false, there is no
 * coordinator, or the coordinator lacks operating-mode parity.
 *
 * The operating-mode contract, with the packs domain (`src/packs/`, `src/tools/packs.ts`):
 * - the coordinator is `app.packs`, the session pack controller; a runtime built with
 *   `createApp({ packs: false })` has none;
 * - the native tool `get_operating_mode` (`surfaces.mcp = 'svc_get_operating_mode'`) is
 *   registered: its gate is `options.operating_packs` and a controller;
 * - parity: the controller has `snapshot(sessionId)`, the read model the HTTP route and the native
 *   tool serve.
 * No controller or an unregistered tool → "no coordinator"; a controller without `snapshot` →
 * "lacks operating-mode parity".
 * @module
 */
import type { App } from '../../app';
import { SvcError } from '../../errors';
import type { AnyTool } from '../../tools/core/define-tool';

export const OPERATING_MODE_MCP_TOOL = 'svc_get_operating_mode';
/** MCP tools the contract says are served only when listed (OPMODE-42, ADAPT-35): never defaulted. */
export const EXPLICIT_ONLY_MCP_TOOLS: ReadonlySet<string> = new Set([
  OPERATING_MODE_MCP_TOOL,
  'svc_get_adaptive_orchestration',
]);
/** Families whose tools only read: readouts, status, inspection, provider status. */
const READ_ONLY_FAMILIES: ReadonlySet<string> = new Set(['status', 'inspect', 'readouts', 'providers']);
/** Read-only tools of other families: view and search the workspace, config and session reads. */
const READ_ONLY_TOOLS: ReadonlySet<string> = new Set([
  'view',
  'ls',
  'glob',
  'grep',
  'search',
  'config_status',
  'get_config_status',
  'list_sessions',
  'get_session',
  'list_agent_runs',
  'get_agent_run',
  'get_agent_run_events',
]);
export const OPERATING_MODE_NATIVE_TOOL = 'get_operating_mode';
/** The coordinator method that makes it operating-mode parity capable. */
export const OPERATING_MODE_PARITY_METHOD = 'snapshot';

/** One exposed MCP name and the tool definition behind it (registered or not). */
export interface ExposedTool {
  mcpName: string;
  tool: AnyTool;
}

/** Every defined tool with an `mcp` binding, by MCP name (gates not applied). */
export function mcpBindings(app: App): Map<string, AnyTool> {
  const out = new Map<string, AnyTool>();
  for (const { tool } of app.tools.gates()) if (tool.surfaces?.mcp) out.set(tool.surfaces.mcp, tool);
  return out;
}

/**
 * The safe default when `services.mcp.exposed_tools` is unset: every MCP-bound tool that does not
 * mutate and only reads (the families above and the listed view/search/session reads), never an
 * explicit-only tool. Sorted by MCP name.
 */
export function defaultExposedNames(app: App): string[] {
  return [...mcpBindings(app)]
    .filter(
      ([mcpName, tool]) =>
        !tool.mutates &&
        !EXPLICIT_ONLY_MCP_TOOLS.has(mcpName) &&
        (READ_ONLY_FAMILIES.has(tool.family) || READ_ONLY_TOOLS.has(tool.name)),
    )
    .map(([mcpName]) => mcpName)
    .sort();
}

/** What the server exposes: the configured list, or the read-only default when it is unset. */
export function servedTools(app: App): { exposed: ExposedTool[]; defaulted: boolean } {
  const configured = app.config.services.mcp.exposed_tools;
  if (configured) return { exposed: resolveExposedTools(app, configured), defaulted: false };
  return { exposed: resolveExposedTools(app, defaultExposedNames(app)), defaulted: true };
}

/**
 * Resolves the exposed list against the registry; throws a `config_error` (exit 2) that names the
 * offending entry and the fix.
 */
export function resolveExposedTools(app: App, names: readonly string[]): ExposedTool[] {
  const unique = [...new Set(names)];
  if (unique.includes(OPERATING_MODE_MCP_TOOL)) checkOperatingMode(app);
  const bindings = mcpBindings(app);
  const exposed: ExposedTool[] = [];
  for (const name of unique) {
    const tool = bindings.get(name);
    if (!tool) {
      const known = [...bindings.keys()].sort().join(', ');
      throw new SvcError(
        'config_error',
        `services.mcp.exposed_tools: no MCP tool named "${name}"; MCP tools are: ${known || '(none)'}`,
        { details: { key: 'services.mcp.exposed_tools', name } },
      );
    }
    exposed.push({ mcpName: name, tool });
  }
  return exposed;
}

export function checkOperatingMode(app: App): void {
  const prefix = `services.mcp.exposed_tools lists ${OPERATING_MODE_MCP_TOOL}`;
  if (app.config.options.operating_packs !== true) {
    throw new SvcError(
      'config_error',
      `${prefix} but options.operating_packs is false; set options.operating_packs = true or remove it from the list`,
      { details: { key: 'options.operating_packs', check: 'operating_packs' } },
    );
  }
  const coordinator = app.packs as unknown as Record<string, unknown> | undefined;
  if (!coordinator || !app.tools.get(OPERATING_MODE_NATIVE_TOOL)) {
    const why = !coordinator
      ? 'no session pack controller is wired in this runtime'
      : `the ${OPERATING_MODE_NATIVE_TOOL} tool is not registered`;
    throw new SvcError('config_error', `${prefix} but there is no coordinator (${why})`, {
      details: { check: 'coordinator' },
    });
  }
  if (typeof coordinator[OPERATING_MODE_PARITY_METHOD] !== 'function') {
    throw new SvcError(
      'config_error',
      `${prefix} but the coordinator lacks operating-mode parity (no ${OPERATING_MODE_PARITY_METHOD}); remove it from the list`,
      { details: { check: 'parity' } },
    );
  }
}
