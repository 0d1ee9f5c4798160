/**
 * API-key credential resolution for one provider: config `api_key` (a literal, a `${ENV}`
 * interpolation, or `keychain:<provider>`), then the provider's standard env var(s), then a key
 * stored by `svc auth` in the durable credential store. Every candidate is looked at so status can
 * say when two sources disagree (ambiguous); the first present one wins.
 * @module
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { globalConfigPath, type LoadedConfig } from '../config/load';
import { writeConfigKey } from '../config/write';
import { SvcError } from '../errors';
import type { Clock } from '../util/ids';
import { makeDirs } from '../util/make-dirs';
import type { Env } from './context';
import type { CredentialStore } from './credential-store';
import type { ProviderEntry } from './provider-entries';

export type CredentialSourceKind =
  | 'config_literal'
  | 'config_env'
  | 'keychain'
  | 'env'
  | 'credential_store'
  | 'oauth'
  | 'none';

export interface CredentialCandidate {
  kind: CredentialSourceKind;
  /** Human label without the secret: `env OPENAI_API_KEY`, `config api_key (svc.toml)`. */
  label: string;
  value?: string;
  /** Set when the candidate points somewhere but yields nothing (empty keychain entry). */
  problem?: string;
}

export interface CredentialResolution {
  value?: string;
  source?: CredentialCandidate;
  candidates: CredentialCandidate[];
  ambiguous: boolean;
  ambiguity?: string;
  /** What to do when there is no usable credential. */
  missing?: string;
}

export function keychainName(value: string | undefined): string | undefined {
  const match = value ? /^keychain:([\w.-]+)$/.exec(value) : null;
  return match ? match[1] : undefined;
}

export function resolveApiKey(
  entry: ProviderEntry,
  deps: { env: Env; loaded: LoadedConfig; store: CredentialStore },
): CredentialResolution {
  const candidates: CredentialCandidate[] = [];
  const apiKey = entry.config?.api_key;
  if (apiKey !== undefined && apiKey !== '') {
    const where = deps.loaded.provenance.get(`providers.${entry.id}.api_key`);
    const file = where?.path ?? where?.label ?? 'config';
    const keychain = keychainName(apiKey);
    if (keychain) {
      const stored = deps.store.get(keychain);
      const value = stored?.value ?? stored?.access;
      candidates.push({
        kind: 'keychain',
        label: `config api_key keychain:${keychain} (${deps.store.status().backend} store)`,
        value,
        problem: value
          ? undefined
          : `keychain:${keychain} has no stored credential; store one with: svc auth token ${keychain} --token-stdin`,
      });
    } else if (deps.loaded.interpolated.includes(apiKey)) {
      const name = Object.entries(deps.env).find(([, v]) => v === apiKey)?.[0];
      candidates.push({
        kind: 'config_env',
        label: `config api_key \${${name ?? 'ENV'}} (${file})`,
        value: apiKey,
      });
    } else {
      candidates.push({ kind: 'config_literal', label: `config api_key literal (${file})`, value: apiKey });
    }
  }
  for (const name of entry.api_key_env) {
    const value = deps.env[name]?.trim();
    if (value) candidates.push({ kind: 'env', label: `env ${name}`, value });
  }
  // A provider a refreshed catalog added gets no stored key by its id unless the user configured it.
  const storeUsable = !(entry.catalog?.catalog_only === true && !entry.configured);
  const stored = storeUsable ? deps.store.get(entry.id) : undefined;
  if (stored && (stored.kind === 'api_key' || stored.kind === 'bearer') && stored.value) {
    candidates.push({
      kind: 'credential_store',
      label: `credential store (${deps.store.status().backend}, ${stored.stored_by})`,
      value: stored.value,
    });
  }
  const usable = candidates.filter((c) => c.value);
  const source = usable[0];
  const distinct = new Set(usable.map((c) => c.value));
  const resolution: CredentialResolution = {
    value: source?.value,
    source,
    candidates,
    ambiguous: distinct.size > 1,
  };
  if (resolution.ambiguous) {
    resolution.ambiguity = `${usable.map((c) => c.label).join(' and ')} hold different keys; ${source!.label} is used`;
  }
  if (!source) {
    const problem = candidates.find((c) => c.problem)?.problem;
    resolution.missing = problem ?? missingKeyHint(entry);
  }
  return resolution;
}

