/**
 * The keys of a workspace's own config (`svc.toml`, `.svc/svc.toml`) that a cloned repository
 * must not get to set without the user's trust (./trust.ts): commands svc would run, permission
 * and sandbox loosening, and endpoints off this machine that would receive svc's credentials,
 * prompts or data. Loopback endpoints stay allowed (local model servers, test fakes).
 * @module
 */

import { maskUrlSecrets } from '../redact';
import { isLoopbackUrl } from '../util/loopback';
import { isTable } from './config-tree';

/**
 * The default of `options.search.memory_limit_mb` and `options.git.memory_limit_mb`
 * (schema/options.ts): above it is a loosening.
 */
const CHILD_MEMORY_DEFAULT_MB = 2048;

export type RiskyKind = 'command' | 'permission' | 'endpoint';

export interface RiskyKey {
  /** The dotted key as written, e.g. `mcp.build.command`. */
  key: string;
  kind: RiskyKind;
  /** What it names: the command line, the URL or the value (as written, before `${ENV}`). */
  detail: string;
  /** The path removed when the key is dropped: a whole block when the workspace defines it. */
  drop: string[];
  /** The file that sets it. */
  file?: string;
}

export { isLoopbackUrl };

type Tree = Record<string, unknown>;

const table = (v: unknown): Tree => (isTable(v) ? v : {});
const blocks = (v: unknown): [string, Tree][] =>
  Object.entries(table(v)).filter((e): e is [string, Tree] => isTable(e[1]));
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x) => typeof x === 'string') : []);
const nonEmpty = (v: unknown): boolean => Array.isArray(v) && v.length > 0;

