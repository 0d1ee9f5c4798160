/**
 * The scrubbed environment (issue 15, item 2). Pins: only the allowlist and `include` are
 * inherited; names that look secret, URLs with credentials, provider credential variables and
 * known secret values are dropped even when included; `set` is applied as given; `$VAR` analysis
 * treats exactly the passed and shell-internal variables as visible.
 */
import { describe, expect, it } from 'vitest';
import { scrubEnv, secretReason, visibleVariable } from './env';

const SOURCE = {
  PATH: '/usr/bin',
  HOME: '/home/dev',
  LANG: 'C.UTF-8',
  LC_ALL: 'C',
  TERM: 'xterm',
  OPENAI_API_KEY: 'sk-live',
  GITHUB_TOKEN: 'ghp_x',
  DATABASE_URL: 'postgres://app:hunter2@db/app',
  MY_APP_MODE: 'dev',
  MY_APP_SECRET: 's3',
  MY_APP_URL: 'https://example.com/app',
  MY_APP_HOOK: 'https://hooks.example.com/x?token=abc',
  SSH_AUTH_SOCK: '/tmp/agent.sock',
  HTTPS_PROXY: 'http://user:pw@proxy:3128',
  http_proxy: 'http://proxy:3128',
  UNRELATED: 'x',
  UNDEF: undefined,
};

describe('scrubEnv', () => {
  it('inherits the allowlist only, and set as given', () => {
    const { env, dropped } = scrubEnv(SOURCE, { include: [], set: { NODE_ENV: 'test' } });
    expect(env).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/dev',
      LANG: 'C.UTF-8',
      LC_ALL: 'C',
      TERM: 'xterm',
      http_proxy: 'http://proxy:3128',
      NODE_ENV: 'test',
    });
    expect(dropped).toEqual(['HTTPS_PROXY']);
  });

  it('include adds names and patterns, but never what looks secret', () => {
    const { env, dropped } = scrubEnv(SOURCE, {
      include: ['MY_APP_*', 'DATABASE_URL', 'GITHUB_TOKEN'],
      set: {},
    });
    expect(env.MY_APP_MODE).toBe('dev');
    expect(env.MY_APP_URL).toBe('https://example.com/app');
    expect(env).not.toHaveProperty('MY_APP_SECRET');
    expect(env).not.toHaveProperty('MY_APP_HOOK');
    expect(env).not.toHaveProperty('DATABASE_URL');
    expect(env).not.toHaveProperty('GITHUB_TOKEN');
    expect(dropped).toEqual(['DATABASE_URL', 'GITHUB_TOKEN', 'HTTPS_PROXY', 'MY_APP_HOOK', 'MY_APP_SECRET']);
  });

  it('drops provider credential variables and known secret values, by name or by value', () => {
    const { env } = scrubEnv(
      { PATH: '/bin', ACME_KEYFILE: 'k', LANG: 'sekrit-value' },
      { include: ['ACME_*'], set: {} },
      { credentialNames: new Set(['ACME_KEYFILE']), isSecretValue: (v) => v === 'sekrit-value' },
    );
    expect(env).toEqual({ PATH: '/bin' });
  });

  it('says why a variable is withheld', () => {
    expect(secretReason('OPENAI_API_KEY', 'x')).toBe('its name says it holds a key (*_KEY)');
    expect(secretReason('DATABASE_URL', 'postgres://u:p@h/d')).toBe('its value is a URL with credentials');
    expect(secretReason('AWS_SECRET_ACCESS_KEY', 'x')).toBe(
      'svc reads provider or cloud credentials from it',
    );
    expect(secretReason('DB_PASSWORD', 'x')).toBe('its name says it holds a password (*PASSWORD*)');
    expect(secretReason('HOME', '/home/dev')).toBeUndefined();
  });

  it('treats passed and shell-internal variables as visible to $VAR, and nothing else', () => {
    const policy = { include: ['JAVA_HOME'], set: { FOO: '1' } };
    for (const name of [
      'PATH',
      'HOME',
      'LC_CTYPE',
      'PWD',
      'RANDOM',
      'BASH_VERSION',
      'JAVA_HOME',
      'FOO',
      'SVC_SESSION_ID',
    ])
      expect(visibleVariable(name, policy), name).toBe(true);
    for (const name of ['DATABASE_URL', 'OPENAI_API_KEY', 'AWS_PROFILE', 'SSH_AUTH_SOCK', 'MY_VAR'])
      expect(visibleVariable(name, policy), name).toBe(false);
  });
});
