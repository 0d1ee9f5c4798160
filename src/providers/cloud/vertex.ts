/**
 * Google Vertex AI identity: a project id and a location from config or the environment, and a
 * credential source: an express-mode API key, a service-account file
 * (GOOGLE_APPLICATION_CREDENTIALS), gcloud application-default credentials, or the ambient
 * metadata server (only checkable at the first call).
 * @module
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type Env, expandHome, firstEnv, homeOf, withSvcOverrides } from '../context';
import type { CredentialResolution } from '../credentials';
import type { ProviderEntry } from '../provider-entries';

export const VERTEX_PROJECT_ENV = withSvcOverrides([
  'GOOGLE_VERTEX_PROJECT',
  'GOOGLE_CLOUD_PROJECT',
  'VERTEXAI_PROJECT',
]);
export const VERTEX_LOCATION_ENV = withSvcOverrides([
  'GOOGLE_VERTEX_LOCATION',
  'GOOGLE_CLOUD_LOCATION',
  'VERTEXAI_LOCATION',
]);

export interface VertexInspection {
  provider: string;
  project: string | null;
  project_source: string | null;
  location: string | null;
  location_source: string | null;
  credential: 'api_key' | 'service_account_file' | 'application_default' | 'metadata_server';
  credential_detail: string;
  key_file?: string;
  ready: boolean;
  problems: string[];
}

export function inspectVertex(
  entry: ProviderEntry,
  env: Env,
  apiKey: CredentialResolution,
): VertexInspection {
  const options = entry.config?.provider_options ?? {};
  const project = options.project
    ? { name: `providers.${entry.id}.provider_options.project`, value: options.project }
    : firstEnv(env, VERTEX_PROJECT_ENV);
  const location = options.location
    ? { name: `providers.${entry.id}.provider_options.location`, value: options.location }
    : firstEnv(env, VERTEX_LOCATION_ENV);
  const problems: string[] = [];
  if (!project)
    problems.push(
      `${entry.id}: no project id: set GOOGLE_VERTEX_PROJECT (or GOOGLE_CLOUD_PROJECT) or provider_options.project`,
    );
  if (!location)
    problems.push(
      `${entry.id}: no location: set GOOGLE_VERTEX_LOCATION (or GOOGLE_CLOUD_LOCATION) or provider_options.location`,
    );

  let credential: VertexInspection['credential'] = 'metadata_server';
  let detail = 'ambient metadata server (checked at the first call)';
  let keyFile: string | undefined;
  const sa = firstEnv(env, withSvcOverrides(['GOOGLE_APPLICATION_CREDENTIALS']));
  const adc = join(
    expandHome(env.CLOUDSDK_CONFIG || join(homeOf(env), '.config', 'gcloud'), env),
    'application_default_credentials.json',
  );
  if (apiKey.value) {
    credential = 'api_key';
    detail = `express-mode API key from ${apiKey.source!.label}`;
  } else if (sa) {
    credential = 'service_account_file';
    keyFile = sa.value;
    detail = `env ${sa.name}${existsSync(sa.value) ? '' : ' (file not found)'}`;
    if (!existsSync(sa.value))
      problems.push(`${entry.id}: ${sa.name} points to ${sa.value}, which does not exist`);
  } else if (existsSync(adc)) {
    credential = 'application_default';
    keyFile = adc;
    detail = `gcloud application-default credentials (${adc})`;
  }
  return {
    provider: entry.id,
    project: project?.value ?? null,
    project_source: project ? label(project.name) : null,
    location: location?.value ?? null,
    location_source: location ? label(location.name) : null,
    credential,
    credential_detail: detail,
    key_file: keyFile,
    ready: problems.length === 0,
    problems,
  };
}

function label(name: string): string {
  return /^[A-Z_]+$/.test(name) ? `env ${name}` : name;
}
