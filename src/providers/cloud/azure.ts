/**
 * Azure OpenAI identity: an endpoint (or resource name), an API key unless directory (Entra)
 * identity is used, and an API version. Directory identity supports a client secret, a workload
 * identity federated token file, and managed identity (App Service / IMDS).
 * @module
 */
import { readFileSync } from 'node:fs';
import { SvcError } from '../../errors';
import { type Env, firstEnv, withSvcOverrides } from '../context';
import type { CredentialResolution } from '../credentials';
import type { ProviderEntry } from '../provider-entries';

export const AZURE_ENDPOINT_ENV = withSvcOverrides(['AZURE_OPENAI_ENDPOINT']);
export const AZURE_RESOURCE_ENV = withSvcOverrides(['AZURE_RESOURCE_NAME']);
export const AZURE_VERSION_ENV = withSvcOverrides(['AZURE_OPENAI_API_VERSION']);
export const AZURE_DEFAULT_API_VERSION = 'v1';
const COGNITIVE_SCOPE = 'https://cognitiveservices.azure.com/.default';

export type DirectoryIdentity = 'client_secret' | 'workload_identity' | 'managed_identity';

export interface AzureInspection {
  provider: string;
  endpoint: string | null;
  endpoint_source: string | null;
  /** The base URL handed to the SDK (`…/openai`). */
  base_url: string | null;
  api_version: string;
  api_version_source: string;
  credential: 'api_key' | 'directory_identity' | 'none';
  credential_detail: string;
  directory_identity?: DirectoryIdentity;
  ready: boolean;
  problems: string[];
}

export function inspectAzure(entry: ProviderEntry, env: Env, apiKey: CredentialResolution): AzureInspection {
  const options = entry.config?.provider_options ?? {};
  const problems: string[] = [];
  const endpoint = entry.config?.base_url
    ? { name: `providers.${entry.id}.base_url`, value: entry.config.base_url }
    : firstEnv(env, AZURE_ENDPOINT_ENV);
  const resource = options.resource_name
    ? { name: `providers.${entry.id}.provider_options.resource_name`, value: options.resource_name }
    : firstEnv(env, AZURE_RESOURCE_ENV);
  let baseUrl: string | null = null;
  if (endpoint) {
    const trimmed = endpoint.value.replace(/\/+$/, '');
    baseUrl =
      /\/openai(\/v1)?$/.test(trimmed) || !/\.azure\.com$/.test(safeHost(trimmed))
        ? trimmed
        : `${trimmed}/openai`;
  } else if (resource && !/^[A-Za-z0-9-]+$/.test(resource.value)) {
    // Only a name: anything else moves the host (`127.0.0.1:8443/steal?` sent the key there).
    problems.push(
      `${entry.id}: ${resource.name} must be an Azure resource name (letters, digits and -), not ${JSON.stringify(resource.value.slice(0, 80))}; use providers.${entry.id}.base_url for a full endpoint`,
    );
  } else if (resource) {
    baseUrl = `https://${resource.value}.openai.azure.com/openai`;
  } else {
    problems.push(
      `${entry.id}: no endpoint: set AZURE_OPENAI_ENDPOINT (or AZURE_RESOURCE_NAME) or providers.${entry.id}.base_url`,
    );
  }
  const version = options.api_version
    ? { name: `providers.${entry.id}.provider_options.api_version`, value: options.api_version }
    : firstEnv(env, AZURE_VERSION_ENV);
  const identity = options.use_directory_identity === true ? directoryIdentity(env) : undefined;
  let credential: AzureInspection['credential'] = 'none';
  let detail = 'none';
  if (options.use_directory_identity === true) {
    credential = 'directory_identity';
    detail = identity
      ? `directory identity (${identity.kind}: ${identity.detail})`
      : 'directory identity (managed identity via IMDS)';
  } else if (apiKey.value) {
    credential = 'api_key';
    detail = apiKey.source!.label;
  } else {
    problems.push(
      `${entry.id}: no API key: set AZURE_OPENAI_API_KEY or providers.${entry.id}.api_key, or set provider_options.use_directory_identity = true`,
    );
  }
  const endpointOrResource = endpoint ?? resource;
  return {
    provider: entry.id,
    endpoint: endpointOrResource?.value ?? null,
    endpoint_source: endpointOrResource ? label(endpointOrResource.name) : null,
    base_url: baseUrl,
    api_version: version?.value ?? AZURE_DEFAULT_API_VERSION,
    api_version_source: version ? label(version.name) : 'default',
    credential,
    credential_detail: detail,
    directory_identity: identity?.kind ?? (options.use_directory_identity ? 'managed_identity' : undefined),
    ready: problems.length === 0,
    problems,
  };
}

