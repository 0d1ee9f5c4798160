/**
 * Credentials in [mcp.<id>] blocks that no key name gives away. Pins:
 * - config explain, config get and mcp list mask a URL's password and `?token=`, every literal
 *   `env` value and the value of an `args` flag like --api-key (maskSecret style);
 * - a `keychain:` reference is shown, a `${ENV}` value stays fully redacted;
 * - the redactor learns the URL and args secrets, so logs and errors hide them too;
 * - the server itself still gets the real values.
 */
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { viaCli } from '../helpers/surfaces';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const FIXTURE = resolve(__dirname, '../fixtures/mcp/stdio-server.mjs');
const URL_WITH_SECRETS = 'https://user:pw-in-url-555@example.com/mcp?token=query-secret-666&mode=x';

async function appWithSecrets() {
  const workspace = tmpWorkspace();
  return makeTestApp({
    workspace,
    env: isolatedEnv(workspace, { FROM_ENV_VALUE: 'env-value-424242' }),
    config: {
      mcp: {
        remote: { type: 'http', url: URL_WITH_SECRETS },
        local: {
          type: 'stdio',
          command: process.execPath,
          args: [FIXTURE, '--api-key', 'arg-secret-7171', '--token=arg-tok-7272', '--verbose'],
          env: {
            DB_PASS: 'dbpass-8181',
            GITHUB_PAT: 'pat-9191',
            FAKE_TOKEN: 'literal-token-535353',
            KC: 'keychain:github',
            FROM_ENV: '${FROM_ENV_VALUE}',
          },
        },
      },
    },
  });
}

const MASKED = {
  'mcp.remote.url': 'https://user:[REDACTED]@example.com/mcp?token=[REDACTED]…-666&mode=x',
  'mcp.local.args': [FIXTURE, '--api-key', '[REDACTED]…7171', '--token=[REDACTED]…7272', '--verbose'],
  'mcp.local.env.DB_PASS': '[REDACTED]',
  'mcp.local.env.GITHUB_PAT': '[REDACTED]',
  'mcp.local.env.FAKE_TOKEN': '[REDACTED]…5353',
  'mcp.local.env.KC': 'keychain:github',
  'mcp.local.env.FROM_ENV': '[REDACTED]',
};

describe('config readouts of MCP credentials', () => {
  it('config explain and config get mask them', async () => {
    const app = await appWithSecrets();
    for (const command of ['config explain', 'config get']) {
      const result = await viaCli(app, { command, args: ['key?'] }, { key: 'mcp' });
      expect(result.code, result.stderr).toBe(0);
      const fields = (result.json as { fields: { key: string; value: unknown }[] }).fields;
      const values = Object.fromEntries(fields.map((f) => [f.key, f.value]));
      expect(values).toMatchObject(MASKED);
      for (const secret of [
        'pw-in-url-555',
        'query-secret-666',
        'arg-secret-7171',
        'arg-tok-7272',
        'dbpass-8181',
        'pat-9191',
      ])
        expect(result.stdout).not.toContain(secret);
    }
  });

  it('mcp list masks the URL and the command line', async () => {
    const app = await appWithSecrets();
    const result = await viaCli(app, { command: 'mcp list' }, {});
    expect(result.code, result.stderr).toBe(0);
    const servers = (result.json as { servers: { id: string; target: string }[] }).servers;
    expect(servers.map((s) => [s.id, s.target])).toEqual([
      ['remote', MASKED['mcp.remote.url']],
      ['local', `${process.execPath} ${FIXTURE} --api-key [REDACTED]…7171 --token=[REDACTED]…7272 --verbose`],
    ]);
  });

  it('the redactor learns the URL and args secrets for logs and errors', async () => {
    const app = await appWithSecrets();
    expect(
      app.redactor.string(`spawned ${URL_WITH_SECRETS} --api-key arg-secret-7171 --token=arg-tok-7272`),
    ).toBe(
      'spawned https://user:[REDACTED]@example.com/mcp?token=[REDACTED]&mode=x --api-key [REDACTED] --token=[REDACTED]',
    );
  });

  it('the server still gets the real values', async () => {
    const app = await appWithSecrets();
    expect(app.config.mcp.remote.url).toBe(URL_WITH_SECRETS);
    expect(app.config.mcp.local.args).toContain('arg-secret-7171');
    app.mcpClients.start();
    await app.mcpClients.settled({ timeoutMs: 15_000 });
    const output = (await invokeTool(app, 'mcp_local_whoami', {}, { surface: 'agent' })) as {
      content: { text: string }[];
    };
    expect(JSON.parse(output.content[0].text).token_sha256).toBe(
      createHash('sha256').update('literal-token-535353').digest('hex'),
    );
  });
});
