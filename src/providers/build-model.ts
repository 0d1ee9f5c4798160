/**
 * Builds the AI SDK language model for one provider entry and model id. Every provider package is
 * imported here, lazily (this module itself is only loaded when a turn needs a model). Values the
 * packages would otherwise read from `process.env` (keys, regions) are always passed explicitly:
 * the App's env is the only source.
 * @module
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { SvcError } from '../errors';
import { VERSION } from '../version';
import { AcpLanguageModel } from './acp';
import { azureTokenProvider, inspectAzure } from './cloud/azure';
import { bedrockSettings } from './cloud/bedrock';
import { inspectVertex } from './cloud/vertex';
import type { ProviderDeps } from './context';
import type { CredentialStore } from './credential-store';
import { type CredentialResolution, missingKeyHint } from './credentials';
import { chatgptAccess, chatgptSettings } from './oauth/chatgpt';
import { COPILOT_HEADERS, copilotAccess, copilotSettings } from './oauth/copilot';
import { hyperAccess, hyperSettings } from './oauth/hyper';
import { whichBinary } from './process-model';
import type { ProviderEntry } from './provider-entries';
import { providerTimeoutSeconds, withResponseTimeout } from './timeout';
import { CLI_KINDS, type CliKind, cliCommand, isCliKind, VendorCliLanguageModel } from './vendor-cli';

export interface BuildRequest {
  deps: ProviderDeps;
  store: CredentialStore;
  entry: ProviderEntry;
  modelId: string;
  credential: CredentialResolution;
  signal?: AbortSignal;
}

/**
 * Provider types whose model is a pure function of the entry (type, base URL, headers), the model
 * id, the key and the fetch: built once and reused (the SDK model objects are stateless, and
 * building one is not free: the OpenAI-compatible one compiles its zod chunk schema). The cache
 * hangs off the entry object, which the provider service rebuilds when the config changes.
 * Types with refreshing tokens, cloud identity or child processes are built every time.
 */
const CACHEABLE = new Set<ProviderEntry['type']>([
  'anthropic',
  'anthropic-compat',
  'openai',
  'google',
  'openrouter',
  'groq',
  'mistral',
  'xai',
  'deepseek',
  'cerebras',
  'togetherai',
  'fireworks',
  'deepinfra',
  'huggingface',
  'openai-compat',
]);
const MAX_MODELS_PER_ENTRY = 32;
const built = new WeakMap<ProviderEntry, Map<string, { fetch: typeof fetch; model: LanguageModelV3 }>>();

