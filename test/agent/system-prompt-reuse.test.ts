/**
 * The system prompt kept between runs (issue 17 item 3). Pins: runs with the same inputs hand the
 * provider one system message object (its encoded bytes are kept by it), and a changed text is
 * another message with that text; the model receives the same system text and the prompt stack
 * rows are the same for the same prompt; any changed input (a context file, the date, the tools
 * listed) gives a new text at once, never the kept one.
 */
import { utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentKind } from '../../src/agent/agent-kinds';
import { assembleSystemPrompt } from '../../src/agent/prompt';
import { PromptCache, type StepRequestSource, systemMessage } from '../../src/agent/step-request';
import { deferredToolsBlock } from '../../src/agent/tool-exposure';
import type { AgentToolSpec } from '../../src/agent/toolbox';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { makeTestApp, testClock } from '../helpers/make-test-app';

/** A step driver's source with nothing to convert (the prompts below have no messages). */
const source = { tools: {}, signal: new AbortController().signal } as unknown as StepRequestSource;

const spec = (name: string, description = `${name} does one thing. More words.`): AgentToolSpec => ({
  name,
  family: 'test',
  description,
  inputSchema: { type: 'object', properties: {} },
});

/** Made an hour old, so the context files' cache trusts its stamps. */
function age(...paths: string[]) {
  const past = new Date(Date.now() - 3_600_000);
  for (const p of paths) utimesSync(p, past, past);
}

