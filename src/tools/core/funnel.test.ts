import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { makeTestApp } from '../../../test/helpers/make-test-app';
import { allTools } from '../index';
import { REMOVED_TOOL_NAMES } from './aliases';
import { invokeTool } from './call-tool';
import { type AnyTool, defineTool } from './define-tool';
import { effectiveTools } from './funnel';
import { createToolRegistry } from './registry';

const read = (name: string, extra: Partial<AnyTool> = {}) =>
  defineTool({
    name,
    family: 'test',
    tag: 'primitive',
    description: name,
    input: z.strictObject({}),
    mutates: false,
    run: async () => ({}),
    ...extra,
  });
const write = (name: string, extra: Partial<AnyTool> = {}) => read(name, { mutates: true, ...extra });

const tools = [
  read('reader'),
  write('writer'),
  write('gated', { gate: () => 'needs the frobnicator' }),
  write('disabled_one'),
  write('agent_denied'),
  read('config'),
] as AnyTool[];

describe('the funnel', () => {
  it('TOOLS-06/TOOLS-07/TOOLS-08/TOOLS-09/CFG-14/CFG-15: names the stage that removed each tool, in spec order', async () => {
    const app = await makeTestApp({
      tools,
      config: {
        options: { disabled_tools: ['disabled_one', 'gated'] },
        agents: { reviewer: { tools: { deny: ['agent_denied'] } } },
        permissions: { allowed_tools: ['writer'] },
      },
    });
    const byName = (entries: ReturnType<typeof app.funnel>) =>
      Object.fromEntries(entries.map((e) => [e.name, e]));
    const build = byName(app.funnel({ agent: 'reviewer' }));
    expect(build.gated).toMatchObject({
      registered: false,
      effective: false,
      removed_by: 'gate',
      reason: 'needs the frobnicator',
    });
    expect(build.disabled_one).toMatchObject({ effective: false, removed_by: 'disabled_tools' });
    expect(build.agent_denied).toMatchObject({
      effective: false,
      removed_by: 'agent_policy',
      reason: 'listed in agents.reviewer.tools.deny',
    });
    expect(build.writer).toMatchObject({
      effective: true,
      permission: 'allow',
      permission_reason: 'listed in permissions.allowed_tools',
    });
    expect(build.reader).toMatchObject({ effective: true, permission: 'allow' });

    const plan = byName(app.funnel({ mode: 'plan' }));
    expect(plan.writer).toMatchObject({ effective: false, removed_by: 'mode' });
    expect(plan.reader.effective).toBe(true);
    // A tool both disabled and gated is reported at the first stage that removes it.
    expect(plan.gated.removed_by).toBe('gate');

    const planning = byName(app.funnel({ phase: 'planning' }));
    expect(planning.writer).toMatchObject({
      removed_by: 'mode',
      reason: expect.stringContaining('planning phase'),
    });

    const other = byName(app.funnel({ agent: 'someone-else' }));
    expect(other.agent_denied).toMatchObject({ effective: true, permission: 'ask' });
  });

  it('CFG-17: allowed_tools never adds back a disabled tool', async () => {
    const app = await makeTestApp({
      tools,
      config: { options: { disabled_tools: ['writer'] }, permissions: { allowed_tools: ['writer'] } },
    });
    expect(effectiveTools(app.tools, app.config).map((t) => t.name)).not.toContain('writer');
    expect(app.funnel().find((e) => e.name === 'writer')).toMatchObject({
      removed_by: 'disabled_tools',
      permission: null,
    });
  });

  it('TOOLS-08/CFG-15: with no session the funnel report evaluates the build agent a new session gets', async () => {
    const app = await makeTestApp({ config: { agents: { build: { tools: { deny: ['view'] } } } } });
    type Report = { context: { agent: string | null }; tools: { name: string; removed_by: string | null }[] };
    const report = (await invokeTool(app, 'get_primitive_tools_status', {}, { surface: 'cli' })) as Report;
    expect(report.context.agent).toBe('build');
    expect(report.tools.find((t) => t.name === 'view')).toMatchObject({ removed_by: 'agent_policy' });
    const session = await app.sessions.create({ title: 'x' });
    const forSession = (await invokeTool(
      app,
      'get_primitive_tools_status',
      { session_id: session.id },
      { surface: 'cli' },
    )) as Report;
    expect(forSession.tools.find((t) => t.name === 'view')).toMatchObject({ removed_by: 'agent_policy' });
  });

  it('applies an explicit agent allowlist and pack-style policy layers', async () => {
    const app = await makeTestApp({
      tools,
      config: { agents: { narrow: { tools: { allow: ['reader'] } } } },
    });
    const names = app
      .funnel({ agent: 'narrow' })
      .filter((e) => e.effective)
      .map((e) => e.name);
    expect(names).toEqual(['reader']);
    const withPolicy = app.funnel({
      policies: [{ source: 'pack p', removes: (t) => (t.name === 'reader' ? 'denied by pack' : undefined) }],
    });
    expect(withPolicy.find((e) => e.name === 'reader')).toMatchObject({
      removed_by: 'agent_policy',
      reason: 'pack p: denied by pack',
    });
  });

  it('--yolo skips every prompt', async () => {
    const app = await makeTestApp({ tools });
    expect(app.funnel({ yolo: true }).find((e) => e.name === 'writer')?.permission).toBe('allow');
    expect(app.funnel().find((e) => e.name === 'writer')?.permission).toBe('ask');
  });

  it('TOOLS-40: rejects an old config tool name in an explicit allowlist, naming config', async () => {
    await expect(
      makeTestApp({ tools, config: { permissions: { allowed_tools: ['config_set'] } } }),
    ).rejects.toThrowError(
      /permissions\.allowed_tools: "config_set" is an old config tool name .* use "config"/,
    );
    await expect(
      makeTestApp({ tools, config: { agents: { a: { tools: { allow: ['set_config'] } } } } }),
    ).rejects.toThrowError(/agents\.a\.tools\.allow/);
  });

  it('TOOLS-39: accepts an old config tool name as an alias elsewhere', async () => {
    const app = await makeTestApp({ tools, config: { options: { disabled_tools: ['config_set'] } } });
    expect(app.tools.get('config_read')?.name).toBe('config');
    expect(app.funnel().find((e) => e.name === 'config')?.removed_by).toBe('disabled_tools');
  });

  it('TOOLS-45/TOOLS-52: never registers removed names or submit_plan', () => {
    for (const name of REMOVED_TOOL_NAMES) {
      expect(allTools.map((t) => t.name)).not.toContain(name);
      expect(() => createToolRegistry([read(name)], () => ({}) as never)).toThrowError(/removed name/);
    }
  });
});
