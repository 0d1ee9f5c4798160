/**
 * Builds the AI SDK language model for one provider entry and model id. Every provider package is
 * imported here, lazily (this module itself is only loaded when a turn needs a model). Values the
 * packages would otherwise read from `process.env` (keys, regions) are always passed explicitly:
 * the App's env is the only source.
 * @module
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { SvcError } from '../errors';
import { type BuildRequest, type ModelBuild, openAICompatible } from './build-request';
import { azureModel, bedrockModel, vertexModel } from './cloud-models';
import { missingKeyHint } from './credentials';
import { createLeanTransport, isProcessFetch } from './http-transport';
import { attachLeanTransport } from './openai-compatible-lean';
import { PLAIN_KEY_TYPES } from './plain-key-types';
import { acpModel, vendorCliModel } from './process-models';
import { withPromptMessages } from './prompt-messages';
import type { ProviderEntry } from './provider-entries';
import { withSerializedTools } from './request-body';
import { chatgptModel, copilotModel, hyperModel } from './subscription-models';
import { providerTimeoutSeconds, withResponseTimeout } from './timeout';

export { preloadOpenAICompatible } from './build-request';

export type { BuildRequest };

/**
 * Provider types whose model is a pure function of the entry (type, base URL, headers), the model
 * id, the key and the fetch: built once and reused (the SDK model objects are stateless, and
 * building one is not free: the OpenAI-compatible one compiles its zod chunk schema). The cache
 * hangs off the entry object, which the provider service rebuilds when the config changes.
 * Types with refreshing tokens, cloud identity or child processes are built every time.
 */
const CACHEABLE = PLAIN_KEY_TYPES;
const MAX_MODELS_PER_ENTRY = 32;
const built = new WeakMap<ProviderEntry, Map<string, { fetch: typeof fetch; model: LanguageModelV3 }>>();

/**
 * Provider types whose request carries a function tool's description and JSON Schema verbatim:
 * those are encoded once per process and spliced into each request (./request-body.ts).
 */
const VERBATIM_TOOLS = new Set<ProviderEntry['type']>([
  'openai-compat',
  'openai',
  'anthropic',
  'anthropic-compat',
]);

/** Whether this entry's models are built once per model id and key and reused (see CACHEABLE). */
export function reusesModel(entry: ProviderEntry): boolean {
  return CACHEABLE.has(entry.type);
}

export async function buildLanguageModel(request: BuildRequest): Promise<LanguageModelV3> {
  const { deps, entry, modelId, credential } = request;
  if (!CACHEABLE.has(entry.type)) return createLanguageModel(request);
  const key = `${modelId}\u0000${credential.value ?? ''}`;
  let models = built.get(entry);
  const hit = models?.get(key);
  if (hit && hit.fetch === deps.fetch) return hit.model;
  const created = await createLanguageModel(request);
  const model = VERBATIM_TOOLS.has(entry.type) ? withSerializedTools(created) : created;
  if (!models) {
    models = new Map();
    built.set(entry, models);
  }
  if (models.size >= MAX_MODELS_PER_ENTRY) models.clear();
  models.set(key, { fetch: deps.fetch, model });
  return model;
}

async function createLanguageModel(request: BuildRequest): Promise<LanguageModelV3> {
  const { deps, entry, modelId, credential } = request;
  const headers = entry.config?.headers;
  const fetchFn = withResponseTimeout(deps.fetch, providerTimeoutSeconds(entry.config), entry.id);
  const needKey = (): string => {
    if (credential.value) return credential.value;
    throw new SvcError('unauthorized', credential.missing ?? missingKeyHint(entry), {
      details: { provider: entry.id },
    });
  };
  // A loopback server needs no key; SDKs that insist on one get a placeholder.
  const keyOrLocal = (): string | undefined =>
    credential.value ?? (entry.auth === 'local' || entry.key_optional ? undefined : needKey());
  const common = () => ({
    apiKey: keyOrLocal() ?? 'local',
    baseURL: entry.base_url,
    headers,
    fetch: fetchFn,
  });
  const build: ModelBuild = { request, fetchFn, headers };
  const type = entry.type;
  switch (type) {
    case 'anthropic':
    case 'anthropic-compat': {
      const { createAnthropic } = await import('@ai-sdk/anthropic');
      return createAnthropic({
        apiKey: keyOrLocal() ?? 'local',
        baseURL: entry.base_url,
        headers,
        fetch: fetchFn,
      })(modelId);
    }
    case 'openai': {
      const { createOpenAI } = await import('@ai-sdk/openai');
      return createOpenAI({
        apiKey: keyOrLocal() ?? 'local',
        baseURL: entry.base_url,
        headers,
        fetch: fetchFn,
      }).chat(modelId);
    }
    case 'google': {
      const { createGoogleGenerativeAI } = await import('@ai-sdk/google');
      return createGoogleGenerativeAI(common())(modelId);
    }
    case 'google-vertex':
      return vertexModel(build);
    case 'amazon-bedrock':
      return bedrockModel(build);
    case 'azure':
      return azureModel(build);
    case 'openrouter': {
      const { createOpenRouter } = await import('@openrouter/ai-sdk-provider');
      return createOpenRouter({ ...common(), compatibility: 'strict' }).chat(
        modelId,
      ) as unknown as LanguageModelV3;
    }
    case 'groq': {
      const { createGroq } = await import('@ai-sdk/groq');
      return createGroq(common())(modelId);
    }
    case 'mistral': {
      const { createMistral } = await import('@ai-sdk/mistral');
      return createMistral(common())(modelId);
    }
    case 'xai': {
      const { createXai } = await import('@ai-sdk/xai');
      return createXai(common()).chat(modelId);
    }
    case 'deepseek': {
      const { createDeepSeek } = await import('@ai-sdk/deepseek');
      return createDeepSeek(common())(modelId);
    }
    case 'cerebras': {
      const { createCerebras } = await import('@ai-sdk/cerebras');
      return createCerebras(common())(modelId);
    }
    case 'togetherai': {
      const { createTogetherAI } = await import('@ai-sdk/togetherai');
      return createTogetherAI(common())(modelId);
    }
    case 'fireworks': {
      const { createFireworks } = await import('@ai-sdk/fireworks');
      return createFireworks(common())(modelId);
    }
    case 'deepinfra': {
      const { createDeepInfra } = await import('@ai-sdk/deepinfra');
      return createDeepInfra(common())(modelId);
    }
    case 'huggingface': {
      const { createHuggingFace } = await import('@ai-sdk/huggingface');
      return createHuggingFace(common())(modelId);
    }
    case 'copilot':
      return copilotModel(build);
    case 'hyper':
      return hyperModel(build);
    case 'chatgpt':
      return chatgptModel(build);
    case 'openai-compat': {
      const model = await openAICompatible(entry, modelId, { apiKey: keyOrLocal(), headers, fetch: fetchFn });
      // With the process's own fetch, its streamed requests go by node:http (./http-transport.ts).
      if (isProcessFetch(deps.fetch))
        attachLeanTransport(
          model,
          createLeanTransport({
            seconds: providerTimeoutSeconds(entry.config),
            provider: entry.id,
            fallback: fetchFn,
          }),
        );
      // Its fetch is sendOnce's (./timeout.ts), which puts the messages' bytes back.
      return withPromptMessages(model);
    }
    case 'vendor-cli':
      return vendorCliModel(build);
    case 'acp':
      return acpModel(build);
    default: {
      const never: never = type;
      throw new SvcError('config_error', `providers.${entry.id}.type: unsupported type ${never}`);
    }
  }
}
