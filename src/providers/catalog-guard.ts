/**
 * What a refreshed catalog may change. A catalog is outside data (a URL, a file, a cache anyone
 * could have written), so it is metadata only:
 * - a built-in provider (an id of the embedded catalog) takes its name, models (costs, context
 *   windows, capability flags) and default models from it; where it connects and which credential
 *   it sends (type, auth, base_url, api_key_env, headers, sign-in platform, CLI) stay built-in;
 * - a provider the catalog adds may carry a base_url, but only as a plain HTTP API (an API-key or
 *   local type, no sign-in, cloud identity or program) and with no credential: no env var is read
 *   for it and no stored key is sent unless the user's own `[providers.<id>]` block says so.
 * Whatever is not taken is reported (field and reason), never silently dropped.
 * @module
 */
import { isDeepStrictEqual } from 'node:util';
import { PLAIN_KEY_TYPES } from './plain-key-types';

/** The shapes read here (catalog.ts's parsed catalog fits them; no import back, no cycle). */
type CatalogModel = { id: string } & Record<string, unknown>;
interface CatalogEntry {
  id: string;
  name: string;
  type: string;
  auth: string;
  api_key_env?: string[];
  base_url?: string;
  default_large_model?: string;
  default_small_model?: string;
  open_models?: boolean;
  models: CatalogModel[];
  [key: string]: unknown;
}
interface CatalogFile {
  providers: CatalogEntry[];
}

/** Types a catalog may add a provider of: one HTTP endpoint and an API key (or none). */
const ADDABLE_TYPES = PLAIN_KEY_TYPES;

/** What a catalog may change on a built-in provider. */
const METADATA_KEYS = new Set(['id', 'name', 'models', 'default_large_model', 'default_small_model']);
/** What a catalog may set on a provider it adds (credentials never). */
const ADDED_KEYS = new Set([...METADATA_KEYS, 'type', 'auth', 'base_url', 'open_models', 'api_key_env']);

export interface Refusal {
  field: string;
  reason: string;
}

export type GuardedProvider = CatalogEntry & {
  /** Added by the catalog (not a built-in id): gets a credential only from the user's own config. */
  catalog_only?: boolean;
};

export interface GuardResult {
  providers: GuardedProvider[];
  /** Per provider id: the fields not taken, and why. */
  refused: Map<string, Refusal[]>;
  /** Provider ids not taken at all (with the reason in `refused`). */
  dropped: string[];
}

const BUILT_IN_REASON =
  'a catalog cannot change where a built-in provider connects or which credential it sends';
const CREDENTIAL_REASON =
  'a provider from a catalog gets no credential from the environment; set providers.<id>.api_key in your own config to give it one';

export function guardCatalog(
  catalog: CatalogFile,
  builtIn: CatalogFile,
  providerTypes: readonly string[],
): GuardResult {
  const builtIns = new Map(builtIn.providers.map((p) => [p.id, p]));
  const result: GuardResult = { providers: [], refused: new Map(), dropped: [] };
  for (const provider of catalog.providers) {
    const refused: Refusal[] = [];
    const base = builtIns.get(provider.id);
    const guarded = base
      ? guardBuiltIn(provider, base, refused)
      : guardAdded(provider, refused, providerTypes);
    if (refused.length) result.refused.set(provider.id, refused);
    if (guarded) result.providers.push(guarded);
    else result.dropped.push(provider.id);
  }
  return result;
}

function guardBuiltIn(provider: CatalogEntry, base: CatalogEntry, refused: Refusal[]): GuardedProvider {
  for (const [key, value] of Object.entries(provider)) {
    if (METADATA_KEYS.has(key)) continue;
    const builtInValue = (base as Record<string, unknown>)[key];
    const same =
      key === 'api_key_env'
        ? isDeepStrictEqual(value ?? [], builtInValue ?? [])
        : isDeepStrictEqual(value, builtInValue);
    if (!same) refused.push({ field: key, reason: BUILT_IN_REASON });
  }
  return {
    ...base,
    name: provider.name,
    models: provider.models.map(pickModel),
    default_large_model: provider.default_large_model ?? base.default_large_model,
    default_small_model: provider.default_small_model ?? base.default_small_model,
  };
}

