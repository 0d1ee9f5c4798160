/**
 * The provider catalog: the embedded JSON (bundled into dist) plus refreshed metadata cached in
 * the user cache dir (`$XDG_CACHE_HOME/svc/providers.json`, never the workspace) by an explicit
 * `svc update-providers`. What a refreshed catalog may change is catalog-guard.ts's rule (metadata
 * only for built-in providers). With `options.disable_provider_auto_update` the cache is ignored
 * and only the embedded catalog is used (spec, config keys).
 * @module
 */
import { copyFileSync, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { userCacheDir } from '../config/load';
import { SvcError } from '../errors';
import { makeDirs } from '../util/make-dirs';
import embedded from './catalog.json';
import {
  describeChanges,
  type GuardResult,
  guardCatalog,
  type ProviderChange,
  type Refusal,
} from './catalog-guard';

// Lenient where a refreshed file may omit things; strict on what the resolver relies on.
const catalogModelSchema = z.looseObject({
  id: z.string().min(1),
  name: z.string().optional(),
  context_window: z.number().int().positive().optional(),
  max_output: z.number().int().positive().optional(),
  cost_per_1m_in: z.number().nonnegative().optional(),
  cost_per_1m_out: z.number().nonnegative().optional(),
  cost_per_1m_in_cached: z.number().nonnegative().optional(),
  tool_call: z.boolean().optional(),
  reasoning: z.boolean().optional(),
  attachments: z.boolean().optional(),
  created: z.number().int().nonnegative().optional(),
});

export const PROVIDER_TYPES = [
  'anthropic',
  'openai',
  'google',
  'google-vertex',
  'amazon-bedrock',
  'azure',
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
  'copilot',
  'hyper',
  'chatgpt',
  'openai-compat',
  'anthropic-compat',
  'vendor-cli',
  'acp',
] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];

const catalogProviderSchema = z.looseObject({
  id: z
    .string()
    .regex(/^[a-z0-9][a-z0-9._-]*$/, 'provider id: lowercase letters, digits, . _ -')
    .describe('Provider id, the first part of a selector.'),
  name: z.string().min(1),
  type: z.enum(PROVIDER_TYPES),
  auth: z.enum(['api_key', 'cloud', 'oauth', 'local', 'vendor_cli', 'acp']),
  api_key_env: z.array(z.string().regex(/^[A-Z][A-Z0-9_]*$/)).default([]),
  base_url: z.string().optional(),
  default_large_model: z.string().optional(),
  default_small_model: z.string().optional(),
  oauth_platform: z.string().optional(),
  cli_kind: z.string().optional(),
  /** Any model id is accepted (local servers: the models are whatever is loaded). */
  open_models: z.boolean().optional(),
  models: z.array(catalogModelSchema),
});

export const catalogSchema = z.looseObject({
  schema_version: z.literal(1),
  version: z.string().min(1),
  updated_at: z.string().optional(),
  providers: z.array(catalogProviderSchema).min(1),
});

export type CatalogModel = z.output<typeof catalogModelSchema>;
export type CatalogProvider = z.output<typeof catalogProviderSchema> & {
  source: 'embedded' | 'cache';
  /** Added by a refreshed catalog (not built in): a credential only from the user's own config. */
  catalog_only?: boolean;
};
export type CatalogFile = z.output<typeof catalogSchema>;

export interface CacheStatus {
  /** `<user cache dir>/providers.json`; undefined when there is no user cache dir (no HOME). */
  path?: string;
  exists: boolean;
  /** disable_provider_auto_update is on: the cache is not used. */
  ignored: boolean;
  valid?: boolean;
  error?: string;
  refreshed_at?: string;
  refreshed_from?: string;
  version?: string;
  /** A catalog cache in the data dir (where it used to be; a cloned repository can carry one): never read. */
  legacy_ignored?: string;
  /** Per provider id, what of the cached catalog was not taken (src/providers/catalog-guard.ts). */
  refused?: Record<string, Refusal[]>;
}

export interface Catalog {
  providers: CatalogProvider[];
  embedded_version: string;
  cache: CacheStatus;
  get(id: string): CatalogProvider | undefined;
}

interface CacheFile {
  refreshed_at: string;
  refreshed_from: string;
  catalog: unknown;
}

/** The largest catalog a refresh takes (and the largest cache read, with room for its wrapper). */
export const MAX_CATALOG_BYTES = 4 * 1024 * 1024;
const MAX_CACHE_BYTES = 2 * MAX_CATALOG_BYTES;

/** Where the refreshed catalog is kept: the user cache dir, never the workspace. */
export function catalogCachePath(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const dir = userCacheDir(env as Record<string, string | undefined>);
  return dir ? join(dir, 'providers.json') : undefined;
}

