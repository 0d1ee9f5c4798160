/**
 * Per-request costs of model resolution: key-based SDK models are built once per provider entry,
 * model id, key and fetch (the entry is rebuilt on a config reload, which drops them), and the
 * resolver's selection skips the first-ready readiness scan once an earlier candidate wins while
 * the readout still evaluates it.
 */
import { describe, expect, it } from 'vitest';
import { buildLanguageModel } from '../../src/providers/build-model';
import type { ProviderDeps } from '../../src/providers/context';
import type { CredentialStore } from '../../src/providers/credential-store';
import type { ProviderEntry } from '../../src/providers/provider-entries';
import type { Readiness } from '../../src/providers/readiness';
import { choose, type SelectionEnv } from '../../src/providers/selection';

const entry = (over: Partial<ProviderEntry> = {}) =>
  ({
    id: 'acme',
    name: 'acme',
    type: 'openai-compat',
    auth: 'api_key',
    base_url: 'http://127.0.0.1:9/v1',
    api_key_env: [],
    models: [],
    problems: [],
    disabled: false,
    configured: true,
    open_models: true,
    ...over,
  }) as unknown as ProviderEntry;

function build(e: ProviderEntry, modelId: string, key: string | undefined, fetchFn: typeof fetch) {
  return buildLanguageModel({
    deps: { fetch: fetchFn } as unknown as ProviderDeps,
    store: {} as CredentialStore,
    entry: e,
    modelId,
    credential: { value: key, candidates: [], ambiguous: false },
  });
}

describe('language model cache', () => {
  it('reuses the model for the same entry, model, key and fetch, and builds anew otherwise', async () => {
    const e = entry();
    const f = (async () => new Response('')) as unknown as typeof fetch;
    const first = await build(e, 'm1', 'k1', f);
    expect(await build(e, 'm1', 'k1', f)).toBe(first);
    expect(await build(e, 'm2', 'k1', f)).not.toBe(first);
    expect(await build(e, 'm1', 'k2', f)).not.toBe(first);
    expect(await build(e, 'm1', 'k1', (async () => new Response('')) as unknown as typeof fetch)).not.toBe(
      first,
    );
    // A reload rebuilds the entries: a new entry object never sees the old models.
    expect(await build(entry(), 'm1', 'k1', f)).not.toBe(first);
  });
});

describe('selection for the resolver', () => {
  it('skips the first-ready scan when an earlier candidate wins; the readout still runs it', () => {
    let checks = 0;
    const env: SelectionEnv = {
      config: { models: { large: 'acme/big' }, providers: {} } as unknown as SelectionEnv['config'],
      entries: [entry({ id: 'other', default_large: 'x' } as Partial<ProviderEntry>)],
      readiness: () => {
        checks++;
        return { ready: true } as Readiness;
      },
    };
    const fast = choose({}, env, { readout: false });
    expect(fast).toMatchObject({ selector: 'acme/big', source: 'default' });
    expect(checks).toBe(0);
    const readout = choose({}, env);
    expect(readout).toMatchObject({ selector: 'acme/big', source: 'default' });
    expect(readout.candidates.find((c) => c.source === 'first_ready')?.selector).toBe('other/x');
    expect(checks).toBe(1);
    // Nothing earlier applies: the resolver falls through to the first ready provider as before.
    const none = { ...env, config: { models: {}, providers: {} } as unknown as SelectionEnv['config'] };
    expect(choose({}, none, { readout: false })).toMatchObject({
      selector: 'other/x',
      source: 'first_ready',
    });
  });
});
