/**
 * Amazon Bedrock identity (spec, Cloud identity): access key id, secret access key, optional
 * session token, region, named profile and bearer token from the environment (AWS_ names), with
 * default-region/default-profile fallbacks and `SVC_`-prefixed process-local overrides that win.
 * `provider_options.auth_source` pins the source (auto | env | profile | bearer | container); in
 * auto a stored bearer token wins over ambient bearer env vars. Container mode reads the
 * container-credentials relative/full URI and still requires a region.
 * @module
 */
import { readFileSync } from 'node:fs';
import { SvcError } from '../../errors';
import { type Env, firstEnv, withSvcOverrides } from '../context';
import type { CredentialStore } from '../credential-store';
import { keychainName } from '../credentials';
import type { ProviderEntry } from '../provider-entries';
import { type AwsCredentials, profileCredentials, profileKind, readProfile } from './aws-profile';

export type AuthSource = 'auto' | 'env' | 'profile' | 'bearer' | 'container';
export type BedrockSource =
  | 'stored_bearer'
  | 'config_bearer'
  | 'env_keys'
  | 'env_bearer'
  | 'profile'
  | 'container';

export interface BedrockSourceReport {
  source: BedrockSource;
  present: boolean;
  detail: string;
  note?: string;
}

export interface BedrockInspection {
  provider: string;
  auth_source: AuthSource;
  /** False when auth_source is unset (it then behaves as auto). */
  auth_source_configured: boolean;
  source: BedrockSource | null;
  source_detail: string | null;
  region: string | null;
  region_source: string | null;
  profile: string | null;
  profile_source: string | null;
  ready: boolean;
  problems: string[];
  /** Every source of the family, present or not (what `svc auth bedrock doctor` prints). */
  sources: BedrockSourceReport[];
}

export interface BedrockContext {
  entry: ProviderEntry;
  env: Env;
  store: CredentialStore;
  /** `[auth.bedrock]` (container_host for tests and custom metadata endpoints). */
  auth: Record<string, string>;
}

const AUTO_ORDER: BedrockSource[] = [
  'stored_bearer',
  'config_bearer',
  'env_keys',
  'env_bearer',
  'profile',
  'container',
];
const PINNED: Record<Exclude<AuthSource, 'auto'>, BedrockSource[]> = {
  env: ['env_keys'],
  profile: ['profile'],
  bearer: ['stored_bearer', 'config_bearer', 'env_bearer'],
  container: ['container'],
};

interface Found {
  report: BedrockSourceReport;
  token?: string;
  keys?: AwsCredentials;
  profile?: string;
  containerUrl?: string;
}

export function inspectBedrock(ctx: BedrockContext): BedrockInspection {
  const { entry, env } = ctx;
  const options = entry.config?.provider_options ?? {};
  const problems: string[] = [];
  const authSource: AuthSource = options.auth_source ?? 'auto';

  const profileFrom = options.profile
    ? { name: `providers.${entry.id}.provider_options.profile`, value: options.profile }
    : firstEnv(env, [...withSvcOverrides(['AWS_PROFILE']), ...withSvcOverrides(['AWS_DEFAULT_PROFILE'])]);
  const profileName = profileFrom?.value ?? 'default';
  const profile = readProfile(env, profileName);

  const found = new Map<BedrockSource, Found>();
  for (const f of collect(ctx, profileName, profileFrom !== undefined)) found.set(f.report.source, f);

  const order = authSource === 'auto' ? AUTO_ORDER : PINNED[authSource];
  const chosen = order.map((s) => found.get(s)).find((f) => f?.report.present);

  const regionFrom = options.region
    ? { name: `providers.${entry.id}.provider_options.region`, value: options.region }
    : (firstEnv(env, [...withSvcOverrides(['AWS_REGION']), ...withSvcOverrides(['AWS_DEFAULT_REGION'])]) ??
      (profile?.values.region
        ? { name: `aws profile ${profileName} region`, value: profile.values.region }
        : undefined));

  if (!chosen) {
    problems.push(
      authSource === 'auto'
        ? `${entry.id}: no AWS credentials: set AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY, AWS_PROFILE, AWS_BEARER_TOKEN_BEDROCK, or store a token with svc auth bedrock token ${entry.id} --token-stdin`
        : `${entry.id}: auth_source = "${authSource}" but ${pinnedHint(authSource, entry.id)}`,
    );
  }
  if (!regionFrom) {
    problems.push(
      `${entry.id}: no region: set providers.${entry.id}.provider_options.region, AWS_REGION or AWS_DEFAULT_REGION${authSource === 'container' ? ' (container mode still requires a region)' : ''}`,
    );
  }
  return {
    provider: entry.id,
    auth_source: authSource,
    auth_source_configured: options.auth_source !== undefined,
    source: chosen?.report.source ?? null,
    source_detail: chosen?.report.detail ?? null,
    region: regionFrom?.value ?? null,
    region_source: regionFrom ? sourceLabel(regionFrom.name) : null,
    profile: profile || profileFrom ? profileName : null,
    profile_source: profileFrom ? sourceLabel(profileFrom.name) : profile ? 'implicit default profile' : null,
    ready: problems.length === 0,
    problems,
    sources: [...found.values()].map((f) => f.report),
  };
}

