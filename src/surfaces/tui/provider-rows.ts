/**
 * Provider and model rows for the dialogs, read from the providers' status tools
 * (`get_provider_status` = `GET /v1/provider-status`, `list_models` = `GET /v1/models`), so the
 * local and the attached TUI show the same rows. Only the fields the dialogs show are read.
 * @module
 */
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
    const auth = (typeof r.auth === 'object' && r.auth !== null ? r.auth : {}) as Row;
    return [
      {
        id,
        name: str(r.name) ?? id,
        configured,
        ready,
        detail: (
          str(r.detail) ??
          str(r.summary) ??
          str(r.reason) ??
          str(r.credential_source) ??
          str(auth.source) ??
          (ready ? 'ready' : configured ? 'not ready' : 'not configured')
        ).replaceAll(`${id}: `, ''),
        auth_command: str(r.auth_command) ?? str(auth.command) ?? str(r.wizard_command),
        ...(str(r.auth) ? { auth: str(r.auth) } : {}),
        env_var: str(r.env_var) ?? (Array.isArray(r.env_vars) ? str(r.env_vars[0]) : undefined),
      },
    ];
  });
}

/**
 * Model picker rows from `list_models` (`GET /v1/models`). With the provider status rows, each
 * model says whether its provider is ready, and ready providers' models come first (catalog
 * order otherwise).
 */
export function modelsFromTool(value: unknown, providers: ProviderRow[] = []): ModelChoice[] {
  const readiness = new Map(providers.map((p) => [p.id, p.ready]));
  const rows = rowsOf(value, ['models', 'data', 'rows']).flatMap((r): ModelChoice[] => {
    const provider = str(r.provider) ?? str(r.owned_by) ?? str(r.provider_id);
    const rawId = str(r.selector) ?? str(r.id) ?? str(r.model);
    if (!rawId) return [];
    const selector = rawId.includes('/') || !provider ? rawId : `${provider}/${rawId}`;
    const owner = provider ?? selector.split('/')[0];
    return [
      {
        selector,
        provider: owner,
        name: str(r.name) ?? rawId,
        context_window: typeof r.context_window === 'number' ? r.context_window : undefined,
        ready: bool(r.ready) ?? bool(r.available) ?? readiness.get(owner),
      },
    ];
  });
  return [...rows.filter((m) => m.ready === true), ...rows.filter((m) => m.ready !== true)];
}
