/**
 * The providers domain as one service on the App (`app.providers`): the catalog, the credential
 * store, readiness, selection, and the ModelResolver (`app.models`) the agent loop and the compat
 * surface call. Read models (status, selection, wizard, summary, model list) live in reports.ts.
 * @module
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { parentConfigFile } from '../config/parent-config';
import { SvcError } from '../errors';
import { type Catalog, loadCatalog, type RefreshResult, refreshCatalog } from './catalog';
import { defaultSleep, homeOf, type ProviderDeps } from './context';
import { clearWindowCache } from './context-window';
import { type CredentialStore, createCredentialStore } from './credential-store';
import { createLinker, modelInfo } from './linked-models';
import { probeLocalServers } from './local-probe';
import { MeteredLanguageModel } from './metered-model';
import { readSession } from './oauth/chatgpt';
import { buildEntries, type ProviderEntry } from './provider-entries';
import { type Readiness, type ReadinessContext, readiness } from './readiness';
import type { RecoveringLanguageModel } from './recovery';
import { choose, type ParsedSelector, parseSelector, type Selection, type SelectionEnv } from './selection';
import { listServerModels } from './server-models';
import type { ModelInfo, ModelResolver, ResolvedModel, ResolveRequest } from './types';

export interface ProviderService {
  readonly models: ModelResolver;
  readonly store: CredentialStore;
  readonly deps: ProviderDeps;
  catalog(): Catalog;
  entries(): ProviderEntry[];
  entry(id: string): ProviderEntry | undefined;
  readiness(entry: ProviderEntry): Readiness;
  readinessContext(): ReadinessContext;
  /** The selector the next turn uses for this request, and why (no network). */
  select(
    request?: ResolveRequest & { sessionLabel?: string; agentLabel?: string },
    options?: { readout?: boolean },
  ): Selection;
  parse(selector: string): ParsedSelector;
  /** What to do when a provider rejects its credential (which env var, which svc auth command). */
  authHint(providerId: string): string;
  refreshCatalog(source: string, signal?: AbortSignal): Promise<RefreshResult>;
  /** Make every stored secret known to the redactor (status reads never print them anyway). */
  seedSecrets(): void;
}

export function createProviderService(deps: ProviderDeps): ProviderService {
  installWarningSink(deps);
  const store = createCredentialStore({
    env: deps.env,
    backend: deps.config().options.credential_store,
    onSecret: (secret) => deps.redactor.add(secret),
  });
  let memo: { config: unknown; catalog: Catalog; entries: ProviderEntry[] } | undefined;
  const current = () => {
    const config = deps.config();
    if (!memo || memo.config !== config) {
      const catalog = loadCatalog({
        env: deps.env,
        dataDir: deps.dataDir,
        ignoreCache: config.options.disable_provider_auto_update,
      });
      memo = { config, catalog, entries: buildEntries(config, catalog) };
    }
    return memo;
  };
  const readinessContext = (): ReadinessContext => ({
    env: deps.env,
    loaded: deps.loaded(),
    config: deps.config(),
    store,
    dataDir: deps.dataDir,
    workspace: deps.workspace,
  });
  // What the selection reads, taken when it starts; the readiness context and its per-call cache are
  // made on the first readiness asked (a warm request whose selector is decided and whose
  // resolution is kept asks none).
  const selectionEnv = (): SelectionEnv => {
    const loaded = deps.loaded();
    const config = deps.config();
    let context: ReadinessContext | undefined;
    let cache: Map<string, Readiness> | undefined;
    return {
      config,
      entries: current().entries,
      readiness: (entry) => {
        context ??= {
          env: deps.env,
          loaded,
          config,
          store,
          dataDir: deps.dataDir,
          workspace: deps.workspace,
        };
        cache ??= new Map();
        let r = cache.get(entry.id);
        if (!r) {
          r = readiness(entry, context);
          cache.set(entry.id, r);
        }
        return r;
      },
    };
  };

  const service: ProviderService = {
    deps,
    store,
    catalog: () => current().catalog,
    entries: () => current().entries,
    entry: (id) => current().entries.find((e) => e.id === id),
    readiness: (entry) => readiness(entry, readinessContext()),
    readinessContext,
    select: (request = {}, options = {}) => selectIn(request, selectionEnv(), options),
    parse: (selector) => parseSelector(selector, selectionEnv()),
    authHint(providerId) {
      const entry = service.entry(providerId);
      if (!entry) return `check providers.${providerId} in svc.toml`;
      const r = service.readiness(entry);
      const from = r.source ? ` (credential from ${r.source})` : '';
      switch (entry.auth) {
        case 'oauth':
          return `sign in again with svc auth ${entry.oauth_platform ?? entry.id}${from}`;
        case 'cloud':
          return entry.type === 'amazon-bedrock'
            ? `check the AWS identity with svc auth bedrock doctor${from}`
            : `check the cloud identity with svc auth ${entry.type === 'azure' ? 'azure' : 'vertex'} doctor${from}`;
        case 'vendor_cli':
          return `log the vendor CLI in again (check with svc auth ${entry.cli_kind ?? 'claude'})`;
        case 'acp':
          return 'the child agent owns its credentials; check its own login';
        default: {
          const env = entry.api_key_env[0];
          return `replace the key${from}: ${env ? `set ${env}, ` : ''}set providers.${entry.id}.api_key, or store one with svc auth token ${entry.id} --token-stdin${entry.oauth_platform ? ` (or svc auth ${entry.oauth_platform})` : ''}`;
        }
      }
    },
    async refreshCatalog(source, signal) {
      const result = await refreshCatalog({
        env: deps.env,
        workspace: deps.workspace,
        source,
        fetch: deps.fetch,
        now: deps.clock.now,
        ignoreCache: deps.config().options.disable_provider_auto_update,
        signal,
      });
      memo = undefined;
      clearWindowCache(deps.dataDir, deps.env);
      return result;
    },
    seedSecrets() {
      try {
        for (const id of store.list()) store.get(id);
      } catch {
        // An unreadable store is reported by status; nothing to seed.
      }
      const session = readSession(deps.dataDir);
      if (session)
        for (const s of [session.access_token, session.refresh_token, session.id_token]) deps.redactor.add(s);
    },
    models: undefined as unknown as ModelResolver,
  };
  (service as { models: ModelResolver }).models = createResolver(service, selectionEnv);
  return service;
}