export async function buildLanguageModel(request: BuildRequest): Promise<LanguageModelV3> {
  const { deps, entry, modelId, credential } = request;
  if (!CACHEABLE.has(entry.type)) return createLanguageModel(request);
  const key = `${modelId}\u0000${credential.value ?? ''}`;
  let models = built.get(entry);
  const hit = models?.get(key);
  if (hit && hit.fetch === deps.fetch) return hit.model;
  const model = await createLanguageModel(request);
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
    case 'google-vertex': {
      const inspection = inspectVertex(entry, deps.env, credential);
      if (!inspection.ready)
        throw new SvcError('config_error', inspection.problems.join('; '), {
          details: { provider: entry.id },
        });
      const { createVertex } = await import('@ai-sdk/google-vertex');
      return createVertex({
        project: inspection.project!,
        location: inspection.location!,
        baseURL: entry.config?.base_url,
        headers,
        fetch: fetchFn,
        ...(credential.value
          ? { apiKey: credential.value }
          : // apiKey '' keeps the SDK from reading GOOGLE_VERTEX_API_KEY from process.env.
            {
              apiKey: '',
              googleAuthOptions: { keyFilename: inspection.key_file, projectId: inspection.project! },
            }),
      })(modelId);
    }
    case 'amazon-bedrock': {
      const settings = await bedrockSettings({
        entry,
        env: deps.env,
        store: request.store,
        auth: deps.config().auth.bedrock ?? {},
        fetch: fetchFn,
        signal: request.signal,
      });
      for (const secret of settings.secrets) deps.redactor.add(secret);
      const { createAmazonBedrock } = await import('@ai-sdk/amazon-bedrock');
      const { secrets: _secrets, ...options } = settings;
      return createAmazonBedrock({ ...options, baseURL: entry.config?.base_url, headers, fetch: fetchFn })(
        modelId,
      );
    }
    case 'azure': {
      const inspection = inspectAzure(entry, deps.env, credential);
      if (!inspection.ready)
        throw new SvcError('config_error', inspection.problems.join('; '), {
          details: { provider: entry.id },
        });
      const { createAzure } = await import('@ai-sdk/azure');
      const dated = /^\d{4}-\d{2}-\d{2}/.test(inspection.api_version);
      return createAzure({
        baseURL: inspection.base_url!,
        apiVersion: inspection.api_version,
        useDeploymentBasedUrls: dated,
        headers,
        fetch: fetchFn,
        ...(inspection.credential === 'directory_identity'
          ? { tokenProvider: azureTokenProvider(deps.env, fetchFn) }
          : { apiKey: credential.value! }),
      }).chat(modelId);
    }
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
    case 'copilot': {
      const settings = copilotSettings(deps.config().auth);
      const authed = authedFetch(fetchFn, async (signal) => {
        const token = await copilotAccess({
          store: request.store,
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
    case 'hyper': {
      const settings = hyperSettings(deps.config().auth);
      const authed = authedFetch(fetchFn, async (signal) => {
        const token =
          credential.value ??
          (await hyperAccess({
            store: request.store,
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
    case 'chatgpt': {
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
    case 'openai-compat': {
      return openAICompatible(entry, modelId, { apiKey: keyOrLocal(), headers, fetch: fetchFn });
    }
    case 'vendor-cli': {
      const kind = (entry.cli_kind ?? entry.config?.type) as CliKind;
      const cli: CliKind = isCliKind(kind) ? kind : guessKind(entry.config?.command);
      const command = cliCommand(cli, deps.config().auth, entry.config?.command);
      const path = whichBinary(command, deps.env, deps.workspace);
      if (!path)
        throw new SvcError(
          'unavailable',
          `${entry.id}: ${CLI_KINDS[cli].name} is not installed (\`${command}\` is not on PATH); check with svc auth ${cli}`,
        );
      return new VendorCliLanguageModel(entry.id, modelId, {
        kind: cli,
        path,
        args: entry.config?.args,
        env: deps.env,
        cwd: deps.workspace,
      });
    }
    case 'acp': {
      const command = entry.config?.command;
      const path = command ? whichBinary(command, deps.env, deps.workspace) : undefined;
      if (!path)
        throw new SvcError(
          'unavailable',
          `${entry.id}: the ACP child agent \`${command ?? '(no command)'}\` is not found; set providers.${entry.id}.command`,
        );
      return new AcpLanguageModel(entry.id, modelId, {
        path,
        args: entry.config?.args ?? [],
        env: deps.env,
        cwd: deps.workspace,
      });
    }
    default: {
      const never: never = type;
      throw new SvcError('config_error', `providers.${entry.id}.type: unsupported type ${never}`);
    }
  }
}

function guessKind(command: string | undefined): CliKind {
  const base = (command ?? '').split('/').pop() ?? '';
  if (base.includes('codex')) return 'codex';
  if (base.includes('gemini')) return 'gemini';
  return 'claude';
}

/** An OpenAI-compatible chat model at the entry's base URL, with usage in streamed replies. */
async function openAICompatible(
  entry: { id: string; base_url?: string },
  modelId: string,
  options: { apiKey?: string; headers?: Record<string, string>; fetch: typeof fetch },
): Promise<LanguageModelV3> {
  const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
  return createOpenAICompatible({ name: entry.id, baseURL: entry.base_url!, includeUsage: true, ...options })(
    modelId,
  );
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
