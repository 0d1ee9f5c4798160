/**
 * A workspace with secrets planted where an attacker looks: in svc's environment, in a HOME
 * outside the workspace (~/.ssh, ~/.aws, ~/.netrc, ~/.npmrc, svc's credential store), and
 * svc's own data dir. Every secret is a unique string, so any output can be searched for it.
 * @module
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { isolatedEnv } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';

export interface Planted {
  workspace: string;
  home: string;
  env: Record<string, string | undefined>;
  /** Every planted secret value, by where it is. */
  secrets: Record<string, string>;
  /** Files outside the workspace an escape would try to write (none exists yet). */
  outside: string;
  /** The random part every planted secret holds (and nothing else does). */
  id: string;
}

export function plant(files: Record<string, string> = {}): Planted {
  const id = Math.random().toString(36).slice(2, 10);
  const other = Math.random().toString(36).slice(2, 10);
  const secrets = {
    env_openai: `sk-planted-openai-${id}`,
    env_database: `postgres://app:pw-${id}@db.internal/app`,
    env_custom: `custom-secret-${id}`,
    env_token: `ghp_planted${id}`,
    ssh_key: `-----BEGIN OPENSSH PRIVATE KEY----- planted-${id}`,
    aws: `aws_secret_access_key = planted-aws-${id}`,
    netrc: `machine example.com login me password planted-netrc-${id}`,
    npmrc: `//registry.npmjs.org/:_authToken=planted-npm-${id}`,
    credentials: `planted-svc-credential-${id}`,
  };
  const workspace = tmpWorkspace({ files: { 'README.md': '# project\n', ...files } });
  // Not under /tmp (private inside the sandbox): a home on the read-only root, like /home/<user>.
  const homeRoot = realpathSync(mkdtempSync('/var/tmp/svc-home-'));
  onTestFinished(() => rmSync(homeRoot, { recursive: true, force: true }));
  const env = isolatedEnv(homeRoot, {
    OPENAI_API_KEY: secrets.env_openai,
    DATABASE_URL: secrets.env_database,
    PLANTED_CUSTOM_SECRET: secrets.env_custom,
    GITHUB_TOKEN: secrets.env_token,
  });
  const home = env.HOME as string;
  const write = (path: string, text: string) => {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, text);
  };
  write(join(home, '.ssh', 'id_ed25519'), `${secrets.ssh_key}\n`);
  write(join(home, '.aws', 'credentials'), `[default]\n${secrets.aws}\n`);
  write(join(home, '.netrc'), `${secrets.netrc}\n`);
  write(join(home, '.npmrc'), `${secrets.npmrc}\n`);
  write(
    join(home, '.config', 'svc', 'credentials.json'),
    JSON.stringify({ version: 1, credentials: { x: { value: secrets.credentials } } }),
  );
  return { workspace, home, env, secrets, outside: join(homeRoot, `escaped-${other}`), id };
}

/** The planted secrets found in `text` (by name): any part holding the random id counts. */
export function leaks(planted: Planted, text: string): string[] {
  if (!text.includes(planted.id)) return [];
  const named = Object.entries(planted.secrets)
    .filter(([, value]) =>
      value.split(/[\s=:@/]+/).some((part) => part.includes(planted.id) && text.includes(part)),
    )
    .map(([name]) => name);
  return named.length ? named : ['a planted secret (its id appears)'];
}
