/**
 * A resolution's linked model: the provider entry's readiness checked, the SDK model built
 * (./build-model.ts), its tpm_recovery fallbacks and catalog facts, kept across requests where
 * build-model reuses the model (issue 17).
 * @module
 */
import { SvcError } from '../errors';
import { lazily } from '../util/lazy';
import type { ProviderDeps } from './context';
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

  return { link, linkOnce };
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