/** AI SDK settings for createAmazonBedrock: a bearer apiKey, static keys, or a credential provider. */
export async function bedrockSettings(
  ctx: BedrockContext & { fetch: typeof fetch; signal?: AbortSignal },
): Promise<{
  region: string;
  apiKey: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  sessionToken?: string;
  credentialProvider?: () => Promise<AwsCredentials>;
  secrets: string[];
}> {
  const inspection = inspectBedrock(ctx);
  if (!inspection.ready) {
    throw new SvcError('config_error', inspection.problems.join('; '), {
      details: { provider: ctx.entry.id, auth_source: inspection.auth_source },
    });
  }
  const region = inspection.region!;
  const profileName = inspection.profile ?? 'default';
  const found = collect(ctx, profileName, inspection.profile_source !== 'implicit default profile').find(
    (f) => f.report.source === inspection.source,
  )!;
  switch (found.report.source) {
    case 'stored_bearer':
    case 'config_bearer':
    case 'env_bearer':
      return { region, apiKey: found.token!, secrets: [found.token!] };
    case 'env_keys':
      // apiKey '' keeps the SDK from falling back to process.env AWS_BEARER_TOKEN_BEDROCK.
      return {
        region,
        apiKey: '',
        ...found.keys!,
        secrets: [found.keys!.secretAccessKey, found.keys!.sessionToken ?? ''],
      };
    case 'profile': {
      const profile = readProfile(ctx.env, profileName)!;
      return {
        region,
        apiKey: '',
        credentialProvider: cached(() => profileCredentials(profile, ctx.signal)),
        secrets: [],
      };
    }
    case 'container':
      return {
        region,
        apiKey: '',
        credentialProvider: cached(() =>
          containerCredentials(found.containerUrl!, ctx.env, ctx.fetch, ctx.signal),
        ),
        secrets: [],
      };
    default: {
      const never: never = found.report.source;
      throw new SvcError('internal', `unknown bedrock source ${never}`);
    }
  }
}

function collect(ctx: BedrockContext, profileName: string, profileExplicit: boolean): Found[] {
  const { entry, env, store } = ctx;
  const out: Found[] = [];

  // Stored bearer: the provider's keychain sentinel, or a token `svc auth bedrock token` stored.
  const apiKey = entry.config?.api_key;
  const keychain = keychainName(apiKey);
  const storedName = keychain ?? entry.id;
  const stored = store.get(storedName);
  const storedToken = stored?.value ?? stored?.access;
  out.push({
    report: {
      source: 'stored_bearer',
      present: Boolean(storedToken),
      detail: `credential store entry "${storedName}" (${store.status().backend})`,
      note:
        keychain && !storedToken
          ? `api_key = "keychain:${keychain}" but nothing is stored under it`
          : undefined,
    },
    token: storedToken,
  });
  const configToken = apiKey && !keychain ? apiKey : undefined;
  out.push({
    report: {
      source: 'config_bearer',
      present: Boolean(configToken),
      detail: `providers.${entry.id}.api_key`,
    },
    token: configToken,
  });

  const svcKeys = firstEnv(env, ['SVC_AWS_ACCESS_KEY_ID']) || firstEnv(env, ['SVC_AWS_SECRET_ACCESS_KEY']);
  const prefix = svcKeys ? 'SVC_' : '';
  const access = firstEnv(env, [`${prefix}AWS_ACCESS_KEY_ID`]);
  const secret = firstEnv(env, [`${prefix}AWS_SECRET_ACCESS_KEY`]);
  const session = firstEnv(env, [`${prefix}AWS_SESSION_TOKEN`]);
  out.push({
    report: {
      source: 'env_keys',
      present: Boolean(access && secret),
      detail: `env ${prefix}AWS_ACCESS_KEY_ID + ${prefix}AWS_SECRET_ACCESS_KEY${session ? ` + ${prefix}AWS_SESSION_TOKEN` : ''}`,
      note:
        access && !secret
          ? `${prefix}AWS_SECRET_ACCESS_KEY is missing`
          : secret && !access
            ? `${prefix}AWS_ACCESS_KEY_ID is missing`
            : svcKeys
              ? 'SVC_ overrides win over the plain AWS_ variables'
              : undefined,
    },
    keys:
      access && secret
        ? { accessKeyId: access.value, secretAccessKey: secret.value, sessionToken: session?.value }
        : undefined,
  });

  const bearer = firstEnv(env, withSvcOverrides(['AWS_BEARER_TOKEN_BEDROCK']));
  out.push({
    report: {
      source: 'env_bearer',
      present: Boolean(bearer),
      detail: `env ${bearer?.name ?? 'AWS_BEARER_TOKEN_BEDROCK'}`,
      note: bearer && storedToken ? 'a stored bearer token is picked first in auto mode' : undefined,
    },
    token: bearer?.value,
  });

  const profile = readProfile(env, profileName);
  const kind = profile ? profileKind(profile) : undefined;
  const usableProfile =
    profile !== undefined && kind !== 'empty' && (profileExplicit || kind === 'static' || kind === 'process');
  out.push({
    report: {
      source: 'profile',
      present: usableProfile,
      detail: profile
        ? `aws profile ${profileName} (${kind}; ${profile.files.join(', ')})`
        : `aws profile ${profileName}`,
      note:
        profileExplicit && !profile
          ? `profile ${profileName} is not in the AWS config or credentials file`
          : undefined,
    },
    profile: profileName,
  });

  const relative = firstEnv(env, withSvcOverrides(['AWS_CONTAINER_CREDENTIALS_RELATIVE_URI']));
  const full = firstEnv(env, withSvcOverrides(['AWS_CONTAINER_CREDENTIALS_FULL_URI']));
  const host = (ctx.auth.container_host ?? 'http://169.254.170.2').replace(/\/+$/, '');
  const containerUrl = relative
    ? `${host}${relative.value.startsWith('/') ? '' : '/'}${relative.value}`
    : full?.value;
  out.push({
    report: {
      source: 'container',
      present: Boolean(containerUrl),
      detail: relative
        ? `env ${relative.name}`
        : full
          ? `env ${full.name}`
          : 'env AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI',
    },
    containerUrl,
  });
  return out;
}

