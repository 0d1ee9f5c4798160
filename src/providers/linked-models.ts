/**
 * A resolution's linked model: the provider entry's readiness checked, the SDK model built
 * (./build-model.ts), its tpm_recovery fallbacks and catalog facts, kept across requests where
 * build-model reuses the model (issue 17).
 * @module
 */
import { SvcError } from '../errors';
import { lazily } from '../util/lazy';
import type { ProviderDeps } from './context';
import { type WindowAnswer, type WindowStamp, windowHolds, windowLookup } from './context-window';
import type { CredentialStore } from './credential-store';
import type { ProviderEntry } from './provider-entries';
import type { Readiness } from './readiness';
import type { RecoveringLanguageModel } from './recovery';
import { type ParsedSelector, parseSelector, type SelectionEnv } from './selection';
import type { ModelInfo } from './types';

const buildModelModule = lazily(() => import('./build-model'));
const recoveryModule = lazily(() => import('./recovery'));

/**
 * Loads what linking a model imports on first use, with the OpenAI-compatible SDK when an entry
 * is built with it (a service's start-up: ../app/warm.ts).
 */
export async function preloadLinking(openAICompatible: boolean): Promise<void> {
  const [build] = await Promise.all([buildModelModule(), recoveryModule()]);
  if (openAICompatible) await build.preloadOpenAICompatible();
}

/** What linking needs of the provider service (./service.ts). */
export interface LinkHost {
  readonly deps: ProviderDeps;
  readonly store: CredentialStore;
  readiness(entry: ProviderEntry): Readiness;
}

/** What a resolution keeps across requests: the linked model, its fallbacks and its catalog facts. */
export interface Linked {
  primary: Awaited<ReturnType<ReturnType<typeof linker>>>;
  fallbacks: string[];
  info: ModelInfo;
  Recovering: typeof RecoveringLanguageModel;
}

const MAX_LINKED_PER_ENTRY = 32;

export function linker(service: LinkHost) {
  const { deps } = service;
  return async (parsed: ParsedSelector, signal?: AbortSignal, ready = service.readiness(parsed.entry)) => {
    const { entry, model } = parsed;
    if (!ready.ready) {
      const code =
        entry.problems.length || entry.auth === 'cloud'
          ? 'config_error'
          : entry.auth === 'vendor_cli' || entry.auth === 'acp'
            ? 'unavailable'
            : 'unauthorized';
      throw new SvcError(code, ready.reason ?? `${entry.id}: not ready`, { details: { provider: entry.id } });
    }
    if (ready.credential.value) deps.redactor.add(ready.credential.value);
    const { buildLanguageModel } = await buildModelModule();
    const languageModel = await buildLanguageModel({
      deps,
      store: service.store,
      entry,
      modelId: model,
      credential: ready.credential,
      signal,
    });
    return {
      selector: `${entry.id}/${model}`,
      provider: entry.id,
      model: languageModel,
      entry,
      apiKey: ready.credential.value,
    };
  };
}