/** Where the cache used to be (the data dir): a workspace can carry it, so it is not read. */
export function legacyCatalogCachePath(dataDir: string): string {
  return join(dataDir, 'cache', 'providers.json');
}

export function parseCatalog(value: unknown, origin: string): CatalogFile {
  const result = catalogSchema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new SvcError(
      'invalid_input',
      `catalog ${origin}: ${issue.path.join('.') || '(root)'}: ${issue.message}; nothing was replaced`,
      {
        details: {
          issues: result.error.issues
            .slice(0, 5)
            .map((i) => ({ path: i.path.join('.'), message: i.message })),
        },
      },
    );
  }
  const seen = new Set<string>();
  for (const provider of result.data.providers) {
    if (seen.has(provider.id))
      throw new SvcError(
        'invalid_input',
        `catalog ${origin}: provider "${provider.id}" appears twice; nothing was replaced`,
      );
    seen.add(provider.id);
  }
  return result.data;
}

/**
 * The embedded catalog, used as bundled: it is validated at test time (test/providers/catalog.test.ts
 * parses it with `catalogSchema` and requires the result to equal the file, so no default is
 * missing), not on every start (issue 17: ~5 ms of each `svc run`). Cached and refreshed catalogs
 * are still parsed.
 */
export function embeddedCatalog(): CatalogFile {
  return embedded as CatalogFile;
}

type Guarded = Omit<GuardResult, 'providers'> & {
  providers: (CatalogFile['providers'][number] & { catalog_only?: boolean })[];
};

/** The guard keeps each provider's validated values (or the built-in ones): the types still hold. */
function guard(catalog: CatalogFile): Guarded {
  return guardCatalog(catalog, embeddedCatalog(), PROVIDER_TYPES) as Guarded;
}

/** The cache file parsed and guarded; throws (an SvcError) when it is unusable. */
function readCache(path: string): { file: CacheFile; parsed: CatalogFile; guarded: Guarded } {
  const size = statSync(path).size;
  if (size > MAX_CACHE_BYTES) throw tooLarge(path, size, MAX_CACHE_BYTES, 'it is not used');
  const file = JSON.parse(readFileSync(path, 'utf8')) as CacheFile;
  const parsed = parseCatalog(file?.catalog, path);
  return { file, parsed, guarded: guard(parsed) };
}

/**
 * The effective catalog: embedded, with the cached providers' metadata over the built-in ones (by
 * id) and the providers the cache adds, as catalog-guard.ts allows.
 */
export function loadCatalog(options: {
  env: Readonly<Record<string, string | undefined>>;
  dataDir: string;
  ignoreCache: boolean;
}): Catalog {
  const base = embeddedCatalog();
  const path = catalogCachePath(options.env);
  const cache: CacheStatus = {
    path,
    exists: path !== undefined && existsSync(path),
    ignored: options.ignoreCache,
  };
  const legacy = legacyCatalogCachePath(options.dataDir);
  if (existsSync(legacy)) cache.legacy_ignored = legacy;
  const providers = new Map<string, CatalogProvider>(
    base.providers.map((p) => [p.id, { ...p, source: 'embedded' as const }]),
  );
  if (path && cache.exists) {
    try {
      const { file, parsed, guarded } = readCache(path);
      cache.valid = true;
      cache.refreshed_at = file.refreshed_at;
      cache.refreshed_from = file.refreshed_from;
      cache.version = parsed.version;
      if (guarded.refused.size) cache.refused = Object.fromEntries(guarded.refused);
      if (!options.ignoreCache)
        for (const p of guarded.providers) providers.set(p.id, { ...p, source: 'cache' });
    } catch (error) {
      cache.valid = false;
      cache.error = SvcError.is(error) ? error.message : `unreadable: ${(error as Error).message}`;
    }
  }
  const list = [...providers.values()];
  return { providers: list, embedded_version: base.version, cache, get: (id) => providers.get(id) };
}

export interface RefreshResult {
  path: string;
  source: string;
  version: string;
  providers: number;
  models: number;
  added: string[];
  updated: string[];
  /** Per provider: models added, updated, removed, and the fields not taken with the reason. */
  changes: ProviderChange[];
  /** The previous cache, kept once (`providers.json.bak`), when there was one. */
  backup?: string;
  refreshed_at: string;
  /** disable_provider_auto_update is on: the cache was written but is not used. */
  ignored: boolean;
}

/**
 * Fetch (URL) or read (file) a catalog, validate it, then atomically replace the cache (the
 * previous one kept as `.bak`). Anything wrong leaves the cache as it was and says why.
 * `embedded` removes the cache (kept as `.bak` too).
 */
