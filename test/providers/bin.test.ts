/**
 * The built binary (dist/main.js), as a user runs it: the catalog JSON is bundled (svc models
 * works from dist with no source tree), update-providers refreshes the cache, and the status
 * commands run without printing secrets.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

function env(ws: string, extra: Record<string, string> = {}) {
  return { HOME: join(ws, '.home'), XDG_CONFIG_HOME: join(ws, '.home', '.config'), ...extra };
}

describe('svc binary: providers', () => {
  it('GEN-06 / CLI-10: svc models --json lists the bundled catalog (15+ providers)', async () => {
    const ws = tmpWorkspace();
    const result = await runBin(['models', '--json'], { cwd: ws, env: env(ws) });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const body = JSON.parse(result.stdout) as { object: string; data: { provider: string }[] };
    expect(body.object).toBe('list');
    expect(new Set(body.data.map((m) => m.provider)).size).toBeGreaterThanOrEqual(15);
  });

  it('CLI-11: update-providers from a file, then models shows the refreshed entry', async () => {
    const ws = tmpWorkspace();
    writeFileSync(
      join(ws, 'catalog.json'),
      JSON.stringify({
        schema_version: 1,
        version: 'test-1',
        providers: [
          {
            id: 'newco',
            name: 'NewCo',
            type: 'openai-compat',
            auth: 'api_key',
            api_key_env: ['NEWCO_API_KEY'],
            base_url: 'https://x.example/v1',
            models: [{ id: 'n1', created: 1 }],
          },
        ],
      }),
    );
    // Its own user cache dir: the refreshed catalog is kept there (not in the shared test cache).
    const own = (extra: Record<string, string> = {}) =>
      env(ws, { XDG_CACHE_HOME: join(ws, '.home', '.cache'), ...extra });
    const refresh = await runBin(['update-providers', 'catalog.json'], { cwd: ws, env: own() });
    expect(refresh.code, refresh.stderr).toBe(0);
    expect(refresh.stdout).toContain('catalog test-1 from catalog.json: 1 providers, 1 models');
    const models = await runBin(['models', '--provider', 'newco', '--json'], { cwd: ws, env: own() });
    expect(JSON.parse(models.stdout).data).toEqual([
      expect.objectContaining({ id: 'newco/n1', catalog_source: 'cache' }),
    ]);
    // A malformed cache is not used (the embedded catalog is), and the status text says why and what to do.
    writeFileSync(join(ws, '.home', '.cache', 'svc', 'providers.json'), '{oops');
    const embedded = await runBin(['models', '--json'], { cwd: ws, env: own() });
    expect(embedded.code, embedded.stderr).toBe(0);
    expect(
      new Set(JSON.parse(embedded.stdout).data.map((m: { provider: string }) => m.provider)).has('newco'),
    ).toBe(false);
    const status = await runBin(['config', 'show-provider-status'], { cwd: ws, env: own() });
    expect(status.stdout).toMatch(
      /cache .*providers\.json is not used \(unreadable: .*\): svc update-providers/,
    );
  });

  it('CLI-02: auth summary and show-provider-status print no secret', async () => {
    const ws = tmpWorkspace();
    const secret = 'binary-planted-secret-0042';
    const summary = await runBin(['auth', 'summary'], { cwd: ws, env: env(ws, { OPENAI_API_KEY: secret }) });
    expect(summary.code, summary.stderr).toBe(0);
    expect(summary.stdout).toContain('credential: api_key from env OPENAI_API_KEY (…0042)');
    const status = await runBin(['config', 'show-provider-status', '--json'], {
      cwd: ws,
      env: env(ws, { OPENAI_API_KEY: secret }),
    });
    expect(status.code).toBe(0);
    expect(summary.stdout + status.stdout).not.toContain(secret);
  });
});