export function createLinker(service: LinkHost) {
  const { deps } = service;
  const link = linker(service);
  /**
   * Per provider entry (rebuilt when the config is reloaded or the catalog refreshed), per model and
   * credential: the SDK model, its fallbacks and catalog facts, for types whose model build-model
   * reuses. The credential is read at every request (its readiness), so an edited credentials file
   * or key is a new key here; the per-request parts (signal, session and run ids, metering) are not
   * kept (issue 17).
   */
  const linked = new WeakMap<ProviderEntry, Map<string, Linked>>();
  const linkOnce = async (
    parsed: ParsedSelector,
    env: SelectionEnv,
    signal?: AbortSignal,
  ): Promise<Linked> => {
    const ready = env.readiness(parsed.entry);
    const key = `${parsed.model}\u0000${ready.credential.value ?? ''}`;
    const kept = ready.ready ? linked.get(parsed.entry)?.get(key) : undefined;
    if (kept) return kept;
    const primary = await link(parsed, signal, ready);
    const fallbacks = deps
      .config()
      .options.tpm_recovery.provider_model_fallback.map((s) => {
        try {
          const p = parseSelector(s, env);
          return `${p.entry.id}/${p.model}`;
        } catch {
          deps.log.warn('tpm_recovery fallback selector ignored', { selector: s });
          return undefined;
        }
      })
      .filter((s): s is string => Boolean(s) && s !== primary.selector);
    const { RecoveringLanguageModel: Recovering } = await recoveryModule();
    const made: Linked = { primary, fallbacks: [...new Set(fallbacks)], info: modelInfo(parsed), Recovering };
    const { reusesModel } = await buildModelModule();
    if (reusesModel(parsed.entry)) {
      let models = linked.get(parsed.entry);
      if (!models) {
        models = new Map();
        linked.set(parsed.entry, models);
      }
      if (models.size >= MAX_LINKED_PER_ENTRY) models.clear();
      models.set(key, made);
    }
    return made;
  };

  /**
   * Per provider entry and model: the linked model with its window and catalog facts, kept while
   * nothing it was read from changed: the credentials' stamp (taken by the caller before anything
   * of this request read them), the loaded config, the entry's key variables, and the window
   * cache's rows (`windowHolds`). Only for entries whose readiness reads nothing else (an API key
   * or a loopback server) and whose model build-model reuses; a changed input is a new link, so
   * the next request sees what a request without it would (issue 17).
   */
  const kept = new WeakMap<ProviderEntry, Map<string, Kept>>();
  const resolveLinked = async (
    parsed: ParsedSelector,
    env: SelectionEnv,
    credentials: string | undefined,
    signal?: AbortSignal,
  ): Promise<LinkedWindow> => {
    const { entry, model } = parsed;
    const hit = kept.get(entry)?.get(model);
    if (hit && hit.credentials === credentials && holds(hit, entry)) return hit;
    const linkedOnce = await linkOnce(parsed, env, signal);
    const found = windowLookup(deps, entry, model, { apiKey: linkedOnce.primary.apiKey, signal });
    const window = 'answer' in found ? found.answer : await found;
    const info = { ...linkedOnce.info };
    if (window.context_window) info.context_window = window.context_window;
    else delete info.context_window;
    const made: Kept = {
      linked: linkedOnce,
      info,
      window,
      credentials,
      loaded: deps.loaded(),
      keys: entry.api_key_env.map((name) => deps.env[name]),
      stamp: 'answer' in found ? found.stamp : undefined,
    };
    const ready = env.readiness(entry);
    const keepable =
      credentials !== undefined &&
      made.stamp !== undefined &&
      ready.ready &&
      (entry.auth === 'api_key' || entry.auth === 'local') &&
      linked.get(entry)?.get(`${model}\u0000${ready.credential.value ?? ''}`) === linkedOnce;
    if (keepable) {
      let models = kept.get(entry);
      if (!models) {
        models = new Map();
        kept.set(entry, models);
      }
      if (models.size >= MAX_LINKED_PER_ENTRY) models.clear();
      models.set(model, made);
    }
    return made;
  };
  const holds = (hit: Kept, entry: ProviderEntry): boolean => {
    if (hit.loaded !== deps.loaded()) return false;
    const names = entry.api_key_env;
    for (let i = 0; i < names.length; i++) if (deps.env[names[i]] !== hit.keys[i]) return false;
    return windowHolds(deps, hit.stamp!);
  };

  return { link, linkOnce, resolveLinked };
}

/** A resolution's linked model with its context window and catalog facts (the window applied). */
export interface LinkedWindow {
  linked: Linked;
  info: ModelInfo;
  window: WindowAnswer;
}

/** A kept resolution and what it was read under. */
interface Kept extends LinkedWindow {
  credentials: string | undefined;
  loaded: unknown;
  keys: (string | undefined)[];
  stamp: WindowStamp | undefined;
}

/** The catalog's facts about a parsed selector's model (prices, window, capabilities). */
export function modelInfo(parsed: ParsedSelector): ModelInfo {
  const found = parsed.entry.models.find((m) => m.id === parsed.model);
  const info: ModelInfo = { id: parsed.model };
  if (found) {
    const { source: _s, created: _c, ...rest } = found;
    Object.assign(info, rest, { id: parsed.model });
  }
  return info;
}