function directoryIdentity(env: Env): { kind: DirectoryIdentity; detail: string } {
  const tenant = firstEnv(env, withSvcOverrides(['AZURE_TENANT_ID']));
  const client = firstEnv(env, withSvcOverrides(['AZURE_CLIENT_ID']));
  if (tenant && client && firstEnv(env, withSvcOverrides(['AZURE_CLIENT_SECRET'])))
    return { kind: 'client_secret', detail: `env ${tenant.name}, ${client.name}, AZURE_CLIENT_SECRET` };
  if (tenant && client && firstEnv(env, withSvcOverrides(['AZURE_FEDERATED_TOKEN_FILE'])))
    return {
      kind: 'workload_identity',
      detail: `env ${tenant.name}, ${client.name}, AZURE_FEDERATED_TOKEN_FILE`,
    };
  if (firstEnv(env, ['IDENTITY_ENDPOINT']) && firstEnv(env, ['IDENTITY_HEADER']))
    return { kind: 'managed_identity', detail: 'env IDENTITY_ENDPOINT (App Service)' };
  return { kind: 'managed_identity', detail: 'IMDS' };
}

/** A bearer token provider for directory identity, cached until a minute before expiry. */
export function azureTokenProvider(env: Env, fetchFn: typeof fetch): () => Promise<string> {
  let cached: { token: string; expires: number } | undefined;
  return async () => {
    if (cached && cached.expires - 60_000 > Date.now()) return cached.token;
    const { kind } = directoryIdentity(env);
    const authority = (
      firstEnv(env, ['AZURE_AUTHORITY_HOST'])?.value ?? 'https://login.microsoftonline.com'
    ).replace(/\/+$/, '');
    const tenant = firstEnv(env, withSvcOverrides(['AZURE_TENANT_ID']))?.value;
    const client = firstEnv(env, withSvcOverrides(['AZURE_CLIENT_ID']))?.value;
    let response: Response;
    try {
      if (kind === 'client_secret' || kind === 'workload_identity') {
        const body = new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: client!,
          scope: COGNITIVE_SCOPE,
        });
        if (kind === 'client_secret')
          body.set('client_secret', firstEnv(env, withSvcOverrides(['AZURE_CLIENT_SECRET']))!.value);
        else {
          body.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
          body.set(
            'client_assertion',
            readFileSync(
              firstEnv(env, withSvcOverrides(['AZURE_FEDERATED_TOKEN_FILE']))!.value,
              'utf8',
            ).trim(),
          );
        }
        response = await fetchFn(`${authority}/${tenant}/oauth2/v2.0/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body,
          signal: AbortSignal.timeout(15_000),
        });
      } else {
        const resource = 'https://cognitiveservices.azure.com';
        const identityEndpoint = firstEnv(env, ['IDENTITY_ENDPOINT']);
        const url = identityEndpoint
          ? `${identityEndpoint.value}?api-version=2019-08-01&resource=${encodeURIComponent(resource)}${client ? `&client_id=${client}` : ''}`
          : `${firstEnv(env, ['AZURE_IMDS_ENDPOINT'])?.value ?? 'http://169.254.169.254'}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=${encodeURIComponent(resource)}${client ? `&client_id=${client}` : ''}`;
        const headers: Record<string, string> = identityEndpoint
          ? { 'x-identity-header': firstEnv(env, ['IDENTITY_HEADER'])!.value }
          : { metadata: 'true' };
        response = await fetchFn(url, { headers, signal: AbortSignal.timeout(5_000) });
      }
    } catch (error) {
      throw new SvcError(
        'unavailable',
        `azure directory identity (${kind}): token endpoint unreachable (${(error as Error).message})`,
      );
    }
    if (!response.ok)
      throw new SvcError(
        'unauthorized',
        `azure directory identity (${kind}): token request answered ${response.status}; check AZURE_TENANT_ID/AZURE_CLIENT_ID and the role assignment (Cognitive Services OpenAI User)`,
      );
    const body = (await response.json()) as {
      access_token?: string;
      expires_in?: number | string;
      expires_on?: number | string;
    };
    if (!body.access_token)
      throw new SvcError('unauthorized', `azure directory identity (${kind}): no access_token in the answer`);
    const expires = body.expires_on
      ? Number(body.expires_on) * 1000
      : Date.now() + Number(body.expires_in ?? 3600) * 1000;
    cached = { token: body.access_token, expires };
    return body.access_token;
  };
}

function safeHost(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
}

function label(name: string): string {
  return /^[A-Z_]+$/.test(name) ? `env ${name}` : name;
}
