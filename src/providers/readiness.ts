/**
 * Is a provider usable right now, from which credential source, and if not, what to do. Static:
 * no network (a local server is ready because it needs no key, not because it answered).
 * @module
 */
import type { LoadedConfig } from '../config/load';
import type { Config } from '../config/schema';
import { type AzureInspection, inspectAzure } from './cloud/azure';
import { type BedrockInspection, inspectBedrock } from './cloud/bedrock';
import { inspectVertex, type VertexInspection } from './cloud/vertex';
import type { Env } from './context';
import type { CredentialStore } from './credential-store';
import { type CredentialResolution, type CredentialSourceKind, resolveApiKey } from './credentials';
import { readSession, sessionCachePath } from './oauth/chatgpt';
import { whichBinary } from './process-model';
import type { AuthKind, ProviderEntry } from './provider-entries';
import { CLI_KINDS, type CliKind, cliCommand, isCliKind } from './vendor-cli';

export interface ReadinessContext {
  env: Env;
  loaded: LoadedConfig;
  config: Config;
  store: CredentialStore;
  dataDir: string;
  workspace: string;
}

export interface LaunchPosture {
  command: string;
  args: string[];
  resolved_path: string | null;
  transport: 'vendor-cli (prompt on stdin, JSON on stdout)' | 'acp (JSON-RPC over stdio)';
  process: 'one per turn';
  /** The child keeps its own login; svc stores no credential for it. */
  credentials: 'owned by the child process';
}

export interface Readiness {
  ready: boolean;
  /** Why not ready, with the fix; null when ready. */
  reason: string | null;
  auth: AuthKind;
  source_kind: CredentialSourceKind | 'cloud_identity' | 'local' | 'vendor_cli' | 'acp';
  /** The credential source, never the secret. */
  source: string | null;
  ambiguous: boolean;
  ambiguity: string | null;
  credential: CredentialResolution;
  expires_at?: string;
  cloud?: BedrockInspection | VertexInspection | AzureInspection;
  launch?: LaunchPosture;
}

export function readiness(entry: ProviderEntry, ctx: ReadinessContext): Readiness {
  const credential = resolveApiKey(entry, { env: ctx.env, loaded: ctx.loaded, store: ctx.store });
  const base = {
    auth: entry.auth,
    ambiguous: credential.ambiguous,
    ambiguity: credential.ambiguity ?? null,
    credential,
  };
  if (entry.problems.length) {
    return answer(base, false, entry.problems[0], 'none', null);
  }
  if (entry.disabled) {
    return answer(base, false, `${entry.id}: disabled (providers.${entry.id}.disabled = true)`, 'none', null);
  }
  switch (entry.auth) {
    case 'api_key':
      if (!credential.value && entry.key_optional) {
        // AUTH-16: a local server on a loopback base_url needs no service-managed key.
        return answer(base, true, null, 'local', `loopback ${entry.base_url} (no key needed)`);
      }
      return answer(
        base,
        Boolean(credential.value),
        credential.value ? null : (credential.missing ?? null),
        credential.source?.kind ?? 'none',
        credential.source?.label ?? null,
      );
    case 'local':
      return answer(
        base,
        entry.configured,
        entry.configured
          ? null
          : `${entry.id}: not configured; add [providers.${entry.id}] (base_url ${entry.base_url ?? '…'}, no key needed) to use it`,
        'local',
        entry.configured ? `loopback ${entry.base_url} (no key needed)` : null,
      );
    case 'cloud':
      return cloud(entry, ctx, credential, base);
    case 'oauth':
      return oauth(entry, ctx, credential, base);
    case 'vendor_cli':
    case 'acp':
      return child(entry, ctx, base);
    default: {
      const never: never = entry.auth;
      return answer(base, false, `unknown auth ${never}`, 'none', null);
    }
  }
}

/**
 * `{ ...base, ready, reason, source_kind, source }` as one literal: on Node 20 each property
 * defined after a spread goes through V8's runtime and the answer gets a map of its own (every
 * request asks its provider's readiness, p-sqlprofile).
 */
function answer(
  base: Pick<Readiness, 'auth' | 'ambiguous' | 'ambiguity' | 'credential'>,
  ready: boolean,
  reason: string | null,
  source_kind: Readiness['source_kind'],
  source: string | null,
): Readiness {
  return {
    auth: base.auth,
    ambiguous: base.ambiguous,
    ambiguity: base.ambiguity,
    credential: base.credential,
    ready,
    reason,
    source_kind,
    source,
  };
}

type Base = Pick<Readiness, 'auth' | 'ambiguous' | 'ambiguity' | 'credential'>;

