/**
 * Removed names and migration aliases.
 * spec, Native agent tools: removed multiplex tools are never registered, there is no
 * `submit_plan`, and older verb-specific config tool names are migration aliases of `config`,
 * rejected in explicit allowlists.
 * @module
 */

export const REMOVED_TOOL_NAMES = [
  'contract_obligations',
  'fleet_policy',
  'workflow_checkpoint',
  'daemon_control',
  'autopilot_control',
  'memory_projection_update',
  'submit_plan',
] as const;

/** Old verb-specific config tool name → the `config` action it stands for. */
export const CONFIG_TOOL_ALIASES: Record<
  string,
  'read' | 'set' | 'unset' | 'reload' | 'validate' | 'refresh'
> = {
  config_read: 'read',
  config_get: 'read',
  read_config: 'read',
  config_set: 'set',
  set_config: 'set',
  config_unset: 'unset',
  unset_config: 'unset',
  config_reload: 'reload',
  reload_config: 'reload',
  config_validate: 'validate',
  validate_config: 'validate',
  config_refresh: 'refresh',
  refresh_config: 'refresh',
};

export function isConfigAlias(name: string): boolean {
  return Object.hasOwn(CONFIG_TOOL_ALIASES, name);
}

/** The canonical tool name for a name that may be a migration alias. */
export function canonicalToolName(name: string): string {
  return isConfigAlias(name) ? 'config' : name;
}

/** An explicit allowlist naming an alias is a config error that names `config`. */
export function allowlistProblems(list: readonly string[], key: string): string[] {
  return list
    .filter(isConfigAlias)
    .map(
      (name) =>
        `${key}: "${name}" is an old config tool name and is not accepted in an allowlist; use "config" (action "${CONFIG_TOOL_ALIASES[name]}")`,
    );
}
