/**
 * The environment of every command svc starts, sandboxed or not (issue 15, item 2; like Codex's
 * shell environment policy). A command inherits only:
 *
 * 1. the documented allowlist (`ENV_ALLOWLIST`: PATH, HOME, locale, terminal, toolchain homes,
 *    proxies…) and the names or `*` patterns of `options.shell_env.include`;
 * 2. minus anything that looks like a secret (`secretReason`): a name matching `*_KEY`,
 *    `*_TOKEN`, `*SECRET*`, `*PASSWORD*`…, a value that is a URL with credentials, every variable
 *    svc reads provider credentials from, and every value the redactor knows as a secret;
 * 3. plus `options.shell_env.set`, exactly as given (the way to pass one secret on purpose).
 *
 * Names only ever leave this module (status, logs): never values.
 * @module
 */

export interface ShellEnvPolicy {
  include: readonly string[];
  set: Readonly<Record<string, string>>;
}

export interface ScrubOptions {
  /** Variables svc reads provider credentials from (the provider catalog's api_key_env). */
  credentialNames?: ReadonlySet<string>;
  /** True for a value the redactor knows as a secret (config interpolations, keys). */
  isSecretValue?: (value: string) => boolean;
}

export interface ScrubbedEnv {
  env: Record<string, string>;
  /** Names that would have been inherited but look secret (sorted). */
  dropped: string[];
}

/** Inherited by name (patterns end in `*`). Documented in docs/sandbox.md. */
// biome-ignore format: a packed table reads better
export const ENV_ALLOWLIST: readonly string[] = [
  'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'LC_*', 'TZ', 'TMPDIR',
  'TERM', 'COLORTERM', 'NO_COLOR', 'FORCE_COLOR', 'CLICOLOR', 'COLUMNS', 'LINES',
  'XDG_CONFIG_HOME', 'XDG_CACHE_HOME', 'XDG_DATA_HOME', 'XDG_STATE_HOME', 'XDG_CONFIG_DIRS', 'XDG_DATA_DIRS',
  'GOPATH', 'GOROOT', 'GOCACHE', 'GOMODCACHE', 'GOFLAGS', 'CARGO_HOME', 'RUSTUP_HOME', 'JAVA_HOME',
  'NVM_DIR', 'NVM_BIN', 'VOLTA_HOME', 'PNPM_HOME', 'BUN_INSTALL', 'DENO_DIR', 'PYENV_ROOT',
  'VIRTUAL_ENV', 'CONDA_PREFIX', 'GEM_HOME', 'GEM_PATH', 'RBENV_ROOT', 'DOTNET_ROOT', 'ANDROID_HOME',
  'http_proxy', 'https_proxy', 'no_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'ALL_PROXY',
  'SSL_CERT_FILE', 'SSL_CERT_DIR', 'NODE_EXTRA_CA_CERTS', 'REQUESTS_CA_BUNDLE', 'CI',
];

/**
 * Cloud and tool credentials svc (or the tools it drives) reads, on top of the provider
 * catalog's names: never passed on, whatever the allowlist says.
 */
// biome-ignore format: a packed table reads better
export const CREDENTIAL_ENV: readonly string[] = [
  'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_BEARER_TOKEN_BEDROCK',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN', 'AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI', 'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_SHARED_CREDENTIALS_FILE', 'SVC_AWS_ACCESS_KEY_ID', 'SVC_AWS_SECRET_ACCESS_KEY',
  'AZURE_CLIENT_SECRET', 'AZURE_CLIENT_CERTIFICATE_PATH', 'AZURE_FEDERATED_TOKEN_FILE', 'IDENTITY_HEADER',
  'GOOGLE_APPLICATION_CREDENTIALS', 'CLOUDSDK_CONFIG', 'CLAUDE_CODE_OAUTH_TOKEN', 'CODEX_HOME',
  'SVC_HTTP_TOKEN', 'SVC_MCP_TOKEN', 'SSH_AUTH_SOCK', 'GPG_AGENT_INFO',
];

/** Variables bash sets itself or that only describe the shell: reading them reveals nothing. */
// biome-ignore format: a packed table reads better
export const SHELL_VARIABLES: readonly string[] = [
  'PWD', 'OLDPWD', 'RANDOM', 'SRANDOM', 'LINENO', 'SECONDS', 'EPOCHSECONDS', 'EPOCHREALTIME', 'BASHPID',
  'BASH', 'BASH_*', 'IFS', 'PPID', 'UID', 'EUID', 'GROUPS', 'HOSTNAME', 'HOSTTYPE', 'OSTYPE', 'MACHTYPE',
  'SHLVL', 'PIPESTATUS', 'FUNCNAME', 'REPLY', 'OPTARG', 'OPTIND', 'OPTERR', 'PS1', 'PS2', 'PS4', 'DIRSTACK',
];