function cloud(
  entry: ProviderEntry,
  ctx: ReadinessContext,
  credential: CredentialResolution,
  base: Base,
): Readiness {
  if (entry.type === 'amazon-bedrock') {
    const inspection = inspectBedrock({
      entry,
      env: ctx.env,
      store: ctx.store,
      auth: ctx.config.auth.bedrock ?? {},
    });
    const bearerSources = inspection.sources.filter((s) => s.present && /bearer/.test(s.source));
    return {
      ...base,
      ambiguous: bearerSources.length > 1 || base.ambiguous,
      ambiguity:
        bearerSources.length > 1
          ? `${bearerSources.map((s) => s.detail).join(' and ')} both hold a bearer token; ${inspection.source_detail} is used`
          : base.ambiguity,
      ready: inspection.ready,
      reason: inspection.ready ? null : inspection.problems.join('; '),
      source_kind: 'cloud_identity',
      source: inspection.source ? `${inspection.source}: ${inspection.source_detail}` : null,
      cloud: inspection,
    };
  }
  if (entry.type === 'google-vertex') {
    const inspection = inspectVertex(entry, ctx.env, credential);
    return {
      ...base,
      ready: inspection.ready,
      reason: inspection.ready ? null : inspection.problems.join('; '),
      source_kind: 'cloud_identity',
      source: `${inspection.credential}: ${inspection.credential_detail}`,
      cloud: inspection,
    };
  }
  const inspection = inspectAzure(entry, ctx.env, credential);
  return {
    ...base,
    ready: inspection.ready,
    reason: inspection.ready ? null : inspection.problems.join('; '),
    source_kind: 'cloud_identity',
    source: `${inspection.credential}: ${inspection.credential_detail}`,
    cloud: inspection,
  };
}

function oauth(
  entry: ProviderEntry,
  ctx: ReadinessContext,
  credential: CredentialResolution,
  base: Base,
): Readiness {
  const platform = entry.oauth_platform ?? entry.type;
  if (entry.type === 'chatgpt') {
    const session = readSession(ctx.dataDir);
    return {
      ...base,
      ready: Boolean(session),
      reason: session ? null : `${entry.id}: not signed in; run svc auth chatgpt`,
      source_kind: 'oauth',
      source: session
        ? `ChatGPT session (${session.origin}; cached in ${sessionCachePath(ctx.dataDir)})`
        : null,
      expires_at: session ? new Date(session.expires_at).toISOString() : undefined,
    };
  }
  // Hyper also takes a plain API key (HYPER_API_KEY) instead of the device flow.
  if (credential.value) {
    return {
      ...base,
      ready: true,
      reason: null,
      source_kind: credential.source!.kind,
      source: credential.source!.label,
    };
  }
  const stored = ctx.store.get(entry.id);
  const ready = Boolean(stored?.refresh);
  return {
    ...base,
    ready,
    reason: ready ? null : `${entry.id}: not signed in; run svc auth ${platform}`,
    source_kind: 'oauth',
    source: ready ? `credential store (${ctx.store.status().backend}, ${stored!.stored_by})` : null,
    expires_at: stored?.expires_at ? new Date(stored.expires_at).toISOString() : undefined,
  };
}

function child(entry: ProviderEntry, ctx: ReadinessContext, base: Base): Readiness {
  const vendor = entry.auth === 'vendor_cli';
  const kind = entry.cli_kind ?? '';
  const command = vendor
    ? cliCommand((isCliKind(kind) ? kind : 'claude') as CliKind, ctx.config.auth, entry.config?.command)
    : (entry.config?.command ?? '');
  const path = command ? whichBinary(command, ctx.env, ctx.workspace) : undefined;
  const launch: LaunchPosture = {
    command,
    args: entry.config?.args ?? [],
    resolved_path: path ?? null,
    transport: vendor ? 'vendor-cli (prompt on stdin, JSON on stdout)' : 'acp (JSON-RPC over stdio)',
    process: 'one per turn',
    credentials: 'owned by the child process',
  };
  const name = vendor && isCliKind(kind) ? CLI_KINDS[kind].name : entry.name;
  return {
    ...base,
    ambiguous: false,
    ambiguity: null,
    ready: Boolean(path),
    reason: path
      ? null
      : `${entry.id}: \`${command || '(no command)'}\` is not on PATH; install ${name}${vendor && isCliKind(kind) ? ` and check with svc auth ${kind}` : ` or set providers.${entry.id}.command`}`,
    source_kind: vendor ? 'vendor_cli' : 'acp',
    source: path ? `${vendor ? 'vendor CLI' : 'ACP child'} ${path} (its own login)` : null,
    launch,
  };
}

/** Env var names worth showing for a provider (API key vars and cloud identity vars). */
export function envNamesOf(entry: ProviderEntry): string[] {
  switch (entry.type) {
    case 'amazon-bedrock':
      return [
        'AWS_ACCESS_KEY_ID',
        'AWS_SECRET_ACCESS_KEY',
        'AWS_SESSION_TOKEN',
        'AWS_REGION',
        'AWS_DEFAULT_REGION',
        'AWS_PROFILE',
        'AWS_DEFAULT_PROFILE',
        'AWS_BEARER_TOKEN_BEDROCK',
        'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
        'AWS_CONTAINER_CREDENTIALS_FULL_URI',
      ];
    case 'google-vertex':
      return [
        'GOOGLE_VERTEX_PROJECT',
        'GOOGLE_VERTEX_LOCATION',
        'GOOGLE_APPLICATION_CREDENTIALS',
        ...entry.api_key_env,
      ];
    case 'azure':
      return [
        'AZURE_OPENAI_ENDPOINT',
        'AZURE_OPENAI_API_KEY',
        'AZURE_OPENAI_API_VERSION',
        'AZURE_RESOURCE_NAME',
      ];
    default:
      return entry.api_key_env;
  }
}