/** `ProviderService.select` in a given selection environment (`resolve` reuses the one it reads). */
function selectIn(
  request: ResolveRequest & { sessionLabel?: string; agentLabel?: string },
  env: SelectionEnv,
  options: { readout?: boolean },
): Selection {
  return choose(
    {
      selector: request.selector,
      purpose: request.purpose,
      sessionModel: request.sessionModel,
      agentModel: request.agentModel,
      sessionLabel: request.sessionLabel,
      agentLabel: request.agentLabel,
    },
    env,
    options,
  );
}

function createResolver(service: ProviderService, selectionEnv: () => SelectionEnv): ModelResolver {
  const { deps } = service;
  const sleep = (ms: number, signal?: AbortSignal) => (deps.sleep ?? defaultSleep)(ms, signal);
  const authHint = (provider: string) => service.authHint(provider);
  // Latency is measured on the monotonic clock: the app clock may be fixed (tests) or step.
  const monotonic = () => performance.now();
  const { link, resolveLinked } = createLinker(service);

  const priceOf = (selector: string): ModelInfo => {
    try {
      return modelInfo(service.parse(selector));
    } catch {
      return { id: selector };
    }
  };
  const meter = (inner: RecoveringLanguageModel, request: ResolveRequest): LanguageModelV3 => {
    const sink = service.deps.calls;
    if (!sink) return inner;
    return new MeteredLanguageModel({
      inner,
      sink,
      purpose: request.call_purpose ?? 'agent_step',
      sessionId: request.sessionId,
      runId: request.runId,
      current: () => inner.current,
      priceOf,
      now: monotonic,
    });
  };

  /** Each resolved model's own rebinding to another request (`bind`), while it is alive. */
  const bindable = new WeakMap<ResolvedModel, (request: ResolveRequest, source: string) => ResolvedModel>();

  return {
    bind(resolved, request) {
      const rebind = bindable.get(resolved);
      if (!rebind) return undefined;
      const selection = service.select(request, { readout: false });
      if (selection.source === 'none' || selection.source === 'first_ready') return undefined;
      if (selection.selector !== resolved.selector) return undefined;
      return rebind(request, selection.source);
    },
    async resolve(request: ResolveRequest = {}): Promise<ResolvedModel> {
      const config = deps.config();
      // The credentials' stamp before anything of this request reads them: what a kept resolution
      // holds by (one stat of the credentials file, ./linked-models.ts).
      const credentials = service.store.stamp();
      const env = selectionEnv();
      const selection = selectIn(request, env, { readout: false });
      let parsed: ParsedSelector | undefined;
      let source: string = selection.source;
      if (selection.selector) {
        parsed = parseSelector(selection.selector, env);
        // `[providers.ollama]` with no model set: the catalog's recommendation may not be pulled.
        if (selection.source === 'first_ready' && modelUnset(parsed.entry))
          parsed = await modelFromServer(service, parsed.entry, parsed.model, request.signal);
      } else {
        const unset = firstModelUnset(service);
        if (unset) {
          parsed = await modelFromServer(service, unset, undefined, request.signal);
          source = 'first_ready';
        } else {
          parsed = await probe(service, request.signal);
          source = 'local_server';
          if (!parsed) throw notReadyError(service) ?? noProviderError(config.options.local_probe.urls, deps);
        }
      }
      const { linked, info, window } = await resolveLinked(parsed, env, credentials, request.signal);
      const { primary, fallbacks: unique, Recovering } = linked;
      const { model: modelId } = parsed;
      // The model for one request: its recovery and metering carry the request's session and run.
      const make = (to: ResolveRequest, why: string): ResolvedModel => {
        const language_model = new Recovering({
          primary,
          fallbacks: unique,
          build: (selector) => link(service.parse(selector), to.signal),
          maxRetries: config.options.tpm_recovery.max_retries,
          maxBackoffMs: config.options.tpm_recovery.max_backoff_ms,
          sessionId: to.sessionId,
          runId: to.runId,
          bus: deps.bus,
          log: deps.log,
          sleep,
          authHint,
        });
        const resolved: ResolvedModel = {
          selector: primary.selector,
          provider: primary.provider,
          model_id: modelId,
          language_model: meter(language_model, to),
          info: { ...info },
          source: why,
          window_source: window.source,
        };
        bindable.set(resolved, make);
        return resolved;
      };
      return make(request, source);
    },
  };
}

