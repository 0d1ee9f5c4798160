/**
 * The providers' read models (spec, Read surfaces): provider-status (configured, ready,
 * ambiguous, refreshed), model-selection (which selector the next turn uses and why), the auth
 * wizard (which `svc auth <platform>` the operator should run), the redacted auth summary, the
 * cloud identity section of config-status, and the raw catalog list. None carries a secret:
 * credential sources are described, never shown (the summary shows at most the last 4 chars).
 * @module
 */
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { AzureInspection } from './cloud/azure';
import type { BedrockInspection } from './cloud/bedrock';
import { inspectBedrock } from './cloud/bedrock';
import type { VertexInspection } from './cloud/vertex';
import { lastFour } from './credentials';
import { readSession } from './oauth/chatgpt';
import type { ProviderEntry } from './provider-entries';
import { envNamesOf, type LaunchPosture, type Readiness } from './readiness';
import type { SelectionSource } from './selection';
import type { ProviderService } from './service';
import { CLI_KINDS, type CliKind } from './vendor-cli';

// ---- provider status -----------------------------------------------------------------------

export interface ProviderStatusRow {
  id: string;
  name: string;
  type: string;
  auth: string;
  configured: boolean;
  ready: boolean;
  ambiguous: boolean;
  ambiguity: string | null;
  /** Its catalog metadata comes from `svc update-providers` (the cache), not the embedded catalog. */
  refreshed: boolean;
  reason: string | null;
  credential_source_kind: string;
  credential_source: string | null;
  env_vars: string[];
  base_url: string | null;
  model_count: number;
  recommended_model: string | null;
  auth_command: string | null;
  expires_at?: string;
  cloud?: BedrockInspection | VertexInspection | AzureInspection;
  launch?: LaunchPosture;
}

export function providerStatus(service: ProviderService) {
  service.seedSecrets();
  const catalog = service.catalog();
  const config = service.deps.config();
  // Ready first, then configured, then the rest of the catalog (its order otherwise): the one
  // provider a user set up is at the top, not at row 27 (issue 16).
  const rank = (row: ProviderStatusRow) => (row.ready ? 0 : row.configured ? 1 : 2);
  const providers: ProviderStatusRow[] = service
    .entries()
    .map((entry) => statusRow(entry, service.readiness(entry)))
    .sort((a, b) => rank(a) - rank(b));
  return {
    providers,
    counts: {
      total: providers.length,
      configured: providers.filter((p) => p.configured).length,
      ready: providers.filter((p) => p.ready).length,
      ambiguous: providers.filter((p) => p.ambiguous).length,
      refreshed: providers.filter((p) => p.refreshed).length,
    },
    default_models: { large: config.models.large ?? null, small: config.models.small ?? null },
    catalog: {
      embedded_version: catalog.embedded_version,
      disable_provider_auto_update: config.options.disable_provider_auto_update,
      cache: catalog.cache,
    },
    credential_store: safeStoreStatus(service),
  };
}

function statusRow(entry: ProviderEntry, r: Readiness): ProviderStatusRow {
  const row: ProviderStatusRow = {
    id: entry.id,
    name: entry.name,
    type: entry.type,
    auth: entry.auth,
    configured: entry.configured,
    ready: r.ready,
    ambiguous: r.ambiguous,
    ambiguity: r.ambiguity,
    refreshed: entry.refreshed,
    reason: r.reason,
    credential_source_kind: r.source_kind,
    credential_source: r.source,
    env_vars: envNamesOf(entry),
    base_url: entry.base_url ?? null,
    model_count: entry.models.length,
    recommended_model: entry.default_large ?? null,
    auth_command: authCommand(entry),
  };
  if (r.expires_at) row.expires_at = r.expires_at;
  if (r.cloud) row.cloud = r.cloud;
  if (r.launch) row.launch = r.launch;
  return row;
}

function safeStoreStatus(service: ProviderService) {
  try {
    return service.store.status();
  } catch (error) {
    return { error: SvcError.is(error) ? error.message : String(error) };
  }
}