async function containerCredentials(
  url: string,
  env: Env,
  fetchFn: typeof fetch,
  signal?: AbortSignal,
): Promise<AwsCredentials> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const tokenFile = firstEnv(env, withSvcOverrides(['AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE']));
  const token = tokenFile
    ? readFileSync(tokenFile.value, 'utf8').trim()
    : firstEnv(env, withSvcOverrides(['AWS_CONTAINER_AUTHORIZATION_TOKEN']))?.value;
  if (token) headers.authorization = token;
  let response: Response;
  try {
    const timeout = AbortSignal.timeout(5_000);
    response = await fetchFn(url, { headers, signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
  } catch (error) {
    throw new SvcError(
      'unavailable',
      `bedrock container credentials: ${url} unreachable (${(error as Error).message})`,
    );
  }
  if (!response.ok)
    throw new SvcError('unauthorized', `bedrock container credentials: ${url} answered ${response.status}`);
  const body = (await response.json()) as Record<string, string>;
  if (!body.AccessKeyId || !body.SecretAccessKey)
    throw new SvcError(
      'unauthorized',
      `bedrock container credentials: ${url} returned no AccessKeyId/SecretAccessKey`,
    );
  return {
    accessKeyId: body.AccessKeyId,
    secretAccessKey: body.SecretAccessKey,
    sessionToken: body.Token,
    expiration: body.Expiration ? Date.parse(body.Expiration) : undefined,
  };
}

/** Reuse fetched credentials until five minutes before they expire. */
function cached(load: () => Promise<AwsCredentials>): () => Promise<AwsCredentials> {
  let current: AwsCredentials | undefined;
  return async () => {
    if (!current || (current.expiration !== undefined && current.expiration - 300_000 < Date.now())) {
      current = await load();
    }
    return current;
  };
}

function pinnedHint(source: Exclude<AuthSource, 'auto'>, id: string): string {
  switch (source) {
    case 'env':
      return 'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or their SVC_ overrides) are not both set';
    case 'profile':
      return 'no usable AWS profile (set provider_options.profile or AWS_PROFILE to a profile in ~/.aws/config or ~/.aws/credentials)';
    case 'bearer':
      return `no bearer token: store one with svc auth bedrock token ${id} --token-stdin, or set AWS_BEARER_TOKEN_BEDROCK`;
    case 'container':
      return 'neither AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor AWS_CONTAINER_CREDENTIALS_FULL_URI is set';
    default: {
      const never: never = source;
      return never;
    }
  }
}

function sourceLabel(name: string): string {
  return /^[A-Z_]+$/.test(name) ? `env ${name}` : name;
}