export function missingKeyHint(entry: ProviderEntry): string {
  const vars = entry.api_key_env;
  const parts: string[] = [];
  if (vars.length) parts.push(`set ${vars[0]}${vars.length > 1 ? ` (or ${vars.slice(1).join(', ')})` : ''}`);
  parts.push(`set providers.${entry.id}.api_key ("\${ENV_NAME}" or "keychain:${entry.id}")`);
  if (entry.oauth_platform) parts.push(`run svc auth ${entry.oauth_platform}`);
  return `${entry.id}: no API key: ${parts.join(', or ')}`;
}

/** `…abcd` for keys long enough to show four characters without giving them away. */
export function lastFour(secret: string | undefined): string | undefined {
  if (!secret || secret.length < 12) return undefined;
  return `…${secret.slice(-4)}`;
}

/** What storing a key needs (the App has each of these under the same name). */
export interface StoreKeyDeps {
  providers: {
    store: CredentialStore;
    /** The provider's entry (configured or from the catalog). */
    entry(id: string): ProviderEntry | undefined;
  };
  redactor: { add(secret: string): void };
  clock: Clock;
  /** The workspace: its svc.toml is never written (it is meant to be committed), only read. */
  workspace: string;
  /** HOME / XDG_CONFIG_HOME: the user config `<config dir>/svc/svc.toml` receives the sentinel. */
  env: Readonly<Record<string, string | undefined>>;
  reloadConfig(): unknown;
}

export interface StoreKeyInput {
  provider: string;
  key: string;
  kind: 'api_key' | 'bearer';
  /** What stored it (`svc auth token`, `svc tui`), kept with the credential. */
  by: string;
  /** The provider type, for a provider that may not be configured yet (`amazon-bedrock`). */
  type?: string;
}

export interface StoredKey {
  provider: string;
  stored: true;
  kind: 'api_key' | 'bearer';
  backend: string;
  sentinel_written: boolean;
  /** The user config that holds the sentinel (never the workspace svc.toml). */
  config_file: string | null;
  /**
   * Set when the workspace svc.toml gives the provider another `api_key`, which wins over the user
   * config: the stored key is not used until that line goes.
   */
  shadowed_by?: string;
}

/**
 * Store an API key (or bearer token) for a provider: the one way, for `svc auth` and the TUI's
 * provider dialogs alike. The key goes to the durable credential store, and (AUTH-28) the
 * provider's `api_key` in the workspace svc.toml becomes the `keychain:<provider>` sentinel, so
 * readiness and the resolver find it.
 */
export function storeKey(deps: StoreKeyDeps, input: StoreKeyInput): StoredKey {
  const { provider, entry } = keyTarget(deps, input.provider, input.type);
  const key = input.key.trim();
  if (!key) throw new SvcError('invalid_input', 'key: empty; paste or pipe the key');
  const { store } = deps.providers;
  deps.redactor.add(key);
  store.set(provider, {
    kind: input.kind,
    value: key,
    stored_by: input.by,
    stored_at: new Date(deps.clock.now()).toISOString(),
  });
  let file: string | null = null;
  // AUTH-28: with durable storage the provider's api_key becomes the keychain:<provider> sentinel,
  // in the user config: the workspace svc.toml is meant to be committed and is never edited here.
  if (store.durable()) {
    file = globalConfigPath(deps.env as Record<string, string | undefined>);
    makeDirs(dirname(file), 0o700);
    const id = tableId(provider);
    if (input.type && !entry) writeConfigKey(file, `providers.${id}.type`, input.type);
    writeConfigKey(file, `providers.${id}.api_key`, sentinelOf(provider));
    deps.reloadConfig();
  }
  const workspaceKey = workspaceApiKey(deps.workspace, provider);
  return {
    provider,
    stored: true,
    kind: input.kind,
    backend: store.status().backend,
    sentinel_written: file !== null,
    config_file: file,
    ...(workspaceKey !== undefined && workspaceKey !== sentinelOf(provider)
      ? { shadowed_by: join(deps.workspace, 'svc.toml') }
      : {}),
  };
}