export function authCommand(entry: ProviderEntry): string | null {
  if (entry.oauth_platform) return `svc auth ${entry.oauth_platform}`;
  if (entry.type === 'amazon-bedrock') return 'svc auth bedrock';
  if (entry.type === 'google-vertex') return 'svc auth vertex';
  if (entry.type === 'azure') return 'svc auth azure';
  if (entry.auth === 'vendor_cli' && entry.cli_kind) return `svc auth ${entry.cli_kind}`;
  return null;
}

// ---- model selection -----------------------------------------------------------------------

export function modelSelection(
  service: ProviderService,
  input: { session_id?: string; agent?: string; purpose?: 'large' | 'small' },
  lookup: { sessionModel?: string | null; sessionAgent?: string | null; agentModel?: string },
) {
  const selection = service.select({
    purpose: input.purpose,
    sessionModel: lookup.sessionModel,
    agentModel: lookup.agentModel,
    sessionLabel: input.session_id ? `session ${input.session_id}` : undefined,
    agentLabel: input.agent ?? lookup.sessionAgent ?? undefined,
  });
  let provider: string | null = null;
  let model: string | null = null;
  let ready: boolean | null = null;
  let problem: string | null = null;
  if (selection.selector) {
    try {
      const parsed = service.parse(selection.selector);
      provider = parsed.entry.id;
      model = parsed.model;
      const r = service.readiness(parsed.entry);
      ready = r.ready;
      problem = r.reason;
    } catch (error) {
      ready = false;
      problem = SvcError.is(error) ? error.message : String(error);
    }
  }
  const config = service.deps.config();
  return {
    purpose: selection.purpose,
    selector: provider && model ? `${provider}/${model}` : selection.selector,
    provider,
    model_id: model,
    source: selection.source as SelectionSource | 'none',
    reason: selection.reason,
    ready,
    problem,
    session_id: input.session_id ?? null,
    agent: input.agent ?? lookup.sessionAgent ?? null,
    candidates: selection.candidates,
    tpm_recovery: {
      provider_model_fallback: config.options.tpm_recovery.provider_model_fallback,
      max_retries: config.options.tpm_recovery.max_retries,
    },
  };
}

export type ModelSelectionReport = ReturnType<typeof modelSelection>;

// ---- auth wizard ---------------------------------------------------------------------------

interface WizardPlatform {
  platform: string;
  provider: string;
  kind: 'oauth' | 'cloud_identity' | 'vendor_cli';
  flow: string;
  status: 'signed_in' | 'not_signed_in' | 'ready' | 'not_ready' | 'installed' | 'not_installed';
  configured: boolean;
  command: string;
  why: string;
}

const OAUTH_FLOWS: Record<string, string> = {
  copilot: 'reuses a GitHub token found on disk, else the GitHub device flow',
  hyper: 'device authorization with a verification code, then token exchange',
  openrouter: 'browser PKCE with a loopback callback; stores the resulting API key',
  chatgpt: 'inherits the Codex CLI session from ~/.codex/auth.json and refreshes it, else browser PKCE',
};

