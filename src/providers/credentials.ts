/**
 * API-key credential resolution for one provider: config `api_key` (a literal, a `${ENV}`
 * interpolation, or `keychain:<provider>`), then the provider's standard env var(s), then a key
 * stored by `svc auth` in the durable credential store. Every candidate is looked at so status can
 * say when two sources disagree (ambiguous); the first present one wins.
 * @module
 */
import type { LoadedConfig } from '../config/load';
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
  const stored = deps.store.get(entry.id);
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
