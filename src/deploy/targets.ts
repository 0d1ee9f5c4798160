/**
 * Deploy targets. `local` is this machine and needs no configuration. Any other target is a
 * `[deploy.targets.<name>]` entry and a remote lifecycle operation: spec (Process lifecycle,
 * TOOLS-29) says those also need enabled deploy configuration, so without `[deploy] enabled = true`
 * they are refused before anything runs.
 * @module
 */
import { join, posix } from 'node:path';
import type { Config } from '../config/schema';
import { SvcError } from '../errors';

export interface Target {
  name: string;
  local: boolean;
  /** Argv prefix that runs a command there (empty for local). */
  prefix: string[];
  svcCommand: string[];
  /** Address the service listens on there. */
  listenHost: string;
  /** Address we reach it at. */
  host: string;
  workspace: string;
  dataDirFor(name: string): string;
}

export const LOCAL_TARGET = 'local';

export function resolveTarget(
  config: Config,
  name: string,
  here: { workspace: string; dataDir: string },
): Target {
  if (name === LOCAL_TARGET) {
    return {
      name,
      local: true,
      prefix: [],
      svcCommand: [],
      listenHost: '127.0.0.1',
      host: '127.0.0.1',
      workspace: here.workspace,
      dataDirFor: (agent) => join(here.dataDir, 'deploy', agent, 'data'),
    };
  }
  if (!config.deploy.enabled) {
    throw new SvcError(
      'forbidden',
      `target: "${name}" is a remote deploy target, and remote lifecycle operations need enabled deploy configuration: set [deploy] enabled = true and describe the target in [deploy.targets.${name}] (or use target "local")`,
      { details: { rule: 'TOOLS-29', target: name } },
    );
  }
  const entry = config.deploy.targets[name];
  if (!entry) {
    const known = Object.keys(config.deploy.targets);
    throw new SvcError(
      'invalid_input',
      `target: no deploy target "${name}"; ${known.length ? `configured: ${known.join(', ')}, or local` : 'add [deploy.targets.<name>] with command and host, or use local'}`,
    );
  }
  const workspace = entry.workspace ?? here.workspace;
  const base = entry.data_dir ?? posix.join(workspace, '.svc', 'deploy');
  return {
    name,
    local: false,
    prefix: entry.command,
    svcCommand: entry.svc_command,
    listenHost: entry.listen_host,
    host: entry.host,
    workspace,
    dataDirFor: (agent) => posix.join(base, agent),
  };
}
