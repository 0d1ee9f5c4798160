/**
 * The provider catalog: the embedded JSON (bundled into dist) plus refreshed metadata cached in
 * the data dir by an explicit `svc update-providers`. With `options.disable_provider_auto_update`
 * the cache is ignored and only the embedded catalog is used (spec, config keys).
 * @module
 */
import { existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { SvcError } from '../errors';
import { makeDirs } from '../util/make-dirs';
import embedded from './catalog.json';

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
export type CatalogProvider = z.output<typeof catalogProviderSchema> & { source: 'embedded' | 'cache' };
export type CatalogFile = z.output<typeof catalogSchema>;

export interface CacheStatus {
  path: string;
  exists: boolean;
  /** disable_provider_auto_update is on: the cache is not used. */
  ignored: boolean;
  valid?: boolean;
  error?: string;
  refreshed_at?: string;
  refreshed_from?: string;
  version?: string;
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

export function catalogCachePath(dataDir: string): string {
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

/** The effective catalog: embedded, with cached providers replacing or adding by id. */
export function loadCatalog(options: { dataDir: string; ignoreCache: boolean }): Catalog {
  const base = embeddedCatalog();
  const path = catalogCachePath(options.dataDir);
  const cache: CacheStatus = { path, exists: existsSync(path), ignored: options.ignoreCache };
  const providers = new Map<string, CatalogProvider>(
    base.providers.map((p) => [p.id, { ...p, source: 'embedded' as const }]),
  );
  if (cache.exists) {
    try {
      const file = JSON.parse(readFileSync(path, 'utf8')) as CacheFile;
      const parsed = parseCatalog(file.catalog, path);
      cache.valid = true;
      cache.refreshed_at = file.refreshed_at;
      cache.refreshed_from = file.refreshed_from;
      cache.version = parsed.version;
      if (!options.ignoreCache)
        for (const p of parsed.providers) providers.set(p.id, { ...p, source: 'cache' });
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
  refreshed_at: string;
  /** disable_provider_auto_update is on: the cache was written but is not used. */
  ignored: boolean;
}

/**
 * Fetch (URL) or read (file) a catalog, validate it, then atomically replace the cache. Anything
 * wrong leaves the cache as it was and says why. `embedded` removes the cache.
 */
export async function refreshCatalog(options: {
  dataDir: string;
  workspace: string;
  source: string;
  fetch: typeof fetch;
  now: () => number;
  ignoreCache: boolean;
  signal?: AbortSignal;
}): Promise<RefreshResult> {
  const path = catalogCachePath(options.dataDir);
  const now = new Date(options.now()).toISOString();
  if (options.source === 'embedded') {
    rmSync(path, { force: true });
    const base = embeddedCatalog();
    return {
      path,
      source: 'embedded',
      version: base.version,
      providers: base.providers.length,
      models: base.providers.reduce((n, p) => n + p.models.length, 0),
      added: [],
      updated: [],
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
  const embeddedIds = new Set(embeddedCatalog().providers.map((p) => p.id));
  const file: CacheFile = { refreshed_at: now, refreshed_from: options.source, catalog: parsed };
  makeDirs(dirname(path));
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(file, null, 2)}\n`);
  renameSync(tmp, path);
  return {
    path,
    source: options.source,
    version: parsed.version,
    providers: parsed.providers.length,
    models: parsed.providers.reduce((n, p) => n + p.models.length, 0),
    added: parsed.providers.filter((p) => !embeddedIds.has(p.id)).map((p) => p.id),
    updated: parsed.providers.filter((p) => embeddedIds.has(p.id)).map((p) => p.id),
    refreshed_at: now,
    ignored: options.ignoreCache,
  };
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
    return response.text();
  }
  const file = resolve(options.workspace, options.source.replace(/^file:\/\//, ''));
  try {
    if (!statSync(file).isFile()) throw new Error('not a file');
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new SvcError(
      'invalid_input',
      `catalog ${options.source}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); nothing was replaced`,
    );
  }
}