export async function refreshCatalog(options: {
  env: Readonly<Record<string, string | undefined>>;
  workspace: string;
  source: string;
  fetch: typeof fetch;
  now: () => number;
  ignoreCache: boolean;
  signal?: AbortSignal;
}): Promise<RefreshResult> {
  const path = catalogCachePath(options.env);
  if (!path)
    throw new SvcError(
      'invalid_input',
      'catalog: there is no user cache dir to keep a refreshed catalog in; set XDG_CACHE_HOME or HOME',
    );
  const now = new Date(options.now()).toISOString();
  const backup = `${path}.bak`;
  if (options.source === 'embedded') {
    const kept = existsSync(path);
    if (kept) renameSync(path, backup);
    const base = embeddedCatalog();
    return {
      path,
      source: 'embedded',
      version: base.version,
      providers: base.providers.length,
      models: base.providers.reduce((n, p) => n + p.models.length, 0),
      added: [],
      updated: [],
      changes: [],
      ...(kept ? { backup } : {}),
      refreshed_at: now,
      ignored: options.ignoreCache,
    };
  }
  const text = await readSource(options);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new SvcError(
      'invalid_input',
      `catalog ${options.source}: not JSON (${(error as Error).message}); nothing was replaced`,
    );
  }
  const parsed = parseCatalog(json, options.source);
  const guarded = guard(parsed);
  const previous = previousProviders(path);
  const changes = describeChanges(guarded, (id) => previous.get(id));
  const stored: CatalogFile = { ...parsed, providers: guarded.providers as CatalogFile['providers'] };
  const file: CacheFile = { refreshed_at: now, refreshed_from: options.source, catalog: stored };
  makeDirs(dirname(path));
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(file)}\n`);
  const kept = existsSync(path);
  if (kept) copyFileSync(path, backup);
  renameSync(tmp, path);
  return {
    path,
    source: options.source,
    version: parsed.version,
    providers: guarded.providers.length,
    models: guarded.providers.reduce((n, p) => n + p.models.length, 0),
    added: changes.filter((c) => c.status === 'added').map((c) => c.id),
    updated: changes.filter((c) => c.status === 'updated' || c.status === 'unchanged').map((c) => c.id),
    changes,
    ...(kept ? { backup } : {}),
    refreshed_at: now,
    ignored: options.ignoreCache,
  };
}

/** What was in effect before a refresh: the embedded catalog with the (usable) cache over it. */
function previousProviders(path: string): Map<string, Pick<CatalogProvider, 'models'>> {
  const map = new Map<string, Pick<CatalogProvider, 'models'>>(
    embeddedCatalog().providers.map((p) => [p.id, p]),
  );
  try {
    if (existsSync(path)) for (const p of readCache(path).guarded.providers) map.set(p.id, p);
  } catch {
    // An unusable cache was not in effect.
  }
  return map;
}

function tooLarge(origin: string, size: number, limit: number, outcome: string): SvcError {
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return new SvcError(
    'invalid_input',
    `catalog ${origin}: ${mib(size)} (${size} bytes) is more than the ${mib(limit)} limit; ${outcome}`,
  );
}

async function readSource(options: {
  workspace: string;
  source: string;
  fetch: typeof fetch;
  signal?: AbortSignal;
}): Promise<string> {
  if (/^https?:\/\//i.test(options.source)) {
    const signal = options.signal
      ? AbortSignal.any([options.signal, AbortSignal.timeout(15_000)])
      : AbortSignal.timeout(15_000);
    let response: Response;
    try {
      response = await options.fetch(options.source, { signal, headers: { accept: 'application/json' } });
    } catch (error) {
      throw new SvcError(
        'unavailable',
        `catalog ${options.source}: unreachable (${(error as Error).message}); the cache was left as it was`,
      );
    }
    if (!response.ok)
      throw new SvcError(
        'unavailable',
        `catalog ${options.source}: HTTP ${response.status}; the cache was left as it was`,
      );
    return readCapped(response, options.source);
  }
  const file = resolve(options.workspace, options.source.replace(/^file:\/\//, ''));
  try {
    const stat = statSync(file);
    if (!stat.isFile()) throw new Error('not a file');
    if (stat.size > MAX_CATALOG_BYTES)
      throw tooLarge(options.source, stat.size, MAX_CATALOG_BYTES, 'nothing was replaced');
    return readFileSync(file, 'utf8');
  } catch (error) {
    if (SvcError.is(error)) throw error;
    throw new SvcError(
      'invalid_input',
      `catalog ${options.source}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); nothing was replaced`,
    );
  }
}

/** The body, read up to MAX_CATALOG_BYTES: a longer one is refused before it is all in memory. */
async function readCapped(response: Response, origin: string): Promise<string> {
  const outcome = 'the cache was left as it was';
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > MAX_CATALOG_BYTES) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge(origin, declared, MAX_CATALOG_BYTES, outcome);
  }
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_CATALOG_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(origin, size, MAX_CATALOG_BYTES, `${outcome} (read stopped there)`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