export interface ForgottenKey {
  provider: string;
  /** A credential was in the store and is gone. */
  removed: boolean;
  /** Config files whose `keychain:<provider>` sentinel was removed. */
  sentinel_removed_from: string[];
}

/**
 * `svc auth logout`: undo what storing a key did: the stored credential, and the
 * `keychain:<provider>` sentinel in the user config (and in the workspace svc.toml, where older
 * versions wrote it). An `api_key` that is anything else (a literal, `${ENV}`) is left alone.
 */
export function forgetKey(deps: Omit<StoreKeyDeps, 'clock' | 'redactor'>, id: string): ForgottenKey {
  const provider = id.trim();
  const removed = deps.providers.store.delete(provider);
  const sentinel_removed_from: string[] = [];
  const key = `providers.${tableId(provider)}.api_key`;
  for (const file of [
    globalConfigPath(deps.env as Record<string, string | undefined>),
    join(deps.workspace, 'svc.toml'),
  ]) {
    if (apiKeyIn(file, provider) !== sentinelOf(provider)) continue;
    writeConfigKey(file, key, undefined);
    sentinel_removed_from.push(file);
  }
  if (sentinel_removed_from.length) deps.reloadConfig();
  return { provider, removed, sentinel_removed_from };
}

const sentinelOf = (provider: string) => `keychain:${provider}`;
const tableId = (provider: string) => (/^[A-Za-z0-9_-]+$/.test(provider) ? provider : `"${provider}"`);

function workspaceApiKey(workspace: string, provider: string): unknown {
  return apiKeyIn(join(workspace, 'svc.toml'), provider);
}

/** `providers.<id>.api_key` as written in a config file (undefined when absent or unreadable). */
function apiKeyIn(file: string, provider: string): unknown {
  if (!existsSync(file)) return undefined;
  try {
    const tree = parseToml(readFileSync(file, 'utf8')) as {
      providers?: Record<string, { api_key?: unknown }>;
    };
    return tree.providers?.[provider]?.api_key;
  } catch {
    return undefined;
  }
}

/**
 * The provider a key would be stored for, checked before the key is read (a CLI checks its
 * arguments before waiting on standard input): a provider id, known (or of the given type), that
 * takes an API key.
 */
export function keyTarget(
  deps: Pick<StoreKeyDeps, 'providers'>,
  id: string,
  type?: string,
): { provider: string; entry: ProviderEntry | undefined } {
  const provider = id.trim();
  if (!/^[a-z0-9][a-z0-9._-]*$/.test(provider))
    throw new SvcError(
      'invalid_input',
      `provider: "${id}" is not a provider id (lowercase letters, digits, . _ -)`,
    );
  const entry = deps.providers.entry(provider);
  if (type && entry && entry.type !== type)
    throw new SvcError('invalid_input', `provider: ${provider} is a ${entry.type} provider, not ${type}`);
  if (!type && !entry)
    throw new SvcError(
      'not_found',
      `provider: unknown provider "${provider}"; add [providers.${provider}] first (svc config show-provider-status lists them)`,
    );
  if (entry && (entry.auth === 'vendor_cli' || entry.auth === 'acp' || entry.auth === 'local'))
    throw new SvcError(
      'invalid_input',
      `provider: ${provider} takes no API key (${entry.auth === 'local' ? 'a local server' : 'the child agent keeps its own login'})`,
    );
  return { provider, entry };
}