function guardAdded(
  provider: CatalogEntry,
  refused: Refusal[],
  providerTypes: readonly string[],
): GuardedProvider | undefined {
  if (providerTypes.includes(provider.id)) {
    refused.push({
      field: 'id',
      reason: `"${provider.id}" is a provider type; a catalog cannot add a provider by that name`,
    });
    return undefined;
  }
  if (!ADDABLE_TYPES.has(provider.type)) {
    refused.push({
      field: 'type',
      reason: `a catalog cannot add a provider of type ${provider.type} (a sign-in, cloud identity or local program); define it in your own config`,
    });
    return undefined;
  }
  if (provider.auth !== 'api_key' && provider.auth !== 'local') {
    refused.push({
      field: 'auth',
      reason: `a catalog cannot add a provider with auth ${provider.auth}; define it in your own config`,
    });
    return undefined;
  }
  for (const [key, value] of Object.entries(provider)) {
    if (key === 'api_key_env') {
      if (Array.isArray(value) && value.length) refused.push({ field: key, reason: CREDENTIAL_REASON });
    } else if (!ADDED_KEYS.has(key))
      refused.push({ field: key, reason: 'not taken from a catalog for a provider it adds' });
  }
  return {
    id: provider.id,
    name: provider.name,
    type: provider.type,
    auth: provider.auth,
    api_key_env: [],
    base_url: provider.base_url,
    default_large_model: provider.default_large_model,
    default_small_model: provider.default_small_model,
    open_models: provider.open_models,
    models: provider.models.map(pickModel),
    catalog_only: true,
  };
}

/** The model fields svc reads (prices, windows, capability flags); nothing else is kept. */
function pickModel(m: CatalogModel): CatalogModel {
  const keep = [
    'id',
    'name',
    'context_window',
    'max_output',
    'cost_per_1m_in',
    'cost_per_1m_out',
    'cost_per_1m_in_cached',
    'tool_call',
    'reasoning',
    'attachments',
    'created',
  ] as const;
  const out: Record<string, unknown> = {};
  for (const key of keep) if (m[key] !== undefined) out[key] = m[key];
  return out as CatalogModel;
}

export interface ProviderChange {
  id: string;
  /** `added`: not in the previous catalog (cache or embedded); `updated`: was; `refused`: not taken. */
  status: 'added' | 'updated' | 'unchanged' | 'refused';
  models_added: string[];
  models_updated: string[];
  models_removed: string[];
  refused: Refusal[];
}

/** What a refresh changes per provider, against what was in effect before (`previous`). */
export function describeChanges(
  guarded: GuardResult,
  previous: (id: string) => { models: CatalogModel[] } | undefined,
): ProviderChange[] {
  const changes: ProviderChange[] = [];
  for (const provider of guarded.providers) {
    const before = previous(provider.id);
    const old = new Map((before?.models ?? []).map((m) => [m.id, m]));
    const now = new Set(provider.models.map((m) => m.id));
    const models_added = provider.models.filter((m) => !old.has(m.id)).map((m) => m.id);
    const models_updated = provider.models
      .filter((m) => old.has(m.id) && !isDeepStrictEqual(pickModel(old.get(m.id)!), m))
      .map((m) => m.id);
    const models_removed = [...old.keys()].filter((id) => !now.has(id));
    const changed = models_added.length + models_updated.length + models_removed.length > 0;
    changes.push({
      id: provider.id,
      status: !before ? 'added' : changed ? 'updated' : 'unchanged',
      models_added,
      models_updated,
      models_removed,
      refused: guarded.refused.get(provider.id) ?? [],
    });
  }
  for (const id of guarded.dropped)
    changes.push({
      id,
      status: 'refused',
      models_added: [],
      models_updated: [],
      models_removed: [],
      refused: guarded.refused.get(id) ?? [],
    });
  return changes;
}