/** A configured provider that names no model (no `[[providers.<id>.models]]`, no `default_model`). */
function modelUnset(entry: ProviderEntry): boolean {
  return (
    entry.configured &&
    entry.type === 'openai-compat' &&
    !entry.config?.default_model &&
    (entry.config?.models ?? []).length === 0 &&
    (entry.auth === 'local' || entry.catalog === undefined)
  );
}

/** The first configured, ready provider with no model at all (nothing to recommend), config order. */
function firstModelUnset(service: ProviderService): ProviderEntry | undefined {
  return Object.keys(service.deps.config().providers)
    .map((id) => service.entry(id))
    .find(
      (entry): entry is ProviderEntry =>
        entry !== undefined &&
        !entry.disabled &&
        entry.problems.length === 0 &&
        modelUnset(entry) &&
        !entry.default_large &&
        service.readiness(entry).ready,
    );
}

/**
 * A configured provider with no model set: ask its server which models it serves. The
 * recommended one if served, else the only one; with several, or none, a one-line error naming
 * the `[models]` line to add.
 */
async function modelFromServer(
  service: ProviderService,
  entry: ProviderEntry,
  recommended: string | undefined,
  signal?: AbortSignal,
): Promise<ParsedSelector> {
  const { deps } = service;
  const key = service.readiness(entry).credential.value;
  const listed = await listServerModels({
    fetch: deps.fetch,
    base_url: entry.base_url!,
    timeoutMs: deps.config().options.local_probe.window_timeout_ms,
    signal,
    headers: key ? { authorization: `Bearer ${key}` } : undefined,
  });
  const { models } = listed;
  const chosen =
    recommended && models.includes(recommended) ? recommended : models.length === 1 ? models[0] : undefined;
  if (chosen) {
    deps.log.info('model taken from the server', {
      provider: entry.id,
      model: chosen,
      served: models.length,
    });
    return { entry, model: chosen };
  }
  const unset = `no model is set for providers.${entry.id}`;
  if (models.length === 0) {
    throw new SvcError(
      'config_error',
      `${unset}, and its server at ${entry.base_url} listed none (${listed.error ?? 'an empty model list'}); start the server and load a model, or add [models] large = "${entry.id}/<model>" to svc.toml`,
      { details: { provider: entry.id } },
    );
  }
  const shown = models.slice(0, 12).join(', ') + (models.length > 12 ? `, … (${models.length} in all)` : '');
  throw new SvcError(
    'config_error',
    `${unset}, and its server serves ${models.length} models: ${shown}; pick one with [models] large = "${entry.id}/${models[0]}" in svc.toml (or svc run --model ${entry.id}/<model>)`,
    { details: { provider: entry.id, models } },
  );
}

