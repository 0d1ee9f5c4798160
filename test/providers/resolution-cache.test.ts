/**
 * A resolution's linked model (SDK model, fallbacks, catalog facts) is kept across requests per
 * provider entry, model and credential (issue 17): a credential changed in the credentials file,
 * or a config reloaded, is what the next request uses; two models never share what is kept.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateText } from 'ai';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { svc } from './helpers/cli';

async function ask(app: Awaited<ReturnType<typeof makeTestApp>>, selector?: string) {
  const resolved = await app.models.resolve(selector ? { selector } : {});
  await generateText({ model: resolved.language_model, prompt: 'x' });
  return resolved;
}

describe('model resolution kept across requests', () => {
  it('ENGINE-EDGE-11: a key changed in the credentials file is used by the next request', async () => {
    const fake = await fakeProvider([reply().text('a'), reply().text('b'), reply().text('c')]);
    const workspace = tmpWorkspace();
    const app = await makeTestApp({
      workspace,
      config: {
        providers: { mistral: { base_url: fake.url } },
        models: { large: 'mistral/devstral-small-latest' },
      },
      env: isolatedEnv(workspace, {}),
    });
    const store = async (key: string) => {
      const stored = await svc(app, ['auth', 'token', 'mistral', '--token-stdin', '--json'], {
        stdin: `${key}\n`,
      });
      expect(stored.code, stored.stderr).toBe(0);
    };
    await store('stored-mistral-key-0001');
    app.reloadConfig();
    await ask(app);
    await ask(app);
    await store('stored-mistral-key-0002');
    await ask(app);
    expect(fake.requests.map((r) => r.headers.authorization)).toEqual([
      'Bearer stored-mistral-key-0001',
      'Bearer stored-mistral-key-0001',
      'Bearer stored-mistral-key-0002',
    ]);
  });

  it('ENGINE-EDGE-12: an edited svc.toml, once reloaded, is what the next request uses', async () => {
    const first = await fakeProvider([reply().text('a'), reply().text('b')]);
    const second = await fakeProvider([reply().text('c')]);
    const workspace = tmpWorkspace();
    const config = (url: string, key: string) => ({
      providers: { lab: { type: 'openai-compat', base_url: url, api_key: key } },
      models: { large: 'lab/m' },
    });
    const app = await makeTestApp({
      workspace,
      config: config(first.url, 'lab-key-000000000001'),
      env: isolatedEnv(workspace, {}),
    });
    await ask(app);
    await ask(app);
    writeFileSync(join(workspace, 'svc.toml'), stringify(config(second.url, 'lab-key-000000000001')));
    app.reloadConfig();
    await ask(app);
    expect(first.requests.map((r) => r.headers.authorization)).toEqual([
      'Bearer lab-key-000000000001',
      'Bearer lab-key-000000000001',
    ]);
    // Same key, another base URL: only the reloaded entry knows it.
    expect(second.requests.map((r) => r.headers.authorization)).toEqual(['Bearer lab-key-000000000001']);
  });

  it('ENGINE-EDGE-13: two models of one provider do not share what is kept', async () => {
    const fake = await fakeProvider([reply().text('a'), reply().text('b'), reply().text('c')]);
    const workspace = tmpWorkspace();
    const app = await makeTestApp({
      workspace,
      config: {
        providers: { lab: { type: 'openai-compat', base_url: fake.url, api_key: 'lab-key-000000000001' } },
        models: { large: 'lab/m1' },
      },
      env: isolatedEnv(workspace, {}),
    });
    const one = await ask(app, 'lab/m1');
    const two = await ask(app, 'lab/m2');
    const again = await ask(app, 'lab/m1');
    expect([one.selector, two.selector, again.selector]).toEqual(['lab/m1', 'lab/m2', 'lab/m1']);
    expect([one.model_id, two.model_id, again.model_id]).toEqual(['m1', 'm2', 'm1']);
    expect(fake.requests.map((r) => (r.body as { model: string }).model)).toEqual(['m1', 'm2', 'm1']);
  });
});
