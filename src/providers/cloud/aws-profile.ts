/**
 * Named AWS profiles from the shared credentials and config files (INI). Static keys and
 * `credential_process` are supported; SSO and role-assumption profiles are reported with the
 * command that turns them into usable credentials.
 * @module
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../../errors';
import { type Env, expandHome, homeOf } from '../context';

export interface AwsProfile {
  name: string;
  files: string[];
  values: Record<string, string>;
}

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** Epoch ms. */
  expiration?: number;
}

export function awsFiles(env: Env): { credentials: string; config: string } {
  const home = homeOf(env);
  return {
    credentials: expandHome(env.AWS_SHARED_CREDENTIALS_FILE || join(home, '.aws', 'credentials'), env),
    config: expandHome(env.AWS_CONFIG_FILE || join(home, '.aws', 'config'), env),
  };
}

export function parseIni(text: string): Record<string, Record<string, string>> {
  const sections: Record<string, Record<string, string>> = {};
  let current: Record<string, string> | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[([^\]]+)\]$/.exec(line);
    if (header) {
      current = sections[header[1].trim()] ??= {};
      continue;
    }
    const eq = line.indexOf('=');
    if (eq > 0 && current) current[line.slice(0, eq).trim().toLowerCase()] = line.slice(eq + 1).trim();
  }
  return sections;
}

export function readProfile(env: Env, name: string): AwsProfile | undefined {
  const files = awsFiles(env);
  const values: Record<string, string> = {};
  const found: string[] = [];
  if (existsSync(files.config)) {
    const sections = parseIni(readFileSync(files.config, 'utf8'));
    const section = sections[name === 'default' ? 'default' : `profile ${name}`] ?? sections[name];
    if (section) {
      Object.assign(values, section);
      found.push(files.config);
    }
  }
  if (existsSync(files.credentials)) {
    const section = parseIni(readFileSync(files.credentials, 'utf8'))[name];
    if (section) {
      Object.assign(values, section);
      found.push(files.credentials);
    }
  }
  return found.length ? { name, files: found, values } : undefined;
}

/** What kind of credentials a profile holds, without resolving them. */
export function profileKind(profile: AwsProfile): 'static' | 'process' | 'sso' | 'assume_role' | 'empty' {
  const v = profile.values;
  if (v.aws_access_key_id && v.aws_secret_access_key) return 'static';
  if (v.credential_process) return 'process';
  if (v.sso_session || v.sso_start_url) return 'sso';
  if (v.role_arn) return 'assume_role';
  return 'empty';
}

export async function profileCredentials(profile: AwsProfile, signal?: AbortSignal): Promise<AwsCredentials> {
  const v = profile.values;
  switch (profileKind(profile)) {
    case 'static':
      return {
        accessKeyId: v.aws_access_key_id,
        secretAccessKey: v.aws_secret_access_key,
        sessionToken: v.aws_session_token || undefined,
      };
    case 'process':
      return runCredentialProcess(v.credential_process, profile.name, signal);
    case 'sso':
      throw new SvcError(
        'unauthorized',
        `aws profile ${profile.name} uses SSO: run \`aws sso login --profile ${profile.name}\`, then \`eval "$(aws configure export-credentials --profile ${profile.name} --format env)"\` and set auth_source = "env"`,
      );
    case 'assume_role':
      throw new SvcError(
        'unauthorized',
        `aws profile ${profile.name} assumes a role (role_arn): export the role's credentials (aws configure export-credentials --profile ${profile.name} --format env) and set auth_source = "env", or give the profile a credential_process`,
      );
    default:
      throw new SvcError(
        'unauthorized',
        `aws profile ${profile.name} (${profile.files.join(', ')}) has no aws_access_key_id/aws_secret_access_key or credential_process`,
      );
  }
}

function runCredentialProcess(
  command: string,
  profile: string,
  signal?: AbortSignal,
): Promise<AwsCredentials> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, { shell: true, stdio: ['ignore', 'pipe', 'pipe'], signal, timeout: 30_000 });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', (error) =>
      reject(
        new SvcError('unauthorized', `aws profile ${profile}: credential_process failed: ${error.message}`),
      ),
    );
    child.on('close', (code) => {
      if (code !== 0) {
        reject(
          new SvcError(
            'unauthorized',
            `aws profile ${profile}: credential_process exited ${code}: ${err.trim().split('\n')[0] ?? ''}`,
          ),
        );
        return;
      }
      try {
        const parsed = JSON.parse(out) as Record<string, string>;
        if (!parsed.AccessKeyId || !parsed.SecretAccessKey) throw new Error('no AccessKeyId/SecretAccessKey');
        resolve({
          accessKeyId: parsed.AccessKeyId,
          secretAccessKey: parsed.SecretAccessKey,
          sessionToken: parsed.SessionToken,
          expiration: parsed.Expiration ? Date.parse(parsed.Expiration) : undefined,
        });
      } catch (error) {
        reject(
          new SvcError(
            'unauthorized',
            `aws profile ${profile}: credential_process printed no credentials (${(error as Error).message})`,
          ),
        );
      }
    });
  });
}