/** A command line as one string: argv words, quoted when they hold spaces. */
function commandLine(command: unknown, args: unknown): string {
  // Not masked: the text is the workspace's own, before `${ENV}` (a mask hid a payload behind
  // `--token`, found by probing).
  const words = [...(typeof command === 'string' ? [command] : strings(command)), ...strings(args)];
  return words.map((w) => (/[\s"']/.test(w) || w === '' ? JSON.stringify(w) : w)).join(' ');
}

/** Values shown as given; env tables by their names only (the values may be secrets). */
function shown(value: unknown): string {
  if (typeof value === 'string') return value;
  if (isTable(value)) return `${Object.keys(value).join(', ')} (names only)`;
  return JSON.stringify(value);
}

/**
 * The risky keys of one workspace file's tree. `raw`, the same tree before `${ENV}` was
 * interpolated, gives the text shown (a secret an env reference pulled in is never listed); `tree`
 * (interpolated) decides whether a URL is loopback.
 */
export function riskyWorkspaceKeys(tree: Tree, raw: Tree = tree): RiskyKey[] {
  const found: RiskyKey[] = [];
  const add = (path: string[], kind: RiskyKind, detail?: string, drop = path) => {
    let value: unknown = raw;
    for (const part of path) value = table(value)[part];
    // A password or token in a URL (a store URL, an args flag) is never listed.
    found.push({ key: path.join('.'), kind, detail: maskUrlSecrets(detail ?? shown(value)), drop });
  };
  commandKeys(tree, raw, add);
  permissionKeys(tree, add);
  endpointKeys(tree, add);
  return found;
}

type Add = (path: string[], kind: RiskyKind, detail?: string, drop?: string[]) => void;

function commandKeys(tree: Tree, raw: Tree, add: Add) {
  // A server the workspace defines (its command) is dropped whole; one it only adjusts (args, env,
  // cwd of a server the user's config defines) loses those keys.
  for (const section of ['mcp', 'lsp'] as const) {
    for (const [id, server] of blocks(tree[section])) {
      const rawServer = table(table(raw[section])[id]);
      if (typeof server.command === 'string')
        add([section, id, 'command'], 'command', commandLine(rawServer.command, rawServer.args), [
          section,
          id,
        ]);
      else
        for (const k of ['args', 'env', 'cwd']) if (server[k] !== undefined) add([section, id, k], 'command');
    }
  }
  for (const [id, provider] of blocks(tree.providers)) {
    const rawProvider = table(table(raw.providers)[id]);
    if (provider.command !== undefined)
      add(['providers', id, 'command'], 'command', commandLine(rawProvider.command, rawProvider.args));
    if (provider.args !== undefined) add(['providers', id, 'args'], 'command');
  }
  for (const [id, obligation] of blocks(tree.contracts))
    if (typeof obligation.command === 'string')
      add(['contracts', id, 'command'], 'command', undefined, ['contracts', id]);
  const deploy = table(tree.deploy);
  if (deploy.command !== undefined) add(['deploy', 'command'], 'command', commandLine(deploy.command, []));
  for (const [id, target] of blocks(deploy.targets)) {
    if (target.command !== undefined || target.svc_command !== undefined)
      add(
        ['deploy', 'targets', id, 'command'],
        'command',
        commandLine(target.command, target.svc_command ?? ['svc']),
        ['deploy', 'targets', id],
      );
  }
  // A vendor CLI's program and arguments (`[auth.claude] command`).
  for (const [platform, auth] of blocks(tree.auth)) {
    const rawAuth = table(table(raw.auth)[platform]);
    if (auth.command !== undefined)
      add(['auth', platform, 'command'], 'command', commandLine(rawAuth.command, rawAuth.args));
    if (auth.args !== undefined) add(['auth', platform, 'args'], 'command');
  }
  const options = table(tree.options);
  // Variables every command gets (`BASH_ENV` runs a script in each bash; `include` passes svc's
  // own variables, keys among them, to commands).
  const shellEnv = table(options.shell_env);
  for (const k of ['set', 'include'])
    if (
      shellEnv[k] !== undefined &&
      (k === 'include' ? nonEmpty(shellEnv[k]) : Object.keys(table(shellEnv[k])).length)
    )
      add(['options', 'shell_env', k], 'command');
  if (table(options.sandbox).bwrap_path !== undefined) add(['options', 'sandbox', 'bwrap_path'], 'command');
  if (options.operating_packs === true)
    add(['options', 'operating_packs'], 'command', 'true (runs the hooks of packs in the workspace)');
  for (const [id, preset] of blocks(options.operating_mode_presets))
    if (table(preset.overrides).hooks !== undefined)
      add(['options', 'operating_mode_presets', id, 'overrides', 'hooks'], 'command');
}

function permissionKeys(tree: Tree, add: Add) {
  const permissions = table(tree.permissions);
  for (const k of ['allowed_tools', 'bash_allow'])
    if (nonEmpty(permissions[k])) add(['permissions', k], 'permission');
  if (permissions.allow_outside_workspace === true)
    add(['permissions', 'allow_outside_workspace'], 'permission');
  for (const [id, server] of blocks(tree.mcp))
    if (server.trust_annotations === true) add(['mcp', id, 'trust_annotations'], 'permission');
  const options = table(tree.options);
  const sandbox = table(options.sandbox);
  if (sandbox.mode === 'off') add(['options', 'sandbox', 'mode'], 'permission');
  if (sandbox.network === 'host') add(['options', 'sandbox', 'network'], 'permission');
  for (const k of ['allow_write', 'writable_paths', 'allow_read'])
    if (nonEmpty(sandbox[k])) add(['options', 'sandbox', k], 'permission');
  // ripgrep's or git's memory limit lifted (0) or raised past the default: a repository's huge
  // ignore file, pack or diff could then take the machine's memory again.
  for (const helper of ['search', 'git']) {
    const limit = table(options[helper]).memory_limit_mb;
    if (typeof limit === 'number' && (limit === 0 || limit > CHILD_MEMORY_DEFAULT_MB))
      add(['options', helper, 'memory_limit_mb'], 'permission');
  }
  const policy = table(options.openai_compat).tool_policy;
  if (policy === 'all' || policy === 'allowed_tools')
    add(['options', 'openai_compat', 'tool_policy'], 'permission');
  const services = table(tree.services);
  for (const k of ['http', 'mcp'])
    if (table(services[k]).allow_no_auth === true) add(['services', k, 'allow_no_auth'], 'permission');
  // What an MCP client may call: a mutating tool exposed there runs without an ask (found by probing).
  if (nonEmpty(table(services.mcp).exposed_tools)) add(['services', 'mcp', 'exposed_tools'], 'permission');
}

function endpointKeys(tree: Tree, add: Add) {
  const remote = (v: unknown) => typeof v === 'string' && !isLoopbackUrl(v);
  for (const [id, provider] of blocks(tree.providers))
    if (remote(provider.base_url)) add(['providers', id, 'base_url'], 'endpoint');
  for (const [id, server] of blocks(tree.mcp)) if (remote(server.url)) add(['mcp', id, 'url'], 'endpoint');
  for (const [id, agent] of blocks(table(tree.a2a).remotes))
    if (remote(agent.url)) add(['a2a', 'remotes', id, 'url'], 'endpoint');
  const options = table(tree.options);
  if (remote(options.catalog_url)) add(['options', 'catalog_url'], 'endpoint');
  const probe = strings(table(options.local_probe).urls);
  if (probe.some((entry) => remote(entry.slice(entry.indexOf('=') + 1))))
    add(['options', 'local_probe', 'urls'], 'endpoint');
  if (remote(table(tree.telemetry).otlp_endpoint)) add(['telemetry', 'otlp_endpoint'], 'endpoint');
  for (const [id, provider] of blocks(tree.providers))
    for (const [k, v] of Object.entries(table(provider.provider_options)))
      if (
        typeof v === 'string' &&
        (/^https?:/i.test(v) ? remote(v) : HOST_PART_KEYS.has(k) && !/^[\w-]*$/.test(v))
      )
        add(['providers', id, 'provider_options', k], 'endpoint');
  const store = table(tree.store).url;
  if (typeof store === 'string' && !storeOnLoopback(store)) add(['store', 'url'], 'endpoint');
  for (const [platform, endpoints] of blocks(tree.auth))
    for (const [k, v] of Object.entries(endpoints))
      if (typeof v === 'string' && /^https?:/i.test(v) && remote(v)) add(['auth', platform, k], 'endpoint');
}

/**
 * `provider_options` that become part of a host name (`https://${resource_name}.openai.azure.com`,
 * a Vertex location, a Bedrock region): anything but letters, digits, `-` and `_` can move the
 * host (`127.0.0.1:8443/steal?` sent an Azure key elsewhere, found by probing).
 */
const HOST_PART_KEYS = new Set([
  'resource_name',
  'resourceName',
  'location',
  'region',
  'project',
  'account_id',
]);

/**
 * Whether every host a PostgreSQL URL connects to is loopback or a Unix socket: the URL's host
 * list and libpq's `host` / `hostaddr` parameters (`postgres:///db?host=192.0.2.2`).
 */
function storeOnLoopback(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const parsed = new URL(url);
  const hosts = [
    ...decodeURIComponent(parsed.host).split(','),
    ...parsed.searchParams.getAll('host').flatMap((h) => h.split(',')),
    ...parsed.searchParams.getAll('hostaddr').flatMap((h) => h.split(',')),
  ]
    .map((h) => h.trim())
    .filter(Boolean);
  return hosts.every(
    (h) =>
      h.startsWith('/') ||
      isLoopbackUrl(
        `http://${h.includes(':') && !h.startsWith('[') && h.split(':').length > 2 ? `[${h}]` : h}`,
      ),
  );
}