/** What svc itself sets for every command (src/sandbox/spawn.ts). */
// biome-ignore format: a packed table reads better
export const SVC_VARIABLES: readonly string[] = [
  'SVC', 'AGENT', 'SVC_SESSION_ID', 'SVC_SANDBOX', 'PAGER', 'GIT_PAGER', 'GIT_TERMINAL_PROMPT', 'GIT_EDITOR',
  'SVC_HOOK_EVENT', 'SVC_PACK', 'SVC_WORKSPACE', 'SVC_EVENT_ID', 'SVC_RUN_ID', 'SVC_TOOL',
];

const SECRET_NAME: readonly [RegExp, string][] = [
  [/_KEY$|_KEYS$|^KEY$|APIKEY|API_KEY|PRIVATE_KEY/i, 'a key (*_KEY)'],
  [/_TOKEN$|^TOKEN$|_TOKEN_|TOKEN_FILE$|AUTHTOKEN/i, 'a token (*_TOKEN)'],
  [/SECRET/i, 'a secret (*SECRET*)'],
  [/PASSWORD|PASSWD|_PASS$|_PWD$/i, 'a password (*PASSWORD*)'],
  [/CREDENTIAL|_AUTH$|COOKIE|SESSION_ID$/i, 'a credential'],
];

/** A URL with a user or password before the host, or a secret in its query. */
const URL_WITH_CREDENTIALS =
  /^[a-z][a-z0-9+.-]*:\/\/[^/?#\s]*@|[?&](password|passwd|token|secret|key|access_token|api_key)=/i;

/** Why a variable must not reach a command, or undefined when it may. */
export function secretReason(
  name: string,
  value: string | undefined,
  options: ScrubOptions = {},
): string | undefined {
  if (options.credentialNames?.has(name) || CREDENTIAL_ENV.includes(name)) {
    return 'svc reads provider or cloud credentials from it';
  }
  if (SVC_VARIABLES.includes(name)) return undefined;
  for (const [pattern, what] of SECRET_NAME) if (pattern.test(name)) return `its name says it holds ${what}`;
  if (value !== undefined && URL_WITH_CREDENTIALS.test(value)) return 'its value is a URL with credentials';
  if (value !== undefined && value !== '' && options.isSecretValue?.(value))
    return 'its value is a known secret';
  return undefined;
}

/** Does `name` match one of the names or `*` patterns? */
export function matchesName(name: string, patterns: readonly string[]): boolean {
  return patterns.some((p) =>
    p.includes('*') ? new RegExp(`^${p.split('*').map(escapeRegExp).join('.*')}$`).test(name) : p === name,
  );
}

/** Inherited by name (before the secret rules): the allowlist or `include`. */
export function inheritedByName(name: string, policy: ShellEnvPolicy): boolean {
  return matchesName(name, ENV_ALLOWLIST) || matchesName(name, policy.include);
}

/**
 * May a command see this variable's value without asking? Used by bash analysis for `$VAR`:
 * variables the scrubbed environment passes (or that bash itself sets) are fine, anything else
 * may be a secret the command reads out of svc's own environment when nothing scrubs it.
 */
export function visibleVariable(name: string, policy: ShellEnvPolicy): boolean {
  if (/^([0-9]+|[@*#?$!_-])$/.test(name)) return true;
  if (matchesName(name, SHELL_VARIABLES) || SVC_VARIABLES.includes(name)) return true;
  if (Object.hasOwn(policy.set, name)) return true;
  return inheritedByName(name, policy) && secretReason(name, undefined) === undefined;
}

export function scrubEnv(
  source: Readonly<Record<string, string | undefined>>,
  policy: ShellEnvPolicy,
  options: ScrubOptions = {},
): ScrubbedEnv {
  const env: Record<string, string> = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined || !inheritedByName(name, policy)) continue;
    if (secretReason(name, value, options)) dropped.push(name);
    else env[name] = value;
  }
  for (const [name, value] of Object.entries(policy.set)) env[name] = value;
  return { env, dropped: dropped.sort() };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
}
