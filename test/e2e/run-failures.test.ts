/**
 * `svc run` failing the ways a new user meets (the built binary, an empty HOME, the scripted fake
 * provider made to fail). Pins: stderr says what failed with the provider and the model, then the
 * next step and where the details are; --output json carries the same classified failure; a wrong
 * key, a wrong URL and a network problem read differently; the log file gets the failure with its
 * classified fields and `svc logs` shows it; no secret anywhere.
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const SECRET = 'sk-live-abcdefghijklmnopqrstuvwxyz0123';

function workspace(baseUrl: string, extra = '') {
  const config = `[providers.fake]\ntype = "openai-compat"\nbase_url = "${baseUrl}"\napi_key = "${SECRET}"\n${extra}\n[models]\nlarge = "fake/m1"\n`;
  return tmpWorkspace({ files: { 'svc.toml': config } });
}

const env = (ws: string) => ({ HOME: join(ws, '.home'), XDG_CONFIG_HOME: join(ws, '.home', '.config') });

/**
 * A port nothing listens on, for the whole test: TCP port 1 (tcpmux, never served here) is outside
 * the ephemeral range, so no server of a parallel test that binds port 0 can take it in the
 * meantime, as one did with a port freed by a closed server (a 404 answered, CI on Node 22).
 */
async function closedPort(): Promise<number> {
  const refused = await new Promise<boolean>((resolve) => {
    const socket = connect(1, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
  if (!refused) throw new Error('something listens on 127.0.0.1:1; this test needs that port closed');
  return 1;
}

describe('svc run when the provider fails', () => {
  it('a wrong key: the line, the next step, the JSON failure, the log', async () => {
    const provider = await fakeProvider([
      reply().httpError(401, { error: { message: `Incorrect API key provided: ${SECRET}` } }),
      reply().httpError(401, { error: { message: `Incorrect API key provided: ${SECRET}` } }),
    ]);
    const ws = workspace(provider.url);
    const text = await runBin(['run', 'hello'], { cwd: ws, env: env(ws) });
    expect(text.code).toBe(1);
    const lines = text.stderr.trimEnd().split('\n');
    expect(lines[0]).toBe(
      'svc: run failed: the provider rejected the API key (HTTP 401) (provider fake, model fake/m1)',
    );
    expect(lines[1]).toMatch(
      /^svc: next: .*svc auth token fake --token-stdin.*\(details: svc runs get run_\w+\)$/,
    );
    expect(lines).toHaveLength(2);

    const json = await runBin(['run', '--output', 'json', 'hello'], { cwd: ws, env: env(ws) });
    const result = JSON.parse(json.stdout);
    expect(result.failure).toMatchObject({
      code: 'provider_unauthorized',
      details: { provider: 'fake', model: 'fake/m1', status: 401 },
    });
    const run = JSON.parse(
      (await runBin(['runs', 'get', result.run_id, '--json'], { cwd: ws, env: env(ws) })).stdout,
    );
    expect(run.run.failure).toEqual(result.failure);

    const log = readFileSync(join(ws, '.svc', 'logs', 'svc.log'), 'utf8');
    expect(log).toContain('"message":"provider call failed"');
    expect(log).toContain('"code":"provider_unauthorized"');
    expect(log).toContain('"message":"run started"');
    const logs = JSON.parse((await runBin(['logs', '--json'], { cwd: ws, env: env(ws) })).stdout);
    expect(logs.exists).toBe(true);
    expect(logs.entries[0]).toMatchObject({ level: 'warn', fields: { code: 'provider_unauthorized' } });
    for (const output of [text.stderr, json.stdout, json.stderr, log, JSON.stringify(logs)]) {
      expect(output).not.toContain(SECRET);
    }
  });

  it('a closed port, an unresolvable host and a silent server each say what happened', {
    timeout: 120_000,
  }, async () => {
    const port = await closedPort();
    const refusedWs = workspace(`http://127.0.0.1:${port}/v1`);
    const refused = await runBin(['run', 'hello'], {
      cwd: refusedWs,
      env: env(refusedWs),
      timeoutMs: 60_000,
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `svc: run failed: connection refused: nothing listens at 127.0.0.1:${port}`,
    );
    expect(refused.stderr).toContain(`svc: next: start the model server, or fix providers.fake.base_url`);

    const dnsWs = workspace('http://nonexistent.invalid/v1');
    const dns = await runBin(['run', 'hello'], { cwd: dnsWs, env: env(dnsWs), timeoutMs: 60_000 });
    expect(dns.code).toBe(1);
    expect(dns.stderr).toContain(
      'svc: run failed: the host nonexistent.invalid does not resolve (DNS lookup failed)',
    );

    const provider = await fakeProvider([reply().hang(30_000)]);
    const slowWs = workspace(provider.url, 'timeout_seconds = 1');
    const slow = await runBin(['run', 'hello'], { cwd: slowWs, env: env(slowWs), timeoutMs: 60_000 });
    expect(slow.code).toBe(1);
    expect(slow.stderr).toContain(
      'svc: run failed: no answer from the provider within 1 s (provider fake, model fake/m1)',
    );
    expect(slow.stderr).toContain('raise providers.fake.timeout_seconds (now 1)');
  });
  it('CLI-FIRST-10: an unusable --data-dir is a config error, exit 2, with the next step (it was 1)', async () => {
    const provider = await fakeProvider([reply().text('never asked')]);
    const ws = workspace(provider.url);
    const cases: [string, string][] = [
      ['/proc/svc-e2e/data', 'cannot be created (ENOENT)'],
      [join(ws, 'svc.toml'), 'is not a directory (ENOTDIR)'],
    ];
    for (const [dir, what] of cases) {
      const result = await runBin(['--data-dir', dir, 'run', 'hi'], { cwd: ws, env: env(ws) });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(
        `svc: data dir ${dir} ${what}; pass --data-dir or set SVC_DATA_DIR to a writable directory\n`,
      );
    }
  });
});
