import { describe, expect, it } from 'vitest';
import { isolatedEnv } from '../../test/helpers/make-test-app';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { seedSecrets } from '../app/config-checks';
import { loadConfig } from '../config/load';
import { createRedactor } from '../redact';
import { isPostgresUrl, redactStoreUrl, storeTarget, storeUrlPassword } from './store-url';

describe('the store URL ([store] url)', () => {
  it('STORE-PG-01: is printed with the password masked, and its parts name the target', () => {
    const url = 'postgres://svc:s3cret-pass@db.example:6543/svc_prod';
    expect(redactStoreUrl(url)).toBe('postgres://svc:***@db.example:6543/svc_prod');
    expect(redactStoreUrl('postgres://svc@db/x')).toBe('postgres://svc@db/x');
    expect(storeTarget(url)).toEqual({ host: 'db.example', port: 6543, database: 'svc_prod', user: 'svc' });
    expect(storeTarget('postgresql://me@h/')).toEqual({ host: 'h', port: 5432, database: 'me', user: 'me' });
    expect(storeUrlPassword('postgres://u:p%40ss-word@h/d')).toBe('p@ss-word');
    expect(isPostgresUrl(url)).toBe(true);
    expect(isPostgresUrl(undefined)).toBe(false);
  });

  it('STORE-PG-02: defaults, SVC_STORE_URL overrides the file, ${ENV} interpolates, the password is a known secret', () => {
    const workspace = tmpWorkspace({
      files: { 'svc.toml': '[store]\nurl = "postgres://svc:${PG_PASS}@file-host/db"\npool_size = 4\n' },
    });
    const base = loadConfig({ workspace, env: isolatedEnv(workspace, { PG_PASS: 'from-env-pw' }) });
    expect(base.config.store).toEqual({
      url: 'postgres://svc:from-env-pw@file-host/db',
      pool_size: 4,
      statement_timeout_ms: 30_000,
      connect_timeout_ms: 5_000,
      node_heartbeat_ms: 3_000,
      node_stale_ms: 10_000,
    });
    const env = isolatedEnv(workspace, { PG_PASS: 'x', SVC_STORE_URL: 'postgres://a:override-pw@other/db2' });
    const loaded = loadConfig({ workspace, env });
    expect(loaded.config.store.url).toBe('postgres://a:override-pw@other/db2');
    const redactor = createRedactor();
    seedSecrets(redactor, loaded, env);
    expect(redactor.string('connect failed: override-pw')).not.toContain('override-pw');
    expect(
      loadConfig({ workspace: tmpWorkspace(), env: isolatedEnv(workspace) }).config.store.url,
    ).toBeUndefined();
  });

  it('CLUSTER-22: a URL the driver cannot parse (a bad port) is a config error naming the key, not a stack trace', () => {
    for (const url of ['postgres://svc:pw@db:notaport/svc', 'postgres://svc:pw@db:99999/svc']) {
      const workspace = tmpWorkspace({ files: { 'svc.toml': `[store]\nurl = "${url}"\n` } });
      expect(() => loadConfig({ workspace, env: isolatedEnv(workspace) })).toThrow(
        /store\.url: not a valid URL/,
      );
    }
    const workspace = tmpWorkspace();
    const env = isolatedEnv(workspace, { SVC_STORE_URL: 'postgres://svc:secret-pw@db:70000/svc' });
    expect(() => loadConfig({ workspace, env })).toThrow(/SVC_STORE_URL: store\.url: not a valid URL/);
    expect(() => loadConfig({ workspace, env })).not.toThrow(/secret-pw/);
  });

  it('CLUSTER-23: ${ENV} in SVC_STORE_URL is interpolated as in the file; an unset one is a config error naming it', () => {
    const workspace = tmpWorkspace();
    const url = 'postgres://svc:${PG_PASS}@db/svc';
    const loaded = loadConfig({
      workspace,
      env: isolatedEnv(workspace, { SVC_STORE_URL: url, PG_PASS: 'env-pw' }),
    });
    expect(loaded.config.store.url).toBe('postgres://svc:env-pw@db/svc');
    expect(loaded.interpolated).toContain('env-pw');
    expect(() => loadConfig({ workspace, env: isolatedEnv(workspace, { SVC_STORE_URL: url }) })).toThrow(
      /env SVC_STORE_URL: store\.url: environment variable PG_PASS is not set/,
    );
  });

  it('STORE-PG-03: a URL that is not postgres:// is a config error naming the key', () => {
    const workspace = tmpWorkspace({ files: { 'svc.toml': '[store]\nurl = "mysql://x@y/z"\n' } });
    expect(() => loadConfig({ workspace, env: isolatedEnv(workspace) })).toThrow(/store\.url/);
  });
});