describe('the system prompt across runs', () => {
  it('ENGINE-CPU-90: runs with the same system text share one system message; another text is another message', async () => {
    const text = `You are svc. ${'rules '.repeat(500)}`;
    // Two runs' prompt caches (each run has its own), the same text built afresh for each.
    const first = await new PromptCache(source, []).for(text, undefined);
    const second = await new PromptCache(source, []).for(`${text}`.slice(0), undefined);
    expect(first).toEqual([{ role: 'system', content: text }]);
    expect(second[0]).toBe(first[0]);
    // A changed text: a new message with it, and the old text is still its own message.
    const changed = await new PromptCache(source, []).for(`${text}!`, undefined);
    expect(changed[0]).not.toBe(first[0]);
    expect(changed[0]).toEqual({ role: 'system', content: `${text}!` });
    expect(systemMessage(text)).toBe(first[0]);
    // Past the kept few, a text is a new message again, with the same content.
    for (let i = 0; i < 20; i++) systemMessage(`other ${i}`);
    const later = systemMessage(text);
    expect(later).toEqual({ role: 'system', content: text });
    expect(systemMessage(text)).toBe(later);
  });

  it('ENGINE-CPU-91: the model receives the assembled text on every run, and the prompt stack rows match it', async () => {
    const { app, provider } = await agentApp(
      [reply().text('one'), reply().text('two'), reply().text('three')],
      {
        files: { 'AGENTS.md': 'house rules v1\n' },
      },
    );
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(await app.agent.run({ prompt: `hi ${i}` }));
    const systems = provider.requests.map((r) => r.body.messages[0]);
    expect(systems.map((m) => m.role)).toEqual(['system', 'system', 'system']);
    // The run adds the deferred tools' listing (no context window known: the essential level).
    const { system: assembled } = await assembleSystemPrompt(app, {
      sessionId: 's',
      kind: agentKind(app.config, 'build'),
    });
    const system = systems[0].content as string;
    expect(systems.map((m) => m.content)).toEqual([system, system, system]);
    expect(system.startsWith(`${assembled}\n\n# More tools\n`)).toBe(true);
    expect(system).toContain('house rules v1');
    const builds = await app.observe.promptStack.recent({ limit: 10 });
    const byRun = runs.map((r) => builds.find((b) => b.run_id === r.run_id));
    expect(byRun.every((b) => b !== undefined)).toBe(true);
    const [a, b, c] = byRun.map((b) => b!);
    expect(a.sha256_prefix).toBe(b.sha256_prefix);
    expect(c.sections).toEqual(a.sections);
    expect(a.total_chars).toBe(system.length);
    const event = await app.runs.events(runs[2].run_id, { types: ['prompt.assembled'] });
    expect(event[0].payload).toMatchObject({ chars: system.length, context_files: [{ path: 'AGENTS.md' }] });
  });

  it('ENGINE-CPU-92: an edited context file or a new day gives the next run a new text', async () => {
    const clock = testClock();
    const { app, provider } = await agentApp(
      [reply().text('one'), reply().text('two'), reply().text('three')],
      {
        files: { 'AGENTS.md': 'house rules v1\n' },
        clock,
      },
    );
    age(join(app.workspace, 'AGENTS.md'), app.workspace);
    await app.agent.run({ prompt: 'one' });
    writeFileSync(join(app.workspace, 'AGENTS.md'), 'house rules v2\n');
    await app.agent.run({ prompt: 'two' });
    clock.advance(24 * 3_600_000);
    await app.agent.run({ prompt: 'three' });
    const [one, two, three] = provider.requests.map((r) => r.body.messages[0].content as string);
    expect(one).toContain('house rules v1');
    expect(two).toContain('house rules v2');
    expect(two).not.toContain('house rules v1');
    expect(two).toContain("Today's date: 2026-11-22");
    expect(three).toContain("Today's date: 2026-11-23");
    const builds = await app.observe.promptStack.recent({ limit: 10 });
    expect(new Set(builds.map((b) => b.sha256_prefix)).size).toBe(3);
  });

  it('ENGINE-CPU-93: the same assembly twice is the same text; a changed section or kind changes it', async () => {
    const app = await makeTestApp({ files: { 'AGENTS.md': 'rules\n' } });
    let preamble = 'Pack preamble one.';
    app.promptSections.push(() => ({ source: 'test pack', text: preamble }));
    const build = agentKind(app.config, 'build');
    const first = await assembleSystemPrompt(app, { sessionId: 's', kind: build });
    const again = await assembleSystemPrompt(app, { sessionId: 's', kind: build });
    expect(again.system).toBe(first.system);
    expect(again.manifest).toEqual(first.manifest);
    preamble = 'Pack preamble two.';
    const changed = await assembleSystemPrompt(app, { sessionId: 's', kind: build });
    expect(changed.system).toBe(first.system.replace('Pack preamble one.', 'Pack preamble two.'));
    const plan = await assembleSystemPrompt(app, { sessionId: 's', kind: agentKind(app.config, 'plan') });
    expect(plan.system).toContain('# Agent: plan\nYou are in plan mode.');
    const extra = [{ name: 'deferred_tools', source: 'tool_exposure', text: '# More tools\na, b' }];
    const withExtra = await assembleSystemPrompt(app, { sessionId: 's', kind: build, extra });
    expect(withExtra.system).toBe(`${changed.system}\n\n# More tools\na, b`);
    expect((await assembleSystemPrompt(app, { sessionId: 's', kind: build })).system).toBe(changed.system);
  });

  it('ENGINE-CPU-94: the deferred tools listing follows the tools listed and the level', () => {
    const [a, b, c] = [spec('cpu94_a'), spec('cpu94_b'), spec('cpu94_c')];
    const listing = deferredToolsBlock([a, b, c]);
    expect(listing).toContain('- cpu94_a: cpu94_a does one thing\n- cpu94_b');
    expect(deferredToolsBlock([a, b, c])).toBe(listing);
    // A replaced spec with the same name (a reloaded definition): its new line.
    const replaced = deferredToolsBlock([a, spec('cpu94_b', 'Now something else. Really.'), c]);
    expect(replaced).toContain('- cpu94_b: Now something else\n');
    expect(deferredToolsBlock([a, b])).not.toContain('cpu94_c');
    const essential = deferredToolsBlock([a, b, c], 'essential');
    expect(essential?.endsWith('\ncpu94_a, cpu94_b, cpu94_c')).toBe(true);
    expect(deferredToolsBlock([a, b, c])).toBe(listing);
    expect(deferredToolsBlock([])).toBeUndefined();
  });
});
