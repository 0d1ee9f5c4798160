/**
 * Known secret strings planted in config (a literal and an interpolated key), the environment
 * (API keys, AWS keys, a bearer token), the durable credential store (an API key, OAuth tokens)
 * and the ChatGPT session cache never appear in any output of any status surface: CLI text and
 * JSON, HTTP routes and native tools. The status surfaces do not even try to print them (no
 * `[REDACTED]` marker either); `svc auth summary` shows at most the last four characters.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sessionCachePath } from '../../src/providers/oauth/chatgpt';
import { invokeTool } from '../../src/tools/core/call-tool';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { viaHttp } from '../helpers/surfaces';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { svc } from './helpers/cli';

const SECRETS = {
  literal: 'plantedLiteralKey-Alpha-9137',
  interpolated: 'plantedInterpKey-Bravo-5521',
  envKey: 'plantedEnvKey-Charlie-7734',
  awsSecret: 'plantedAwsSecret-Delta-2290',
  awsSession: 'plantedAwsSession-Echo-6613',
  bearer: 'plantedBearer-Foxtrot-4408',
  stored: 'plantedStoredKey-Golf-1187',
  oauthAccess: 'plantedOauthAccess-Hotel-3345',
  oauthRefresh: 'plantedOauthRefresh-India-8802',
  sessionAccess: 'plantedSessionAccess-Juliet-5150',
  sessionRefresh: 'plantedSessionRefresh-Kilo-2468',
  azure: 'plantedAzureKey-Lima-9753',
};

describe('redaction of status outputs', () => {
  it('AUTH-03 / CLI-02: no status command, route or tool output contains a planted secret; the credential mode is verifiable', async () => {
    const workspace = tmpWorkspace();
    const env = isolatedEnv(workspace, {
      ANTHROPIC_API_KEY: SECRETS.envKey,
      MY_GROQ: SECRETS.interpolated,
      AWS_ACCESS_KEY_ID: 'AKIAPLANTED000000000',
      AWS_SECRET_ACCESS_KEY: SECRETS.awsSecret,
      AWS_SESSION_TOKEN: SECRETS.awsSession,
      AWS_BEARER_TOKEN_BEDROCK: SECRETS.bearer,
      AWS_REGION: 'us-east-1',
      AZURE_OPENAI_API_KEY: SECRETS.azure,
      AZURE_OPENAI_ENDPOINT: 'https://planted.openai.azure.com',
    });
    const app = await makeTestApp({
      workspace,
      env,
      config: {
        providers: {
          openai: { api_key: SECRETS.literal },
          groq: { api_key: '${MY_GROQ}' },
          anthropic: { api_key: 'anthropic-config-differs-000' },
        },
        models: { large: 'openai/gpt-5', small: 'groq/openai/gpt-oss-20b' },
        options: { local_probe: { enabled: false } },
      },
    });
    app.providers.store.set('mistral', {
      kind: 'api_key',
      value: SECRETS.stored,
      stored_by: 'test',
      stored_at: 'now',
    });
    app.providers.store.set('copilot', {
      kind: 'oauth',
      access: SECRETS.oauthAccess,
      refresh: SECRETS.oauthRefresh,
      expires_at: Date.now() + 60_000,
      stored_by: 'svc auth copilot',
      stored_at: 'now',
    });
    const cache = sessionCachePath(app.dataDir);
    mkdirSync(dirname(cache), { recursive: true });
    writeFileSync(
      cache,
      JSON.stringify({
        access_token: SECRETS.sessionAccess,
        refresh_token: SECRETS.sessionRefresh,
        account_id: 'acct',
        expires_at: Date.now() + 60_000,
        origin: 'browser',
        last_refresh: 'now',
      }),
    );

    const outputs: [string, string][] = [];
    const commands = [
      ['config', 'show-provider-status'],
      ['config', 'show-model-selection'],
      ['config', 'show-model-selection', '--purpose', 'small'],
      ['config', 'show-config-status'],
      ['auth', 'summary'],
      ['auth', 'wizard'],
      ['auth', 'bedrock'],
      ['auth', 'bedrock', 'doctor'],
      ['auth', 'vertex', 'doctor'],
      ['auth', 'azure', 'doctor'],
      ['models', '--provider', 'openai'],
    ];
    for (const command of commands) {
      for (const json of [false, true]) {
        const result = await svc(app, json ? [...command, '--json'] : command);
        expect(result.code, `${command.join(' ')}: ${result.stderr}`).toBeLessThanOrEqual(1);
        outputs.push([`svc ${command.join(' ')}${json ? ' --json' : ''}`, result.stdout + result.stderr]);
      }
    }
    for (const path of ['/v1/provider-status', '/v1/model-selection', '/v1/config-status', '/v1/models']) {
      const http = await viaHttp(app, { method: 'GET', path }, {});
      expect(http.status, path).toBe(200);
      outputs.push([`GET ${path}`, http.text]);
    }
    for (const tool of [
      'get_provider_status',
      'get_model_selection',
      'get_provider_auth_wizard',
      'list_models',
      'config_status',
    ]) {
      outputs.push([tool, JSON.stringify(await invokeTool(app, tool, {}, { surface: 'agent' }))]);
    }

    for (const [where, text] of outputs) {
      for (const [name, secret] of Object.entries(SECRETS)) {
        expect(text.includes(secret), `${where} leaks ${name}`).toBe(false);
      }
      if (!where.includes('config-status') && !where.includes('config_status')) {
        expect(text.includes('[REDACTED]'), `${where} tried to print a secret`).toBe(false);
      }
    }

    // CLI-02 / AUTH-03: the summary shows the credential mode of the large model, last 4 at most.
    const summary = await svc(app, ['auth', 'summary', '--json']);
    expect(summary.json).toMatchObject({
      model: 'openai/gpt-5',
      provider: 'openai',
      ready: true,
      credential: { mode: 'api_key', source_kind: 'config_literal', last4: '…9137' },
    });
    const status = (await invokeTool(app, 'get_provider_status', {}, { surface: 'agent' })) as any;
    expect(status.providers.find((p: any) => p.id === 'anthropic')).toMatchObject({ ambiguous: true });
  });
});
