/**
 * Deployed agents: a named agent (an agent kind, a model, a tool policy) run as a long-running
 * `svc service start http` with its own token and data dir, serving A2A (`[a2a] enabled`), and
 * recorded in `deployments`. A fleet is several named agents deployed together. The token lives
 * in the credential store (`token_ref`), never in the database or a readout.
 *
 * Targets: `local` (this machine, no config needed) or a `[deploy.targets.<name>]` entry, whose
 * command prefix (ssh …) runs svc there. TOOLS-29: anything but local needs `[deploy] enabled`.
 * @module
 */
import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { Logger } from '../log';
import type { CredentialStore } from '../providers/credential-store';
import type { Redactor } from '../redact';
import type { DeployedEndpoint } from '../remote/delegation';
import type { Clock } from '../util/ids';
import { makeDirs } from '../util/make-dirs';
import type { DeploymentRepository, DeploymentRow } from './deployment-repository';
import { isOurProcess, pidAlive, probeHealth, selfCommand, startDetached, stopProcess } from './spawn';
import { resolveTarget, type Target } from './targets';

export interface ToolPolicyInput {
  allow?: string[];
  deny?: string[];
}

export interface DeployInput {
  name: string;
  agent: string;
  model?: string;
  description?: string;
  tools?: ToolPolicyInput;
  /** Tools the deployed agent runs without a permission prompt (it runs unattended). */
  allowed_tools?: string[];
  /** Capability keywords advertised on its card (skill tags). */
  skills?: string[];
  target: string;
  fleet?: string;
}

export type DeploymentStatus = 'running' | 'stopped' | 'failed' | 'exited';
export type DeploymentHealth = 'healthy' | 'unhealthy' | 'unreachable' | 'stopped' | 'unknown';