export function authWizard(service: ProviderService, input: { provider?: string }) {
  const entries = service.entries();
  if (
    input.provider &&
    !entries.some(
      (e) => e.id === input.provider || e.oauth_platform === input.provider || e.cli_kind === input.provider,
    )
  ) {
    throw new SvcError(
      'not_found',
      `provider: unknown provider "${input.provider}"; see get_provider_status`,
    );
  }
  const platforms: WizardPlatform[] = [];
  for (const entry of entries) {
    const command = authCommand(entry);
    if (!command) continue;
    const r = service.readiness(entry);
    if (entry.auth === 'oauth') {
      platforms.push({
        platform: entry.oauth_platform ?? entry.id,
        provider: entry.id,
        kind: 'oauth',
        flow: OAUTH_FLOWS[entry.oauth_platform ?? ''] ?? 'OAuth sign-in',
        status: r.ready ? 'signed_in' : 'not_signed_in',
        configured: entry.configured,
        command,
        why: r.ready ? `signed in (${r.source})` : `${entry.name} needs a human sign-in: run ${command}`,
      });
    } else if (entry.auth === 'cloud') {
      platforms.push({
        platform: command.split(' ').pop()!,
        provider: entry.id,
        kind: 'cloud_identity',
        flow: 'checks the cloud credential sources; `doctor` inspects the whole family',
        status: r.ready ? 'ready' : 'not_ready',
        configured: entry.configured,
        command: r.ready ? command : `${command} doctor`,
        why: r.ready ? `credential source: ${r.source}` : (r.reason ?? 'not ready'),
      });
    } else if (entry.auth === 'vendor_cli') {
      const kind = entry.cli_kind as CliKind;
      platforms.push({
        platform: kind,
        provider: entry.id,
        kind: 'vendor_cli',
        flow: `setup check only: ${CLI_KINDS[kind]?.name ?? kind} keeps its own login; svc stores nothing`,
        status: r.ready ? 'installed' : 'not_installed',
        configured: entry.configured,
        command,
        why: r.ready
          ? `installed at ${r.launch?.resolved_path}; run ${command} to confirm it is logged in`
          : (r.reason ?? 'not installed'),
      });
    } else if (entry.oauth_platform) {
      platforms.push({
        platform: entry.oauth_platform,
        provider: entry.id,
        kind: 'oauth',
        flow: OAUTH_FLOWS[entry.oauth_platform] ?? 'OAuth sign-in',
        status: r.ready ? 'signed_in' : 'not_signed_in',
        configured: entry.configured,
        command,
        why: r.ready
          ? `credential: ${r.source}`
          : `no API key yet: ${command} stores one (or set ${entry.api_key_env[0] ?? 'the env var'})`,
      });
    }
  }
  const filtered = input.provider
    ? platforms.filter((p) => p.provider === input.provider || p.platform === input.provider)
    : platforms;
  const large = service.select({ purpose: 'large' });
  let next: { platform: string; command: string; why: string } | null = null;
  const pending = (p: WizardPlatform) =>
    p.status === 'not_signed_in' || p.status === 'not_ready' || p.status === 'not_installed';
  const selectedProvider = large.selector?.split('/')[0];
  const pick =
    filtered.find((p) => pending(p) && p.provider === selectedProvider) ??
    filtered.find((p) => pending(p) && p.configured) ??
    (input.provider ? filtered.find(pending) : undefined);
  if (pick) {
    next = {
      platform: pick.platform,
      command: pick.command,
      why:
        pick.provider === selectedProvider
          ? `the next turn uses ${large.selector}, and ${pick.provider} is not ready: ${pick.why}`
          : `${pick.provider} is configured but not ready: ${pick.why}`,
    };
  }
  return {
    human_only: true,
    note: 'OAuth sign-in is human-only: agents never run it. Ask the operator to run the command in a terminal, then check get_provider_status.',
    next,
    platforms: filtered,
  };
}

// ---- auth summary --------------------------------------------------------------------------

export function authSummary(service: ProviderService) {
  service.seedSecrets();
  const selection = service.select({ purpose: 'large' });
  const base = { model: selection.selector, model_source: selection.source, reason: selection.reason };
  if (!selection.selector) {
    return {
      ...base,
      provider: null,
      ready: false,
      credential: { mode: 'none', source_kind: 'none', source: null, last4: null },
    };
  }
  let entry: ProviderEntry;
  try {
    entry = service.parse(selection.selector).entry;
  } catch (error) {
    return {
      ...base,
      provider: null,
      ready: false,
      problem: SvcError.is(error) ? error.message : String(error),
      credential: { mode: 'none', source_kind: 'none', source: null, last4: null },
    };
  }
  const r = service.readiness(entry);
  let mode: string;
  let last4: string | undefined;
  switch (entry.auth) {
    case 'api_key':
      mode = 'api_key';
      last4 = lastFour(r.credential.value);
      break;
    case 'local':
      mode = 'local_no_key';
      break;
    case 'oauth':
      if (entry.type === 'chatgpt') {
        // AUTH-37: a ChatGPT session authenticates to the chat backend; it is not an API key.
        mode = 'chatgpt_session';
        last4 = lastFour(readSession(service.deps.dataDir)?.access_token);
      } else if (r.credential.value) {
        mode = 'api_key';
        last4 = lastFour(r.credential.value);
      } else {
        mode = entry.type === 'copilot' ? 'oauth_token (GitHub Copilot)' : 'oauth_token';
        last4 = lastFour(service.store.get(entry.id)?.access);
      }
      break;
    case 'cloud':
      mode = 'cloud_identity';
      break;
    case 'vendor_cli':
      mode = 'vendor_cli (its own login)';
      break;
    case 'acp':
      mode = 'acp_child (its own credentials)';
      break;
    default:
      mode = 'none';
  }
  return {
    ...base,
    provider: entry.id,
    ready: r.ready,
    problem: r.reason,
    ambiguous: r.ambiguous,
    ambiguity: r.ambiguity,
    credential: {
      mode,
      source_kind: r.source_kind,
      source: r.source,
      last4: last4 ?? null,
      store_backend: safeStoreStatus(service),
    },
  };
}

