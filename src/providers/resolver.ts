/**
 * Minimal model resolver over configured providers (foundation). The providers issue replaces the
 * internals (catalog, credentials, cloud identity, recovery) behind the same ModelResolver
 * contract. AI SDK packages are imported lazily: they are heavy and most commands never need them.
 * @module
 */
import type { Config, ProviderConfig } from '../config/schema';
import { SvcError } from '../errors';
import type { ModelResolver, ResolvedModel, ResolveRequest } from './types';

export interface ResolverDeps {
  config: () => Config;
  env: Readonly<Record<string, string | undefined>>;
  fetch?: typeof fetch;
}

export function parseSelector(selector: string): { provider: string; model: string } | undefined {
  const slash = selector.indexOf('/');
  if (slash <= 0 || slash === selector.length - 1) return undefined;
  return { provider: selector.slice(0, slash), model: selector.slice(slash + 1) };
}

export function createModelResolver(deps: ResolverDeps): ModelResolver {
  return {
    async resolve(request: ResolveRequest = {}) {
      const config = deps.config();
      const purpose = request.purpose ?? 'large';
      const candidates: [string | null | undefined, string][] = [
        [request.selector, 'explicit'],
        [request.sessionModel, 'session'],
        [request.agentModel, 'agent'],
        [
          purpose === 'small' ? (config.models.small ?? config.models.large) : config.models.large,
          `config models.${purpose}`,
        ],
      ];
      const chosen = candidates.find(([s]) => typeof s === 'string' && s.length > 0);
      if (!chosen) {
        throw new SvcError(
          'config_error',
          'no model configured: set [models] large = "<provider>/<model>" and a [providers.<id>] block in svc.toml (for a local server: base_url = "http://127.0.0.1:11434/v1")',
        );
      }
      const [selector, source] = chosen as [string, string];
      const parsed = parseSelector(selector);
      if (!parsed)
        throw new SvcError('invalid_input', `model: "${selector}" is not a <provider>/<model> selector`);
      const provider = config.providers[parsed.provider];
      if (!provider) {
        throw new SvcError(
          'not_found',
          `model: provider "${parsed.provider}" is not configured; add [providers.${parsed.provider}] to svc.toml`,
        );
      }
      return {
        selector,
        provider: parsed.provider,
        model_id: parsed.model,
        language_model: await buildLanguageModel(parsed.provider, provider, parsed.model, deps),
        info: { id: parsed.model, ...provider.models?.find((m) => m.id === parsed.model) },
        source,
      } satisfies ResolvedModel;
    },
  };
}

async function buildLanguageModel(id: string, provider: ProviderConfig, model: string, deps: ResolverDeps) {
  // The AI SDK prints warnings to the console by default; stdout belongs to the MCP stdio
  // transport and the TUI, so they are turned off process-wide.
  (globalThis as { AI_SDK_LOG_WARNINGS?: unknown }).AI_SDK_LOG_WARNINGS = false;
  const type = provider.type ?? 'openai-compat';
  const apiKey = provider.api_key ?? 'unused';
  const common = { baseURL: provider.base_url, apiKey, headers: provider.headers, fetch: deps.fetch };
  switch (type) {
    case 'openai': {
      const { createOpenAI } = await import('@ai-sdk/openai');
      return createOpenAI(common).chat(model);
    }
    case 'anthropic':
    case 'anthropic-compat': {
      const { createAnthropic } = await import('@ai-sdk/anthropic');
      return createAnthropic(common)(model);
    }
    case 'google': {
      const { createGoogleGenerativeAI } = await import('@ai-sdk/google');
      return createGoogleGenerativeAI(common)(model);
    }
    default: {
      if (!provider.base_url)
        throw new SvcError('config_error', `providers.${id}.base_url: required for type ${type}`);
      const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
      return createOpenAICompatible({
        name: id,
        baseURL: provider.base_url,
        apiKey,
        headers: provider.headers,
        fetch: deps.fetch,
        includeUsage: true,
      })(model);
    }
  }
}
