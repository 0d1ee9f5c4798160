/**
 * What building one provider's language model takes: the request (entry, model id, resolved
 * credential) plus what ./build-model.ts derives once for every type (the fetch with the
 * response timeout, the configured headers). Shared by the builders of each kind of provider.
 * @module
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { lazily } from '../util/lazy';
import type { ProviderDeps } from './context';
import type { CredentialStore } from './credential-store';
import type { CredentialResolution } from './credentials';
import { leanChunkValidation, leanStreaming, onceComputedRequest } from './openai-compatible-lean';
import type { ProviderEntry } from './provider-entries';

/** Imported on first use, asked once. */
const openAICompatibleModule = lazily(() => import('@ai-sdk/openai-compatible'));

/** Loads the OpenAI-compatible SDK now (a service's start-up: ../app/warm.ts). */
export async function preloadOpenAICompatible(): Promise<void> {
  await openAICompatibleModule();
}

export interface BuildRequest {
  deps: ProviderDeps;
  store: CredentialStore;
  entry: ProviderEntry;
  modelId: string;
  credential: CredentialResolution;
  signal?: AbortSignal;
}

export interface ModelBuild {
  request: BuildRequest;
  /** The deps' fetch with the provider's response timeout. */
  fetchFn: typeof fetch;
  headers: Record<string, string> | undefined;
}

/**
 * An OpenAI-compatible chat model at the entry's base URL, with usage in streamed replies and the
 * URL and headers computed once and the lighter check of plain stream chunks
 * (./openai-compatible-lean.ts).
 */
export async function openAICompatible(
  entry: { id: string; base_url?: string },
  modelId: string,
  options: { apiKey?: string; headers?: Record<string, string>; fetch: typeof fetch },
): Promise<LanguageModelV3> {
  const { createOpenAICompatible } = await openAICompatibleModule();
  const model = createOpenAICompatible({
    name: entry.id,
    baseURL: entry.base_url!,
    includeUsage: true,
    ...options,
  })(modelId);
  // URL and headers computed once, plain stream chunks without zod (./openai-compatible-lean.ts).
  onceComputedRequest(model);
  leanChunkValidation(model);
  leanStreaming(model);
  return model;
}
