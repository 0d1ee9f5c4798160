/**
 * What createApp checks and learns from a loaded config: tool allowlists name real tools (never
 * a migration alias), and every secret the config or the environment holds is known to the
 * redactor before anything is logged.
 * @module
 */
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import { allowlistProblems } from '../tools/core/aliases';

export { seedSecrets } from '../config/secrets';

export function checkAllowlists(config: Config) {
  const problems = [
    ...allowlistProblems(config.permissions.allowed_tools, 'permissions.allowed_tools'),
    ...Object.entries(config.agents).flatMap(([id, agent]) =>
      agent.tools?.allow ? allowlistProblems(agent.tools.allow, `agents.${id}.tools.allow`) : [],
    ),
    ...allowlistProblems(config.services.mcp.exposed_tools ?? [], 'services.mcp.exposed_tools'),
  ];
  if (problems.length)
    throw new SvcError('config_error', `config: ${problems[0]}`, { details: { problems } });
}
