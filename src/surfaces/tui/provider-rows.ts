/**
 * Provider and model rows for the dialogs, read leniently from the providers' status tools
 * (`get_provider_status`, `list_models`) with the config as the fallback when those tools are
 * not in this build. Lenient on purpose: only the fields the dialogs show are read.
 * @module
 */
import type { Config } from '../../config/schema';
import type { ModelChoice, ProviderRow } from './client';

type Row = Record<string, unknown>;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);
const bool = (v: unknown): boolean | undefined => (typeof v === 'boolean' ? v : undefined);

/** The first array of objects found at the top level (or the value itself). */
function rowsOf(value: unknown, keys: string[]): Row[] {
  if (Array.isArray(value)) return value.filter((r): r is Row => typeof r === 'object' && r !== null);
  if (typeof value !== 'object' || value === null) return [];
  for (const key of keys) {
    const v = (value as Row)[key];
    if (Array.isArray(v)) return rowsOf(v, []);
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      // A map keyed by id: { anthropic: {...}, openai: {...} }
      const entries = Object.entries(v as Row).filter(([, r]) => typeof r === 'object' && r !== null);
      if (entries.length) return entries.map(([id, r]) => ({ id, ...(r as Row) }));
    }
  }
  return [];
}

export function providersFromTool(value: unknown): ProviderRow[] {
  return rowsOf(value, ['providers', 'rows', 'data']).flatMap((r) => {
    const id = str(r.id) ?? str(r.provider) ?? str(r.provider_id);
    if (!id) return [];
    const configured = bool(r.configured) ?? true;
    const ready = bool(r.ready) ?? (str(r.state) === 'ready' || str(r.status) === 'ready');
    const auth = (r.auth ?? {}) as Row;
    return [
      {
        id,
        name: str(r.name) ?? id,
        configured,
        ready,
        detail:
          str(r.detail) ??
          str(r.summary) ??
          str(r.reason) ??
          str(r.credential_source) ??
          str(auth.source) ??
          (ready ? 'ready' : configured ? 'not ready' : 'not configured'),
        auth_command: str(r.auth_command) ?? str(auth.command) ?? str(r.wizard_command),
        env_var: str(r.env_var) ?? (Array.isArray(r.env_vars) ? str(r.env_vars[0]) : undefined),
      },
    ];
  });
}

export function modelsFromTool(value: unknown): ModelChoice[] {
  return rowsOf(value, ['models', 'data', 'rows']).flatMap((r) => {
    const provider = str(r.provider) ?? str(r.owned_by) ?? str(r.provider_id);
    const rawId = str(r.selector) ?? str(r.id) ?? str(r.model);
    if (!rawId) return [];
    const selector = rawId.includes('/') || !provider ? rawId : `${provider}/${rawId}`;
    return [
      {
        selector,
        provider: provider ?? selector.split('/')[0],
        name: str(r.name) ?? rawId,
        context_window: typeof r.context_window === 'number' ? r.context_window : undefined,
        ready: bool(r.ready) ?? bool(r.available),
      },
    ];
  });
}

const LOOPBACK = /^https?:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?(\/|$)/;

export function providersFromConfig(config: Config): ProviderRow[] {
  return Object.entries(config.providers).map(([id, p]) => {
    const local = p.base_url !== undefined && LOOPBACK.test(p.base_url);
    const ready = !p.disabled && (Boolean(p.api_key) || local || p.type === 'vendor-cli' || p.type === 'acp');
    return {
      id,
      name: p.name ?? id,
      configured: true,
      ready,
      detail: p.disabled
        ? 'disabled in config'
        : p.api_key
          ? p.api_key.startsWith('keychain:')
            ? 'key in the credential store'
            : 'key set in config'
          : local
            ? `local server ${p.base_url}`
            : 'no api key',
    };
  });
}

export function modelsFromConfig(config: Config): ModelChoice[] {
  const seen = new Set<string>();
  const rows: ModelChoice[] = [];
  const add = (selector: string | undefined, name?: string, window?: number) => {
    if (!selector || seen.has(selector) || !selector.includes('/')) return;
    seen.add(selector);
    rows.push({
      selector,
      provider: selector.split('/')[0],
      name: name ?? selector.split('/').slice(1).join('/'),
      context_window: window,
    });
  };
  add(config.models.large);
  add(config.models.small);
  for (const [id, p] of Object.entries(config.providers)) {
    if (p.default_model) add(`${id}/${p.default_model}`);
    for (const m of p.models ?? []) add(`${id}/${m.id}`, m.name, m.context_window);
  }
  return rows;
}
