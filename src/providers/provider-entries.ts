/**
 * The effective provider list: every catalog provider, merged field by field with its
 * `[providers.<id>]` block, plus custom providers defined only in config (by `type`).
 * @module
 */
import type { Config, ProviderConfig } from '../config/schema';
import {
  type Catalog,
  type CatalogModel,
  type CatalogProvider,
  PROVIDER_TYPES,
  type ProviderType,
} from './catalog';
import { isLoopbackUrl } from './context';
import type { ModelInfo } from './types';

export type AuthKind = 'api_key' | 'cloud' | 'oauth' | 'local' | 'vendor_cli' | 'acp';

export interface ProviderEntry {
  id: string;
  name: string;
  type: ProviderType;
  auth: AuthKind;
  /** Has a `[providers.<id>]` block. */
  configured: boolean;
  disabled: boolean;
  config?: ProviderConfig;
  catalog?: CatalogProvider;
  base_url?: string;
  api_key_env: string[];
  models: (ModelInfo & { created?: number; source: 'embedded' | 'cache' | 'config' })[];
  /** Any model id is accepted (local servers, custom providers without a model list). */
  open_models: boolean;
  /** A loopback base_url: a local server needs no API key (one is still sent when configured). */
  key_optional: boolean;
  default_large?: string;
  default_small?: string;
  oauth_platform?: string;
  cli_kind?: string;
  /** The catalog entry came from `svc update-providers` (the cache), not the embedded catalog. */
  refreshed: boolean;
  /** Config problems that make the provider unusable (unknown type, missing base_url…). */
  problems: string[];
}

const TYPE_ALIASES: Record<string, ProviderType> = {
  'openai-compatible': 'openai-compat',
  openai_compat: 'openai-compat',
  'anthropic-style': 'anthropic-compat',
  'anthropic-compatible': 'anthropic-compat',
  bedrock: 'amazon-bedrock',
  vertex: 'google-vertex',
  gemini: 'google',
  together: 'togetherai',
  hf: 'huggingface',
  vendor_cli: 'vendor-cli',
};

const AUTH_OF: Record<ProviderType, AuthKind> = {
  anthropic: 'api_key',
  openai: 'api_key',
  google: 'api_key',
  'google-vertex': 'cloud',
  'amazon-bedrock': 'cloud',
  azure: 'cloud',
  openrouter: 'api_key',
  groq: 'api_key',
  mistral: 'api_key',
  xai: 'api_key',
  deepseek: 'api_key',
  cerebras: 'api_key',
  togetherai: 'api_key',
  fireworks: 'api_key',
  deepinfra: 'api_key',
  huggingface: 'api_key',
  copilot: 'oauth',
  hyper: 'oauth',
  chatgpt: 'oauth',
  'openai-compat': 'api_key',
  'anthropic-compat': 'api_key',
  'vendor-cli': 'vendor_cli',
  acp: 'acp',
};

export function normalizeType(type: string): ProviderType | undefined {
  const lower = type.trim().toLowerCase();
  if ((PROVIDER_TYPES as readonly string[]).includes(lower)) return lower as ProviderType;
  return TYPE_ALIASES[lower];
}

export function buildEntries(config: Config, catalog: Catalog): ProviderEntry[] {
  const entries: ProviderEntry[] = [];
  const configured = config.providers;
  for (const cat of catalog.providers) entries.push(fromCatalog(cat, configured[cat.id]));
  for (const [id, block] of Object.entries(configured)) {
    if (catalog.get(id)) continue;
    entries.push(fromConfig(id, block, catalog));
  }
  return entries;
}

function modelsOf(
  cat: CatalogProvider | undefined,
  block: ProviderConfig | undefined,
): ProviderEntry['models'] {
  const byId = new Map<string, ProviderEntry['models'][number]>();
  for (const m of cat?.models ?? []) byId.set(m.id, { ...pickModel(m), source: cat!.source });
  for (const m of block?.models ?? []) {
    const previous = byId.get(m.id);
    byId.set(m.id, { ...(previous ?? {}), ...stripUndefined(m), source: 'config' });
  }
  return [...byId.values()];
}