async function probe(service: ProviderService, signal?: AbortSignal): Promise<ParsedSelector | undefined> {
  const { deps } = service;
  const options = deps.config().options.local_probe;
  if (!options.enabled) return undefined;
  const probes = options.urls.map((spec) => {
    const eq = spec.indexOf('=');
    return eq > 0
      ? { provider: spec.slice(0, eq), base_url: spec.slice(eq + 1) }
      : { provider: 'local', base_url: spec };
  });
  const found = await probeLocalServers({ fetch: deps.fetch, probes, timeoutMs: options.timeout_ms, signal });
  if (!found) return undefined;
  deps.log.info('local model server found', {
    provider: found.provider,
    base_url: found.base_url,
    models: found.models.length,
  });
  const template = service.entry(found.provider);
  const entry: ProviderEntry = {
    ...(template ?? {
      id: found.provider,
      name: found.provider,
      type: 'openai-compat',
      api_key_env: [],
      models: [],
      refreshed: false,
      problems: [],
      disabled: false,
    }),
    auth: 'local',
    configured: true,
    base_url: found.base_url,
    open_models: true,
    key_optional: true,
  } as ProviderEntry;
  const preferred =
    template?.default_large && found.models.includes(template.default_large)
      ? template.default_large
      : found.models[0];
  return { entry, model: preferred };
}

/** Providers are configured but none can serve a turn: say which and why, not "none configured". */
function notReadyError(service: ProviderService): SvcError | undefined {
  const entries = Object.keys(service.deps.config().providers)
    .map((id) => service.entry(id))
    .filter((e): e is ProviderEntry => e !== undefined && !e.disabled);
  const first = entries[0];
  if (!first) return undefined;
  const reason =
    service.readiness(first).reason ??
    `no model is set; add [models] large = "${first.id}/<model>" to svc.toml`;
  const more = entries.length > 1 ? ` (and ${entries.length - 1} more configured)` : '';
  return new SvcError(
    'config_error',
    `providers.${first.id} is configured but cannot serve a turn${more}: ${reason}; no local model server answered either. svc config show-provider-status says what each provider still needs`,
    { details: { provider: first.id } },
  );
}

function noProviderError(probes: string[], deps: Pick<ProviderDeps, 'workspace' | 'env'>): SvcError {
  const where = probes.map((p) => p.split('=').pop()).join(', ');
  // The workspace is the current directory: a project's svc.toml above it is not read.
  const above = parentConfigFile(deps.workspace, homeOf(deps.env));
  const hint = above
    ? `; ${above.file} is in a parent directory: run svc from there or pass --cwd ${above.root}`
    : '';
  return new SvcError(
    'config_error',
    [
      `no model provider is configured, and no local model server answered${hint}.`,
      'Add one of:',
      '  - an API key in the environment: export ANTHROPIC_API_KEY=… (or OPENAI_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY, GROQ_API_KEY, MISTRAL_API_KEY, XAI_API_KEY, DEEPSEEK_API_KEY, HF_TOKEN, …)',
      '  - a local server in svc.toml: [providers.ollama] base_url = "http://127.0.0.1:11434/v1", then [models] large = "ollama/<model>"',
      '  - a sign-in: svc auth copilot, svc auth openrouter, svc auth chatgpt or svc auth hyper',
      '  - cloud identity: AWS credentials + AWS_REGION (amazon-bedrock), GOOGLE_VERTEX_PROJECT + GOOGLE_VERTEX_LOCATION (google-vertex), AZURE_OPENAI_ENDPOINT + AZURE_OPENAI_API_KEY (azure)',
      `svc config show-provider-status shows what each provider still needs. (Probed: ${where}.)`,
    ].join('\n'),
  );
}

/**
 * The AI SDK prints warnings to the console by default; stdout belongs to the MCP stdio transport
 * and the TUI, so warnings go to the log instead (process-wide hook, latest App wins).
 */
function installWarningSink(deps: ProviderDeps) {
  (globalThis as { AI_SDK_LOG_WARNINGS?: unknown }).AI_SDK_LOG_WARNINGS = (options: {
    warnings: unknown[];
    provider?: string;
    model?: string;
  }) => {
    deps.log.warn('ai sdk warnings', {
      provider: options.provider,
      model: options.model,
      warnings: options.warnings,
    });
  };
}
