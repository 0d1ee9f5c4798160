/**
 * The models of the subscription providers (Copilot, Hyper, ChatGPT): their tokens refresh
 * themselves, so every request gets fresh auth headers, and each token goes to the redactor.
 * @module
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { VERSION } from '../version';
import { type ModelBuild, openAICompatible } from './build-request';
import { chatgptAccess, chatgptSettings } from './oauth/chatgpt';
import { COPILOT_HEADERS, copilotAccess, copilotSettings } from './oauth/copilot';
import { hyperAccess, hyperSettings } from './oauth/hyper';

/** GitHub Copilot: the OAuth token exchanged for a short-lived API token. */
export async function copilotModel(build: ModelBuild): Promise<LanguageModelV3> {
  const { deps, entry, modelId } = build.request;
  const { fetchFn, headers } = build;
  const settings = copilotSettings(deps.config().auth);
  const authed = authedFetch(fetchFn, async (signal) => {
    const token = await copilotAccess({
      store: build.request.store,
      settings,
      fetch: fetchFn,
      now: deps.clock.now,
      signal,
    });
    deps.redactor.add(token);
    return { authorization: `Bearer ${token}`, ...COPILOT_HEADERS };
  });
  return openAICompatible(entry, modelId, { headers, fetch: authed });
}

/** Hyper: the configured key, or the stored OAuth session. */
export async function hyperModel(build: ModelBuild): Promise<LanguageModelV3> {
  const { deps, entry, modelId, credential } = build.request;
  const { fetchFn, headers } = build;
  const settings = hyperSettings(deps.config().auth);
  const authed = authedFetch(fetchFn, async (signal) => {
    const token =
      credential.value ??
      (await hyperAccess({
        store: build.request.store,
        settings,
        fetch: fetchFn,
        now: deps.clock.now,
        signal,
      }));
    deps.redactor.add(token);
    return { authorization: `Bearer ${token}` };
  });
  return openAICompatible(entry, modelId, { headers, fetch: authed });
}

/** ChatGPT: the Codex backend, the Responses API with the login session as bearer. */
export async function chatgptModel(build: ModelBuild): Promise<LanguageModelV3> {
  const { deps, entry, modelId } = build.request;
  const { fetchFn, headers } = build;
  const settings = chatgptSettings(deps.config().auth);
  const authed = authedFetch(fetchFn, async (signal) => {
    const session = await chatgptAccess({
      dataDir: deps.dataDir,
      settings,
      fetch: fetchFn,
      now: deps.clock.now,
      signal,
    });
    deps.redactor.add(session.access_token);
    deps.redactor.add(session.refresh_token);
    return {
      authorization: `Bearer ${session.access_token}`,
      ...(session.account_id ? { 'chatgpt-account-id': session.account_id } : {}),
      originator: 'svc',
      'user-agent': `svc/${VERSION}`,
    };
  });
  const { createOpenAI } = await import('@ai-sdk/openai');
  // The Codex backend speaks the Responses API with the session as bearer (not an API key).
  return createOpenAI({
    apiKey: 'chatgpt-session',
    baseURL: entry.base_url,
    headers,
    fetch: authed,
  }).responses(modelId);
}

/** A fetch that adds fresh auth headers to every request (tokens that refresh themselves). */
function authedFetch(
  fetchFn: typeof fetch,
  auth: (signal?: AbortSignal) => Promise<Record<string, string>>,
): typeof fetch {
  return (async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    const extra = await auth(init?.signal ?? undefined);
    const headers = new Headers(init?.headers);
    for (const [k, v] of Object.entries(extra)) headers.set(k, v);
    return fetchFn(input, { ...init, headers });
  }) as typeof fetch;
}