export interface Deployment {
  name: string;
  fleet: string | null;
  target: string;
  agent: string;
  model: string | null;
  tools: ToolPolicyInput;
  skills: string[];
  url: string | null;
  pid: number | null;
  token_ref: string;
  data_dir: string;
  log_path: string;
  status: DeploymentStatus;
  health: DeploymentHealth;
  last_error: string | null;
  checked_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface DeployService {
  deploy(input: DeployInput, options?: { signal?: AbortSignal }): Promise<Deployment>;
  stop(name: string, options?: { signal?: AbortSignal }): Promise<Deployment & { stop: string }>;
  /** Stop it and forget it: row, token and (local) data dir. */
  remove(name: string): Promise<{ name: string; removed: true; stop: string }>;
  /** Probe liveness and health now, and record it. */
  status(name: string): Promise<Deployment>;
  list(options?: { fleet?: string }): Promise<Deployment[]>;
  get(name: string): Promise<Deployment | undefined>;
  /** Running deployments with their tokens, for delegation by name. */
  endpoints(): Promise<DeployedEndpoint[]>;
  /** Resolve a target name; refuses remote targets without `[deploy] enabled` (TOOLS-29). */
  target(name: string): Target;
}

export interface DeployDeps {
  /** The deployments table (SQLite or PostgreSQL, chosen by the app wiring). */
  rows: DeploymentRepository;
  clock: Clock;
  config: () => Config;
  workspace: string;
  dataDir: string;
  env: Readonly<Record<string, string | undefined>>;
  credentials: CredentialStore;
  fetch: typeof fetch;
  redactor: Redactor;
  log: Logger;
}

type Row = DeploymentRow;

/** What the factory's operations share: the deps, the table, the views and the patch. */
interface DeployContext {
  deps: DeployDeps;
  rows: DeploymentRepository;
  log: Logger;
  credentialKey(name: string): string;
  view(row: Row): Deployment;
  require(name: string): Promise<Row>;
  patch(name: string, fields: Partial<Row>): Promise<void>;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
const STOP_GRACE_MS = 8000;

export function createDeployService(deps: DeployDeps): DeployService {
  const log = deps.log.child({ component: 'deploy' });
  const scope = createHash('sha256').update(deps.dataDir).digest('hex').slice(0, 8);
  const credentialKey = (name: string) => `deploy:${scope}:${name}`;

  const { rows } = deps;
  const read = (name: string): Promise<Row | undefined> => rows.get(name);
  const view = (row: Row): Deployment => {
    const { overrides: _overrides, ...rest } = row;
    return { ...rest, tools: JSON.parse(row.tools), skills: JSON.parse(row.skills) };
  };
  const require = async (name: string): Promise<Row> => {
    const row = await read(name);
    if (!row)
      throw new SvcError('not_found', `name: no deployed agent "${name}"; see deploy_agent action list`);
    return row;
  };
  const patch = (name: string, fields: Partial<Row>) => rows.patch(name, fields, deps.clock.now());
  const context: DeployContext = { deps, rows, log, credentialKey, view, require, patch };
  const targetOf = (row: Row): Target =>
    resolveTarget(deps.config(), row.target, { workspace: deps.workspace, dataDir: deps.dataDir });

  const stopRow = async (row: Row): Promise<string> => {
    if (row.pid === null) return 'not running';
    const target = targetOf(row);
    // Pids are reused: only signal the process whose command line names this agent's data dir.
    if (target.local && !isOurProcess(row.pid, row.data_dir)) return 'gone';
    return stopProcess(row.pid, STOP_GRACE_MS);
  };

  return {
    deploy: (input, options = {}) => deployAgent(context, input, options),

    async stop(name) {
      const row = await require(name);
      const outcome = await stopRow(row);
      await patch(name, { status: 'stopped', health: 'stopped', pid: null, checked_at: deps.clock.now() });
      log.info('deployment stopped', { name, outcome });
      return { ...view(await require(name)), stop: outcome };
    },

    async remove(name) {
      const row = await require(name);
      const outcome = await stopRow(row);
      await rows.delete(name);
      deps.credentials.delete(credentialKey(name));
      if (targetOf(row).local) rmSync(join(deps.dataDir, 'deploy', name), { recursive: true, force: true });
      log.info('deployment removed', { name, outcome });
      return { name, removed: true, stop: outcome };
    },

    async status(name) {
      const row = await require(name);
      if (row.status !== 'running' || row.pid === null || row.url === null) return view(row);
      const local = targetOf(row).local;
      const alive = local ? isOurProcess(row.pid, row.data_dir) : pidAlive(row.pid);
      if (!alive) {
        await patch(name, {
          status: 'exited',
          health: 'stopped',
          pid: null,
          checked_at: deps.clock.now(),
          last_error: 'the service process is gone',
        });
        return view(await require(name));
      }
      const health = await probeHealth(row.url, deps.fetch, 3000);
      await patch(name, {
        health: health.ready ? 'healthy' : health.reachable ? 'unhealthy' : 'unreachable',
        checked_at: deps.clock.now(),
        last_error: health.error ? deps.redactor.string(health.error) : null,
      });
      return view(await require(name));
    },

    async list(options = {}) {
      return (await rows.list(options.fleet)).map(view);
    },

    get: async (name) => {
      const row = await read(name);
      return row ? view(row) : undefined;
    },

    target: (name) =>
      resolveTarget(deps.config(), name, { workspace: deps.workspace, dataDir: deps.dataDir }),

    async endpoints() {
      return (await rows.running()).map((row) => ({
        name: row.name,
        url: row.url as string,
        token: deps.credentials.get(credentialKey(row.name))?.value,
      }));
    },
  };
}

/** Deploy (or redeploy) a named agent: record it, store its token, start it and wait for it. */
async function deployAgent(
  context: DeployContext,
  input: DeployInput,
  options: { signal?: AbortSignal },
): Promise<Deployment> {
  const { deps, log, patch } = context;
  if (!NAME.test(input.name)) {
    throw new SvcError(
      'invalid_input',
      `name: "${input.name}" must be 1-63 letters, digits, - or _, starting with a letter or digit`,
    );
  }
  const config = deps.config();
  const target = resolveTarget(config, input.target, {
    workspace: deps.workspace,
    dataDir: deps.dataDir,
  });
  const existing = await context.rows.get(input.name);
  if (existing && existing.status === 'running' && existing.pid !== null && pidAlive(existing.pid)) {
    throw new SvcError(
      'conflict',
      `name: agent "${input.name}" is already deployed and running at ${existing.url}; stop it first (deploy_agent action stop)`,
    );
  }
  const dataDir = target.dataDirFor(input.name);
  const logPath = join(deps.dataDir, 'deploy', input.name, 'service.log');
  if (target.local) makeDirs(dataDir);
  const token = randomBytes(32).toString('hex');
  deps.redactor.add(token);
  const overrides = settingsFor(input);
  const argv = serviceArgv(config, target, dataDir, overrides);
  const env = { ...deps.env, SVC_HTTP_TOKEN: token, SVC_DATA_DIR: undefined, SVC_CONFIG: undefined };
  const now = deps.clock.now();
  const tokenRef = `credentials:${context.credentialKey(input.name)}`;
  const claimed = await context.rows.upsertStarting(
    {
      name: input.name,
      fleet: input.fleet ?? null,
      target: target.name,
      agent: input.agent,
      model: input.model ?? null,
      tools: JSON.stringify(input.tools ?? {}),
      skills: JSON.stringify(input.skills ?? []),
      token_ref: tokenRef,
      data_dir: dataDir,
      overrides: JSON.stringify(overrides),
      log_path: logPath,
    },
    now,
    now - config.deploy.ready_timeout_seconds * 1000,
  );
  if (!claimed)
    throw new SvcError(
      'conflict',
      `name: agent "${input.name}" is being deployed right now by another call; wait for it, then check deploy_agent action status`,
    );
  deps.credentials.set(context.credentialKey(input.name), {
    kind: 'bearer',
    value: token,
    account: input.name,
    stored_by: 'svc deploy_agent',
    stored_at: new Date(now).toISOString(),
  });
  log.info('deploy start', { name: input.name, target: target.name, agent: input.agent });
  try {
    const started = await startDetached({
      argv,
      env,
      cwd: target.local ? deps.workspace : process.cwd(),
      logPath,
      readyTimeoutMs: config.deploy.ready_timeout_seconds * 1000,
      fetch: deps.fetch,
      signal: options.signal,
      publicUrl: target.local ? undefined : (listening) => withHost(listening, target.host),
      redact: deps.redactor.string,
    });
    await patch(input.name, {
      url: started.url,
      pid: started.pid,
      status: 'running',
      health: 'healthy',
      last_error: null,
      checked_at: deps.clock.now(),
    });
    log.info('deployed', { name: input.name, url: started.url, pid: started.pid });
  } catch (error) {
    const message = deps.redactor.string(SvcError.is(error) ? error.message : String(error));
    await patch(input.name, { status: 'failed', health: 'unreachable', last_error: message.slice(0, 2000) });
    throw error;
  }
  return context.view(await context.require(input.name));
}

/** The command line of a deployed agent's `svc service start http` (local: this svc; else the target's). */
function serviceArgv(config: Config, target: Target, dataDir: string, overrides: string[]): string[] {
  return [
    ...(target.local ? (config.deploy.command ?? selfCommand()) : [...target.prefix, ...target.svcCommand]),
    '--cwd',
    target.workspace,
    '--data-dir',
    dataDir,
    ...overrides.flatMap((setting) => ['-c', setting]),
    'service',
    'start',
    'http',
    '--host',
    target.listenHost,
    '--port',
    '0',
  ];
}

/** The `-c key=value` settings of a deployed agent: serve A2A with this agent kind and policy. */
export function settingsFor(input: DeployInput): string[] {
  const settings: string[] = [
    'a2a.enabled=true',
    `a2a.name=${tomlValue(input.name)}`,
    `a2a.agent=${tomlValue(input.agent)}`,
  ];
  if (input.description) settings.push(`a2a.description=${tomlValue(input.description)}`);
  if (input.model) settings.push(`a2a.model=${tomlValue(input.model)}`);
  if (input.skills?.length) {
    settings.push(
      `a2a.skills=${tomlValue([{ id: input.name, name: input.name, description: input.description ?? `${input.agent} agent ${input.name}`, tags: input.skills }])}`,
    );
  }
  if (input.tools?.allow) settings.push(`agents.${input.agent}.tools.allow=${tomlValue(input.tools.allow)}`);
  if (input.tools?.deny) settings.push(`agents.${input.agent}.tools.deny=${tomlValue(input.tools.deny)}`);
  if (input.allowed_tools?.length)
    settings.push(`permissions.allowed_tools=${tomlValue(input.allowed_tools)}`);
  return settings;
}

/** A TOML inline value (what `-c key=value` parses). */
export function tomlValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map(tomlValue).join(', ')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{ ${entries.map(([k, v]) => `${/^[A-Za-z0-9_-]+$/.test(k) ? k : JSON.stringify(k)} = ${tomlValue(v)}`).join(', ')} }`;
  }
  throw new SvcError('invalid_input', `cannot write ${String(value)} as a TOML value`);
}

function withHost(url: string, host: string): string {
  const parsed = new URL(url);
  parsed.hostname = host;
  return parsed.origin;
}
