/**
 * Which selector the next turn uses, and why. One function serves the resolver and the
 * model-selection read surface, so what `svc config show-model-selection` says is what the next
 * turn does. Precedence for main turns: explicit → session override → agent config → `[models]`
 * default → the first ready provider's recommended model (→ a local server found on loopback, at
 * turn time only). Cheap internal calls (purpose small) use `[models] small`, else the recommended
 * small model of the large model's provider.
 * @module
 */
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { ProviderEntry } from './provider-entries';
import type { Readiness } from './readiness';

export type SelectionSource = 'explicit' | 'session' | 'agent' | 'default' | 'first_ready' | 'local_server';

export interface SelectionRequest {
  selector?: string;
  purpose?: 'large' | 'small';
  sessionModel?: string | null;
  agentModel?: string;
  /** Labels for the readout (`session ses_1`, `agent build`). */
  sessionLabel?: string;
  agentLabel?: string;
}

export interface SelectionCandidate {
  source: SelectionSource;
  selector: string | null;
  applies: boolean;
  note: string;
}

export interface Selection {
  purpose: 'large' | 'small';
  selector: string | null;
  source: SelectionSource | 'none';
  reason: string;
  candidates: SelectionCandidate[];
}

export interface ParsedSelector {
  entry: ProviderEntry;
  model: string;
}

export interface SelectionEnv {
  config: Config;
  entries: ProviderEntry[];
  readiness(entry: ProviderEntry): Readiness;
}

/**
 * `readout: false` (the resolver, every turn) skips the first-ready scan when an earlier candidate
 * already wins: the scan checks the readiness of every catalog provider (credential store, cloud
 * identity files), and only the readout shows its non-winning row.
 */
export function choose(
  request: SelectionRequest,
  env: SelectionEnv,
  options: { readout?: boolean } = {},
): Selection {
  const purpose = request.purpose ?? 'large';
  const { config } = env;
  const candidates: SelectionCandidate[] = [];
  const add = (source: SelectionSource, selector: string | null | undefined, note: string) => {
    const value = typeof selector === 'string' && selector.trim() ? selector.trim() : null;
    candidates.push({ source, selector: value, applies: false, note });
  };
  add('explicit', request.selector, 'selector passed with the request');
  if (purpose === 'large') {
    add(
      'session',
      request.sessionModel,
      request.sessionLabel ? `model override of ${request.sessionLabel}` : 'no session given',
    );
    add(
      'agent',
      request.agentModel,
      request.agentLabel ? `model of ${request.agentLabel} in [agents]` : 'no agent given',
    );
    add('default', config.models.large, 'config [models] large');
  } else {
    const large = config.models.large;
    let derived: string | undefined;
    if (!config.models.small && large) {
      const parsed = tryParse(large, env);
      derived = parsed?.entry.default_small ? `${parsed.entry.id}/${parsed.entry.default_small}` : large;
    }
    add(
      'default',
      config.models.small ?? derived,
      config.models.small
        ? 'config [models] small'
        : 'recommended small model of the [models] large provider',
    );
  }
  const decided = options.readout === false && candidates.some((c) => c.selector);
  const firstReady = decided ? undefined : firstReadyProvider(env);
  const recommended = firstReady
    ? purpose === 'small'
      ? (firstReady.default_small ?? firstReady.default_large ?? firstReady.models[0]?.id)
      : (firstReady.default_large ?? firstReady.models[0]?.id)
    : undefined;
  add(
    'first_ready',
    firstReady && recommended ? `${firstReady.id}/${recommended}` : null,
    decided
      ? 'not evaluated (an earlier candidate applies)'
      : firstReady
        ? `first ready provider ${firstReady.id}, its recommended ${purpose} model`
        : 'no provider is ready',
  );
  const winner = candidates.find((c) => c.selector);
  if (winner) winner.applies = true;
  return {
    purpose,
    selector: winner?.selector ?? null,
    source: winner?.source ?? 'none',
    reason: winner
      ? reasonOf(winner.source, purpose, request, candidates, firstReady)
      : noSelectionReason(env),
    candidates,
  };
}

/** Why the winner applies (only its text is made: the resolver chooses twice a compat request). */
function reasonOf(
  source: SelectionSource,
  purpose: 'large' | 'small',
  request: SelectionRequest,
  candidates: SelectionCandidate[],
  firstReady: ProviderEntry | undefined,
): string {
  switch (source) {
    case 'explicit':
      return 'an explicit selector was given';
    case 'session':
      return `the session overrides the model (${request.sessionLabel ?? 'session'})`;
    case 'agent':
      return `the agent config sets the model (${request.agentLabel ?? 'agent'})`;
    case 'default':
      return purpose === 'large'
        ? 'config [models] large is the default'
        : candidates.find((c) => c.source === 'default')!.note;
    case 'first_ready':
      return `no default is configured ([models] ${purpose} unset): the first ready provider (${firstReady?.id}) and its recommended model`;
    case 'local_server':
      return 'a local model server answered on loopback';
  }
}