function pickModel(m: CatalogModel): ModelInfo & { created?: number } {
  return stripUndefined({
    id: m.id,
    name: m.name,
    context_window: m.context_window,
    max_output: m.max_output,
    cost_per_1m_in: m.cost_per_1m_in,
    cost_per_1m_out: m.cost_per_1m_out,
    tool_call: m.tool_call,
    reasoning: m.reasoning,
    attachments: m.attachments,
    created: m.created,
  });
}

function fromCatalog(cat: CatalogProvider, block: ProviderConfig | undefined): ProviderEntry {
  const problems: string[] = [];
  let type: ProviderType = cat.type;
  if (block?.type) {
    const t = normalizeType(block.type);
    if (!t) problems.push(unknownType(cat.id, block.type));
    else type = t;
  }
  const base_url = block?.base_url ?? cat.base_url;
  const auth: AuthKind = type === cat.type ? cat.auth : AUTH_OF[type];
  return {
    id: cat.id,
    name: block?.name ?? cat.name,
    type,
    auth,
    configured: block !== undefined,
    disabled: block?.disabled === true,
    config: block,
    catalog: cat,
    base_url,
    api_key_env: cat.api_key_env ?? [],
    models: modelsOf(cat, block),
    open_models: cat.open_models === true,
    key_optional: isLoopbackUrl(base_url),
    default_large: block?.default_model ?? cat.default_large_model,
    default_small: cat.default_small_model ?? block?.default_model,
    oauth_platform: cat.oauth_platform,
    cli_kind: cat.cli_kind,
    refreshed: cat.source === 'cache',
    problems,
  };
}

function fromConfig(id: string, block: ProviderConfig, catalog: Catalog): ProviderEntry {
  const problems: string[] = [];
  let type: ProviderType | undefined;
  let template: CatalogProvider | undefined;
  if (block.type) {
    type = normalizeType(block.type);
    // `type = "groq"` on a custom id: a second account of a catalog provider.
    template = type ? catalog.providers.find((p) => p.id === type) : catalog.get(block.type);
    if (!type && template) type = template.type;
    if (!type) problems.push(unknownType(id, block.type));
  } else if (block.command) {
    type = 'vendor-cli';
  } else if (block.base_url) {
    type = 'openai-compat';
  } else {
    problems.push(
      `providers.${id}: unknown provider "${id}"; set type (openai-compat, anthropic-compat, vendor-cli, acp…) and base_url, or use a catalog id (svc models lists them)`,
    );
  }
  const effective: ProviderType = type ?? 'openai-compat';
  const base_url = block.base_url ?? template?.base_url;
  if (!base_url && (effective === 'openai-compat' || effective === 'anthropic-compat'))
    problems.push(`providers.${id}.base_url: required for type ${effective}`);
  if ((effective === 'vendor-cli' || effective === 'acp') && !block.command && !template?.cli_kind)
    problems.push(`providers.${id}.command: required for type ${effective} (the binary to launch)`);
  const auth: AuthKind = template?.auth ?? AUTH_OF[effective];
  const models = modelsOf(template, block);
  return {
    id,
    name: block.name ?? id,
    type: effective,
    auth,
    configured: true,
    disabled: block.disabled === true,
    config: block,
    catalog: undefined,
    base_url,
    api_key_env: template?.api_key_env ?? [],
    models,
    open_models: block.models === undefined || block.models.length === 0 || template?.open_models === true,
    key_optional: isLoopbackUrl(base_url),
    default_large: block.default_model ?? template?.default_large_model ?? models[0]?.id,
    default_small: template?.default_small_model ?? block.default_model ?? models[0]?.id,
    oauth_platform: template?.oauth_platform,
    cli_kind: template?.cli_kind,
    refreshed: template?.source === 'cache',
    problems,
  };
}

function unknownType(id: string, type: string): string {
  return `providers.${id}.type: unknown type "${type}"; one of ${PROVIDER_TYPES.join(', ')} (anthropic-style is accepted for anthropic-compat)`;
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