// ---- cloud identity (config-status section) ----------------------------------------------

export function cloudIdentity(service: ProviderService) {
  const entries = service.entries();
  const of = (type: string) =>
    entries.filter((e) => e.type === type).map((entry) => service.readiness(entry).cloud ?? null);
  return {
    bedrock: of('amazon-bedrock'),
    vertex: of('google-vertex'),
    azure: of('azure'),
  };
}

export function bedrockDoctor(service: ProviderService, providerId?: string) {
  const entries = service
    .entries()
    .filter((e) => e.type === 'amazon-bedrock' && (!providerId || e.id === providerId));
  if (providerId && entries.length === 0)
    throw new SvcError(
      'not_found',
      `provider: "${providerId}" is not a bedrock provider; see svc config show-provider-status`,
    );
  const ctx = service.readinessContext();
  return entries.map((entry) =>
    inspectBedrock({ entry, env: ctx.env, store: ctx.store, auth: ctx.config.auth.bedrock ?? {} }),
  );
}

// ---- raw catalog list ----------------------------------------------------------------------

export function listModels(service: ProviderService, input: { provider?: string }) {
  const entries = service
    .entries()
    .filter((e) => !e.disabled && (!input.provider || e.id === input.provider));
  if (input.provider && entries.length === 0)
    throw new SvcError(
      'not_found',
      `provider: unknown provider "${input.provider}"; svc models lists every provider`,
    );
  const config = service.deps.config();
  const data = entries.flatMap((entry) =>
    withConfiguredSelectors(entry, config).map((m) => ({
      id: `${entry.id}/${m.id}`,
      object: 'model' as const,
      created: m.created ?? 0,
      owned_by: entry.id,
      provider: entry.id,
      provider_name: entry.name,
      provider_type: entry.type,
      model_id: m.id,
      name: m.name ?? m.id,
      context_window: m.context_window ?? null,
      max_output: m.max_output ?? null,
      cost_per_1m_in: m.cost_per_1m_in ?? null,
      cost_per_1m_out: m.cost_per_1m_out ?? null,
      tool_call: m.tool_call ?? null,
      reasoning: m.reasoning ?? null,
      attachments: m.attachments ?? null,
      catalog_source: m.source,
    })),
  );
  return { object: 'list' as const, data };
}

export type ModelList = ReturnType<typeof listModels>;

/**
 * A configured provider's models plus the model ids its config names (default_model, and the
 * [models] large/small selectors on it): a custom provider without a model list still shows the
 * models it is configured to serve.
 */
function withConfiguredSelectors(entry: ProviderEntry, config: Config): ProviderEntry['models'] {
  if (!entry.configured) return entry.models;
  const ids = new Set(entry.models.map((m) => m.id));
  const extra: ProviderEntry['models'] = [];
  const prefix = `${entry.id}/`;
  for (const id of [
    entry.config?.default_model,
    config.models.large?.startsWith(prefix) ? config.models.large.slice(prefix.length) : undefined,
    config.models.small?.startsWith(prefix) ? config.models.small.slice(prefix.length) : undefined,
  ]) {
    if (id && !ids.has(id)) {
      ids.add(id);
      extra.push({ id, source: 'config' });
    }
  }
  return [...entry.models, ...extra];
}
