/**
 * The models of the cloud providers that authenticate with a cloud identity (Vertex, Bedrock,
 * Azure): the inspection of the settings and credentials, then the SDK's factory.
 * @module
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { SvcError } from '../errors';
import type { ModelBuild } from './build-request';
import { azureTokenProvider, inspectAzure } from './cloud/azure';
import { bedrockSettings } from './cloud/bedrock';
import { inspectVertex } from './cloud/vertex';

/** Google Vertex: an API key, or a service-account key file. */
export async function vertexModel(build: ModelBuild): Promise<LanguageModelV3> {
  const { deps, entry, modelId, credential } = build.request;
  const { fetchFn, headers } = build;
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

/** Amazon Bedrock: keys, a profile or the container identity; the secrets go to the redactor. */
export async function bedrockModel(build: ModelBuild): Promise<LanguageModelV3> {
  const { deps, entry, modelId } = build.request;
  const { fetchFn, headers } = build;
  const settings = await bedrockSettings({
    entry,
    env: deps.env,
    store: build.request.store,
    auth: deps.config().auth.bedrock ?? {},
    fetch: fetchFn,
    signal: build.request.signal,
  });
  for (const secret of settings.secrets) deps.redactor.add(secret);
  const { createAmazonBedrock } = await import('@ai-sdk/amazon-bedrock');
  const { secrets: _secrets, ...options } = settings;
  return createAmazonBedrock({ ...options, baseURL: entry.config?.base_url, headers, fetch: fetchFn })(
    modelId,
  );
}

/** Azure OpenAI: a key or the directory (Entra) identity; dated API versions use deployment URLs. */
export async function azureModel(build: ModelBuild): Promise<LanguageModelV3> {
  const { deps, entry, modelId, credential } = build.request;
  const { fetchFn, headers } = build;
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
