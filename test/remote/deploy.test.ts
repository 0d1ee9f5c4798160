/**
 * Deployed agents: the built svc started as a detached `svc service start http` per named agent.
 * Pins:
 * - a local agent deploys with its own token (in the credential store, never in the answer) and
 *   data dir, reports healthy, and a2a_delegate reaches it by name;
 * - stop ends the process, remove forgets it (row, token, files);
 * - TOOLS-29: a remote target is refused without [deploy] enabled, and works through its command
 *   prefix once enabled;
 * - a fleet deploys several named agents and stops them together.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { App } from '../../src/app';
import { pidAlive } from '../../src/deploy/spawn';
import { invokeTool } from '../../src/tools/core/call-tool';
import { fakeProvider, reply, type ScriptEntry } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { BIN } from '../helpers/run-bin';

async function deployingApp(script: ScriptEntry[], extra: Record<string, unknown> = {}) {
  const provider = await fakeProvider(script);
  const app = await makeTestApp({
    config: {
      providers: { fake: { type: 'openai-compat', base_url: provider.url } },
      models: { large: 'fake/m1' },
      deploy: { command: [process.execPath, BIN], ready_timeout_seconds: 30 },
      ...extra,
    },
  });
  // Deployed services outlive the App on purpose: the test stops them.
  onTestFinished(async () => {
    for (const deployment of await app.deploy.list())
      await app.deploy.remove(deployment.name).catch(() => {});
  });
  return { app, provider };
}

const call = (app: App, name: string, input: unknown) =>
  invokeTool(app, name, input, { surface: 'cli' }) as Promise<any>;

describe('deploy_agent', () => {
  it('deploys a local agent, delegates to it by name, stops and removes it', async () => {
    const { app, provider } = await deployingApp([reply().text('helper here: done')]);
    const deployed = await call(app, 'deploy_agent', {
      name: 'helper',
      description: 'A helper',
      skills: ['helping'],
    });
    expect(deployed).toMatchObject({
      name: 'helper',
      target: 'local',
      agent: 'build',
      status: 'running',
      health: 'healthy',
      skills: ['helping'],
      token_ref: expect.stringMatching(/^credentials:deploy:[0-9a-f]{8}:helper$/),
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
    });
    expect(pidAlive(deployed.pid)).toBe(true);
    const stored = app.providers.store.get(deployed.token_ref.replace(/^credentials:/, ''));
    expect(stored?.value).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(deployed)).not.toContain(stored?.value);

    // Its own token guards it: no bearer, no card.
    expect((await fetch(`${deployed.url}/.well-known/agent-card.json`)).status).toBe(401);
    const card = await fetch(`${deployed.url}/.well-known/agent-card.json`, {
      headers: { authorization: `Bearer ${stored?.value}` },
    });
    expect(await card.json()).toMatchObject({
      name: 'helper',
      description: 'A helper',
      skills: [{ id: 'helper', tags: ['helping'] }],
    });

    const answer = await call(app, 'a2a_delegate', { agent_name: 'helper', message: 'do the thing' });
    expect(answer).toMatchObject({
      state: 'completed',
      text: 'helper here: done',
      agent: { name: 'helper' },
      target: { kind: 'name', value: 'helper' },
    });
    expect(provider.requests.at(-1)?.body.messages.at(-1)).toMatchObject({
      role: 'user',
      content: 'do the thing',
    });

    const status = await call(app, 'deploy_agent', { action: 'status', name: 'helper' });
    expect(status).toMatchObject({ status: 'running', health: 'healthy' });
    await expect(call(app, 'deploy_agent', { name: 'helper' })).rejects.toThrow(
      /already deployed and running/,
    );

    const stopped = await call(app, 'deploy_agent', { action: 'stop', name: 'helper' });
    expect(stopped).toMatchObject({ status: 'stopped', health: 'stopped', pid: null, stop: 'terminated' });
    expect(pidAlive(deployed.pid)).toBe(false);
    await expect(call(app, 'a2a_delegate', { agent_name: 'helper', message: 'x' })).rejects.toThrow(
      /no deployed or configured agent "helper"/,
    );

    const removed = await call(app, 'deploy_agent', { action: 'remove', name: 'helper' });
    expect(removed).toEqual({ name: 'helper', removed: true, stop: 'not running' });
    expect(app.providers.store.get(deployed.token_ref.replace(/^credentials:/, ''))).toBeUndefined();
    expect(existsSync(deployed.data_dir)).toBe(false);
    expect(await call(app, 'deploy_agent', { action: 'list' })).toEqual({ deployments: [] });
  }, 90_000);

  it('TOOLS-29: refuses a remote target without [deploy] enabled', async () => {
    const { app } = await deployingApp([], {
      deploy: { targets: { box: { command: ['env'], host: '127.0.0.1' } } },
    });
    await expect(call(app, 'deploy_agent', { name: 'far', target: 'box' })).rejects.toThrow(
      /remote lifecycle operations need enabled deploy configuration: set \[deploy\] enabled = true/,
    );
    await expect(
      call(app, 'deploy_fleet', { fleet: 'f', agents: [{ name: 'far', target: 'box' }] }),
    ).rejects.toThrow(/need enabled deploy configuration/);
    expect(await app.deploy.list()).toEqual([]);
  });

  it('TOOLS-29: deploys to a configured remote target once [deploy] is enabled', async () => {
    const { app } = await deployingApp([reply().text('from the box')], {
      deploy: {
        enabled: true,
        targets: {
          box: {
            command: ['env'],
            host: '127.0.0.1',
            listen_host: '127.0.0.1',
            svc_command: [process.execPath, BIN],
          },
        },
      },
    });
    await expect(call(app, 'deploy_agent', { name: 'far', target: 'nowhere' })).rejects.toThrow(
      /no deploy target "nowhere"; configured: box/,
    );
    const deployed = await call(app, 'deploy_agent', { name: 'far', target: 'box' });
    expect(deployed).toMatchObject({ target: 'box', status: 'running', health: 'healthy' });
    expect(await call(app, 'a2a_delegate', { agent_name: 'far', message: 'hi' })).toMatchObject({
      state: 'completed',
      text: 'from the box',
    });
    expect(await call(app, 'deploy_agent', { action: 'stop', name: 'far' })).toMatchObject({
      status: 'stopped',
    });
  }, 90_000);

  it('rejects bad input with the field named', async () => {
    const { app } = await deployingApp([]);
    await expect(call(app, 'deploy_agent', { name: 'bad name' })).rejects.toThrow(/name: "bad name" must be/);
    await expect(call(app, 'deploy_agent', { name: 'x', agent: 'explore' })).rejects.toThrow(
      /subagent agent and cannot be used as a primary/,
    );
    await expect(call(app, 'deploy_agent', { name: 'x', tools: { allow: ['nope'] } })).rejects.toThrow(
      /tools.allow: unknown tool\(s\) nope/,
    );
    await expect(call(app, 'deploy_agent', { action: 'stop' })).rejects.toThrow(/name: action stop needs/);
    await expect(call(app, 'deploy_agent', { action: 'status', name: 'ghost' })).rejects.toThrow(
      /no deployed agent "ghost"/,
    );
  });
});

describe('deploy_fleet', () => {
  it('deploys named agents together, lists and stops the fleet', async () => {
    const { app } = await deployingApp([]);
    const fleet = await call(app, 'deploy_fleet', {
      fleet: 'crew',
      agents: [
        { name: 'reader', agent: 'plan', skills: ['reading'] },
        { name: 'writer', tools: { deny: ['bash'] } },
      ],
    });
    expect(fleet).toMatchObject({ fleet: 'crew', action: 'deploy', ok: true });
    expect(
      fleet.results.map((r: { name: string; deployment: { status: string } }) => [
        r.name,
        r.deployment.status,
      ]),
    ).toEqual([
      ['reader', 'running'],
      ['writer', 'running'],
    ]);
    const listed = await call(app, 'deploy_fleet', { fleet: 'crew', action: 'list' });
    expect(
      listed.deployments.map((d: { name: string; fleet: string; agent: string }) => [
        d.name,
        d.fleet,
        d.agent,
      ]),
    ).toEqual([
      ['reader', 'crew', 'plan'],
      ['writer', 'crew', 'build'],
    ]);
    const stopped = await call(app, 'deploy_fleet', { fleet: 'crew', action: 'stop' });
    expect(stopped).toMatchObject({
      ok: true,
      results: [
        { name: 'reader', ok: true },
        { name: 'writer', ok: true },
      ],
    });
    for (const result of fleet.results) expect(pidAlive(result.deployment.pid)).toBe(false);
    await expect(
      call(app, 'deploy_fleet', { fleet: 'crew', agents: [{ name: 'a' }, { name: 'a' }] }),
    ).rejects.toThrow(/appears twice/);
  }, 120_000);
});