function noSelectionReason(env: SelectionEnv): string {
  const unset = Object.keys(env.config.providers)
    .map((id) => env.entries.find((e) => e.id === id))
    .find((e) => e && !e.disabled && e.problems.length === 0 && env.readiness(e).ready);
  return unset
    ? `providers.${unset.id} is configured but names no model: at turn time svc asks its server for its models and uses the only one (with several, add [models] large = "${unset.id}/<model>")`
    : 'no provider is configured or ready; at turn time svc probes loopback for a local model server (ollama, LM Studio, llama.cpp, vLLM)';
}

/** Providers that can serve a turn without more setup, config order first, then catalog order. */
export function firstReadyProvider(env: SelectionEnv): ProviderEntry | undefined {
  const configuredOrder = Object.keys(env.config.providers);
  const ordered = [
    ...configuredOrder
      .map((id) => env.entries.find((e) => e.id === id))
      .filter((e): e is ProviderEntry => Boolean(e)),
    ...env.entries.filter((e) => !env.config.providers[e.id]),
  ];
  return ordered.find(
    (entry) =>
      (entry.configured || entry.auth === 'api_key' || entry.auth === 'cloud' || entry.auth === 'oauth') &&
      (entry.default_large || entry.models.length > 0) &&
      env.readiness(entry).ready,
  );
}

function tryParse(selector: string, env: SelectionEnv): ParsedSelector | undefined {
  try {
    return parseSelector(selector, env);
  } catch {
    return undefined;
  }
}

export function offers(entry: ProviderEntry, model: string): boolean {
  return entry.models.some((m) => m.id === model);
}

/**
 * `<provider>/<model>` (the model may contain slashes, e.g. `openrouter/anthropic/claude-sonnet-4.5`),
 * or a bare model id that exactly one configured or ready provider offers.
 */
export function parseSelector(selector: string, env: SelectionEnv): ParsedSelector {
  const text = selector.trim();
  if (!text) throw new SvcError('invalid_input', 'model: empty selector; write <provider>/<model>');
  const slash = text.indexOf('/');
  if (slash > 0 && slash < text.length - 1) {
    const entry = env.entries.find((e) => e.id === text.slice(0, slash));
    const model = text.slice(slash + 1);
    if (entry) {
      if (entry.open_models || offers(entry, model) || entry.type === 'acp') return { entry, model };
      const bare = bareMatches(text, env);
      if (bare.length === 1) return bare[0];
      throw unknownModel(entry, model);
    }
  }
  const bare = bareMatches(text, env);
  if (bare.length === 1) return bare[0];
  if (bare.length > 1) {
    throw new SvcError(
      'invalid_input',
      `model: "${text}" is offered by ${bare.map((b) => b.entry.id).join(', ')}; write one of ${bare.map((b) => `${b.entry.id}/${b.model}`).join(', ')}`,
    );
  }
  if (slash > 0) {
    const id = text.slice(0, slash);
    throw new SvcError(
      'not_found',
      `model: unknown provider "${id}" in "${text}"; add [providers.${id}] (with type and base_url) to svc.toml, or pick a catalog provider (svc models)`,
      { details: { provider: id } },
    );
  }
  throw new SvcError(
    'not_found',
    `model: no configured provider offers "${text}"; write <provider>/<model> (svc models lists the catalog)`,
  );
}

function bareMatches(model: string, env: SelectionEnv): ParsedSelector[] {
  return env.entries
    .filter((e) => offers(e, model) && !e.disabled && (e.configured || env.readiness(e).ready))
    .map((entry) => ({ entry, model }));
}

function unknownModel(entry: ProviderEntry, model: string): SvcError {
  const known = entry.models.map((m) => m.id);
  return new SvcError(
    'not_found',
    `model: ${entry.id} has no model "${model}"${known.length ? ` (known: ${known.slice(0, 8).join(', ')}${known.length > 8 ? ', …' : ''})` : ''}; to use it anyway add [[providers.${entry.id}.models]] id = "${model}" to svc.toml, or refresh the catalog with svc update-providers`,
    { details: { provider: entry.id, model } },
  );
}
