/**
 * Local vendor CLI providers and child-agent (ACP) providers, with tiny fake binaries written by
 * the test. Pins: `svc auth <cli-kind>` reports installed/logged-in and stores nothing, without
 * opening the vendor's token file; a turn through a vendor CLI provider works with no svc-held
 * key; an ACP child answers a turn over JSON-RPC and svc declines its permission requests; status
 * shows readiness and launch posture; one provider per credential source shows ready (GEN-07).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { streamText } from 'ai';
import { describe, expect, it } from 'vitest';
import { credentialFilePath } from '../../src/providers/credential-store';
import { invokeTool } from '../../src/tools/core/call-tool';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { svc } from './helpers/cli';

function script(dir: string, name: string, body: string): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  writeFileSync(path, `#!${process.execPath}\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

const FAKE_CLAUDE = `
const fs = require('node:fs');
const args = process.argv.slice(2);
if (args[0] === '--version') { console.log('2.0.0 (Claude Code)'); process.exit(0); }
let input = '';
process.stdin.on('data', (d) => (input += d)).on('end', () => {
  if (process.env.FAKE_LOG) fs.writeFileSync(process.env.FAKE_LOG, JSON.stringify({ args, input }));
  console.log(JSON.stringify({ type: 'system', subtype: 'init' }));
  console.log(JSON.stringify({ type: 'assistant', message: { content: [{ type: 'text', text: 'claude ' }] } }));
  console.log(JSON.stringify({ type: 'assistant', message: { content: [{ type: 'text', text: 'heard: ' + input.trim() }] } }));
  console.log(JSON.stringify({ type: 'result', subtype: 'success', is_error: false, result: 'done', usage: { input_tokens: 7, output_tokens: 3 } }));
});`;

const FAKE_CODEX = `
const args = process.argv.slice(2);
if (args[0] === '--version') { console.log('codex-cli 0.99.0'); process.exit(0); }
if (args[0] === 'login' && args[1] === 'status') { process.exit(process.env.FAKE_CODEX_LOGGED_IN === '1' ? 0 : 1); }
let input = '';
process.stdin.on('data', (d) => (input += d)).on('end', () => {
  console.log(JSON.stringify({ type: 'thread.started', thread_id: 't1' }));
  console.log(JSON.stringify({ type: 'item.completed', item: { id: 'i1', type: 'agent_message', text: 'codex ok' } }));
  console.log(JSON.stringify({ type: 'turn.completed', usage: { input_tokens: 5, output_tokens: 2 } }));
});`;

const FAKE_ACP = `
const fs = require('node:fs');
const log = [];
let buf = '';
let pendingPermission;
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\\n');
process.stdin.on('data', (d) => {
  buf += d;
  let nl;
  while ((nl = buf.indexOf('\\n')) >= 0) {
    const line = buf.slice(0, nl); buf = buf.slice(nl + 1);
    if (!line.trim()) continue;
    const msg = JSON.parse(line);
    log.push(msg);
    if (process.env.FAKE_LOG) fs.writeFileSync(process.env.FAKE_LOG, JSON.stringify(log));
    if (msg.method === 'initialize') send({ id: msg.id, result: { protocolVersion: 1, agentCapabilities: {}, authMethods: [] } });
    else if (msg.method === 'session/new') send({ id: msg.id, result: { sessionId: 'sess-1' } });
    else if (msg.method === 'session/set_model') send({ id: msg.id, error: { code: -32601, message: 'nope' } });
    else if (msg.method === 'session/prompt') {
      pendingPermission = msg.id;
      send({ id: 900, method: 'session/request_permission', params: { sessionId: 'sess-1', toolCall: { toolCallId: 'tc1', title: 'rm -rf' }, options: [{ optionId: 'ok', name: 'Allow', kind: 'allow_once' }, { optionId: 'no', name: 'Reject', kind: 'reject_once' }] } });
    } else if (msg.id === 900) {
      const text = 'permission=' + msg.result.outcome.optionId;
      send({ method: 'session/update', params: { sessionId: 'sess-1', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'acp ' } } } });
      send({ method: 'session/update', params: { sessionId: 'sess-1', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } } } });
      send({ id: pendingPermission, result: { stopReason: 'end_turn' } });
    }
  }
});`;

async function appWithBin(config: Record<string, unknown> = {}, env: Record<string, string> = {}) {
  const workspace = tmpWorkspace();
  const bin = join(workspace, '.bin');
  const base = isolatedEnv(workspace, env);
  const app = await makeTestApp({
    workspace,
    config,
    env: { ...base, PATH: `${bin}${delimiter}${base.PATH}` },
  });
  return { app, bin };
}

async function stream(
  model: Awaited<ReturnType<Awaited<ReturnType<typeof makeTestApp>>['models']['resolve']>>,
) {
  let text = '';
  for await (const d of streamText({ model: model.language_model, prompt: 'hi there' }).textStream) text += d;
  return text;
}

describe('svc auth <cli-kind>', () => {
  it('CLI-05 / AUTH-40: reports installed and logged in (codex: its own status command)', async () => {
    const { app, bin } = await appWithBin();
    script(bin, 'codex', FAKE_CODEX);
    const out = await svc(app, ['auth', 'codex', '--json'], { env: { FAKE_CODEX_LOGGED_IN: '1' } });
    expect(out.code, out.stderr).toBe(0);
    expect(out.json).toMatchObject({
      platform: 'codex',
      installed: true,
      path: join(bin, 'codex'),
      version: 'codex-cli 0.99.0',
      logged_in: true,
      stores_credentials: false,
    });
    const loggedOut = await svc(app, ['auth', 'codex', '--json']);
    expect(loggedOut.code).toBe(1);
    expect(loggedOut.json).toMatchObject({ logged_in: false, next_step: 'run `codex login`' });
    const missing = await svc(app, ['auth', 'gemini', '--json']);
    expect(missing.json).toMatchObject({ installed: false, logged_in: null });
  });

  it('CLI-06 / AUTH-41: stores nothing and never opens the vendor token file', async () => {
    const { app, bin } = await appWithBin();
    script(bin, 'claude', FAKE_CLAUDE);
    const dir = join(app.env.HOME!, '.claude');
    mkdirSync(dir, { recursive: true });
    // A FIFO: a stat sees it, but opening it for reading would block the check forever.
    execFileSync('mkfifo', [join(dir, '.credentials.json')]);
    const config = readFileSync(join(app.workspace, 'svc.toml'), 'utf8');
    const out = await svc(app, ['auth', 'claude', '--json']);
    expect(out.code, out.stderr).toBe(0);
    expect(out.json).toMatchObject({ installed: true, logged_in: true });
    expect(out.json.login_check).toContain('not opened');
    expect(existsSync(credentialFilePath(app.env))).toBe(false);
    expect(readFileSync(join(app.workspace, 'svc.toml'), 'utf8')).toBe(config);
    expect(existsSync(join(app.dataDir, 'auth'))).toBe(false);
  });
});

describe('vendor CLI and ACP providers', () => {
  it('AUTH-08: a turn runs through the vendor binary with no svc-stored key', async () => {
    const { app, bin } = await appWithBin({ models: { large: 'claude-code/sonnet' } });
    script(bin, 'claude', FAKE_CLAUDE);
    const log = join(app.workspace, 'claude.log');
    (app.env as Record<string, string>).FAKE_LOG = log;
    const model = await app.models.resolve();
    expect(await stream(model)).toBe('claude heard: hi there');
    const call = JSON.parse(readFileSync(log, 'utf8'));
    expect(call.args).toEqual(['-p', '--output-format', 'stream-json', '--verbose', '--model', 'sonnet']);
    expect(existsSync(credentialFilePath(app.env))).toBe(false);
  });

  it('a codex CLI provider turn, and a custom vendor-cli provider by type', async () => {
    const { app, bin } = await appWithBin({
      providers: { 'my-codex': { type: 'codex-cli', command: 'codex' } },
      models: { large: 'my-codex/gpt-5' },
    });
    script(bin, 'codex', FAKE_CODEX);
    expect(await stream(await app.models.resolve())).toBe('codex ok');
  });

  it('AUTH-09: an ACP child answers over JSON-RPC; svc declines its permission request and stores no credential', async () => {
    const { app, bin } = await appWithBin({
      providers: { kid: { type: 'acp', command: 'fake-acp', models: [{ id: 'default' }] } },
      models: { large: 'kid/default' },
    });
    script(bin, 'fake-acp', FAKE_ACP);
    const log = join(app.workspace, 'acp.log');
    (app.env as Record<string, string>).FAKE_LOG = log;
    expect(await stream(await app.models.resolve())).toBe('acp permission=no');
    const messages = JSON.parse(readFileSync(log, 'utf8')) as { method?: string; params?: any }[];
    expect(messages.map((m) => m.method).filter(Boolean)).toEqual([
      'initialize',
      'session/new',
      'session/prompt',
    ]);
    expect(messages[1].params).toEqual({ cwd: app.workspace, mcpServers: [] });
    expect(messages[2].params.prompt).toEqual([{ type: 'text', text: 'hi there' }]);
    expect(existsSync(credentialFilePath(app.env))).toBe(false);
    const status = (await invokeTool(
      app,
      'get_provider_status',
      { provider: 'kid' },
      { surface: 'agent' },
    )) as any;
    expect(status.providers[0]).toMatchObject({
      ready: true,
      auth: 'acp',
      credential_source_kind: 'acp',
      launch: {
        command: 'fake-acp',
        resolved_path: join(bin, 'fake-acp'),
        transport: 'acp (JSON-RPC over stdio)',
        process: 'one per turn',
        credentials: 'owned by the child process',
      },
    });
  });

  it('status shows an uninstalled vendor CLI as not ready, with the check to run', async () => {
    const { app } = await appWithBin();
    const status = (await invokeTool(
      app,
      'get_provider_status',
      { provider: 'gemini-cli' },
      { surface: 'agent' },
    )) as any;
    expect(status.providers[0]).toMatchObject({
      ready: false,
      auth_command: 'svc auth gemini',
      launch: { resolved_path: null },
    });
    expect(status.providers[0].reason).toContain('svc auth gemini');
  });
});

describe('GEN-07: one provider per credential source shows ready', () => {
  it('env, config, OAuth bootstrap, cloud identity and a local vendor CLI', async () => {
    const { app, bin } = await appWithBin(
      { providers: { deepseek: { api_key: 'deepseek-config-000000' } } },
      {
        OPENAI_API_KEY: 'oa-env-key-0000000000',
        AWS_ACCESS_KEY_ID: 'AKIAGEN7000000000000',
        AWS_SECRET_ACCESS_KEY: 'gen7-secret-0000000000000',
        AWS_REGION: 'us-east-1',
      },
    );
    script(bin, 'claude', FAKE_CLAUDE);
    app.providers.store.set('openrouter', {
      kind: 'api_key',
      value: 'sk-or-v1-00000000000000',
      stored_by: 'svc auth openrouter',
      stored_at: 'now',
    });
    const rows = ((await invokeTool(app, 'get_provider_status', {}, { surface: 'agent' })) as any).providers;
    const row = (id: string) => rows.find((r: any) => r.id === id);
    expect(row('openai')).toMatchObject({ ready: true, credential_source_kind: 'env' });
    expect(row('deepseek')).toMatchObject({ ready: true, credential_source_kind: 'config_literal' });
    expect(row('openrouter')).toMatchObject({ ready: true, credential_source_kind: 'credential_store' });
    expect(row('amazon-bedrock')).toMatchObject({ ready: true, credential_source_kind: 'cloud_identity' });
    expect(row('claude-code')).toMatchObject({ ready: true, credential_source_kind: 'vendor_cli' });
  });
});
