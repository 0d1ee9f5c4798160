/**
 * Agent kinds and sub-agents. Pins: list_agent_kinds lists built-ins and config kinds; the agent
 * tool runs a child session with its own run (parent run id, same family session id) and a
 * narrowed tool set (explore: read-only, no sub-agents), returns its final answer, and a
 * read-only parent cannot start a writing sub-agent.
 */
import { describe, expect, it } from 'vitest';
import { agentApp, echoTool, touchTool } from '../../test/helpers/agent-harness';
import { reply } from '../../test/helpers/fake-provider';
import { makeTestApp } from '../../test/helpers/make-test-app';
import { invokeTool } from './core/call-tool';

describe('agent kinds and sub-agents', () => {
  it('list_agent_kinds lists the built-ins and [agents.<id>] kinds', async () => {
    const app = await makeTestApp({
      config: {
        agents: {
          reviewer: { description: 'Reviews diffs', mode: 'subagent', read_only: true, max_steps: 5 },
        },
      },
    });
    const result = (await invokeTool(app, 'list_agent_kinds', {}, { surface: 'cli' })) as any;
    expect(result.kinds.map((k: { id: string }) => k.id)).toEqual([
      'build',
      'plan',
      'explore',
      'general',
      'reviewer',
    ]);
    expect(result.kinds.at(-1)).toMatchObject({
      builtin: false,
      mode: 'subagent',
      read_only: true,
      max_steps: 5,
    });
  });

  it('runs a sub-agent in a child session with a narrowed tool set and returns its answer', async () => {
    const log: string[] = [];
    const { app, provider } = await agentApp(
      [
        reply().toolCall('agent', { prompt: 'find echo usages', agent: 'explore', description: 'find echo' }),
        reply().text('echo is used in 3 places'),
        reply().text('The sub-agent found 3 places.'),
      ],
      // Every effective tool in the request (the fake model tells no window, so auto would defer).
      { extraTools: [echoTool, touchTool(log)], extraConfig: { options: { tool_exposure: 'all' } } },
    );
    const result = await app.agent.run({ prompt: 'where is echo used?' });
    expect(result).toMatchObject({ status: 'completed', text: 'The sub-agent found 3 places.' });
    const parentTools = provider.requests[0].body.tools.map(
      (t: { function: { name: string } }) => t.function.name,
    );
    const childTools = provider.requests[1].body.tools.map(
      (t: { function: { name: string } }) => t.function.name,
    );
    expect(parentTools).toEqual(expect.arrayContaining(['agent', 'touch', 'echo']));
    expect(childTools).toContain('echo');
    expect(childTools).not.toContain('touch');
    expect(childTools).not.toContain('agent');
    expect(provider.requests[1].body.messages.at(-1)).toEqual({ role: 'user', content: 'find echo usages' });
    expect(JSON.stringify(provider.requests[1].body.messages[0])).toContain('exploration sub-agent');
    // The parent got the child's answer as the tool result.
    expect(provider.requests[2].body.messages.at(-1)).toMatchObject({
      role: 'tool',
      content: 'echo is used in 3 places',
    });
    const [child] = await app.sessions.list({ parent_id: result.session_id });
    expect(child).toMatchObject({ title: 'find echo', agent: 'explore' });
    const childRun = (await app.runs.list({ session_id: child.id }))[0];
    expect(childRun).toMatchObject({
      parent_run_id: result.run_id,
      family_session_id: result.session_id,
      origin: 'subagent',
      status: 'completed',
    });
  });

  it('a read-only parent cannot start a writing sub-agent', async () => {
    const { app } = await agentApp([
      reply().toolCall('agent', { prompt: 'edit things', agent: 'general' }),
      reply().text('ok'),
    ]);
    const result = await app.agent.run({ prompt: 'x', agent: 'plan' });
    const output = (await app.sessions.messages(result.session_id))
      .flatMap((m) => m.parts)
      .find((p) => p.type === 'tool-result') as { output: string };
    expect(output.output).toContain('a read-only agent (plan) can only start read-only sub-agents');
  });
});
