/**
 * The promises a run's start and its steps' funnel make for what a compat request never uses
 * (issue 17 item 3, p-compatcpu, stop 54). Pins:
 * - with operating packs off (the default) the packs' policy provider answers `[]` at once, so a
 *   step's funnel context waits for no Promise.all over the providers;
 * - with packs off the packs' prompt section answers at once and the prompt assembly does not
 *   await a section that answered at once;
 * - a run after the first takes the AI SDK kept by the first, no `import('ai')` per run;
 * - with packs on, the pack's layer and prompt section are still there.
 */
import { describe, expect, it, vi } from 'vitest';
import { agentKind } from '../../src/agent/agent-kinds';
import { assembleSystemPrompt } from '../../src/agent/prompt';
import * as stepRequest from '../../src/agent/step-request';
import type { PromptSection } from '../../src/agent/types';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { countPromises } from '../helpers/promises';

describe('the promises of a run’s start', () => {
  it('ENGINE-CPU-200: with packs off the funnel context makes no Promise.all over its policy providers', async () => {
    const { app } = await agentApp([reply().text('unused')]);
    try {
      expect(app.config.options.operating_packs).not.toBe(true);
      const session = await app.sessions.create({ title: 'funnel' });
      // The packs' provider, as the app holds it: an array at once, not a promise of one.
      expect(app.packs?.policies(session.id)).toEqual([]);
      const given = { mode: 'build', agent: 'build', phase: undefined };
      await app.funnelContext(session.id, given); // warm
      const calls = 200;
      let context: Awaited<ReturnType<typeof app.funnelContext>> | undefined;
      const made = await countPromises(async () => {
        for (let i = 0; i < calls; i++) context = await app.funnelContext(session.id, given);
      });
      expect(context?.policies).toEqual([]);
      // The function's own promise and its caller's await (≈ 2); the packs' async lookup and the
      // Promise.all over the providers made ≈ 9 more on d8325a2.
      expect(made / calls).toBeLessThanOrEqual(3);
    } finally {
      await app.close();
    }
  });

  it('ENGINE-CPU-201: with packs off a run’s prompt assembly awaits no section that answered at once', async () => {
    const { app } = await agentApp([reply().text('unused')]);
    const sections = app.agent.promptSections as PromptSection[];
    const all = [...sections];
    try {
      const session = await app.sessions.create({ title: 'prompt' });
      // The packs' section, packs off: no text, at once.
      expect(app.packs?.promptSection(session.id)).toBeUndefined();
      const input = { sessionId: session.id, kind: agentKind(app.config, 'build') };
      const first = await assembleSystemPrompt(app, input);
      const calls = 50;
      const count = () =>
        countPromises(async () => {
          for (let i = 0; i < calls; i++) await assembleSystemPrompt(app, input);
        });
      const withAll = await count();
      // The sections that answer at once taken out: the assembly makes as many promises without
      // them as with them (the packs' section cost ≈ 6 a call and the MCP start's 1 on d8325a2).
      const atOnce = all.filter((section) => {
        const answer = section(session.id);
        return !(answer && 'then' in answer);
      });
      sections.splice(0, sections.length, ...all.filter((section) => !atOnce.includes(section)));
      const without = await count();
      sections.splice(0, sections.length, ...all);
      expect((await assembleSystemPrompt(app, input)).system).toBe(first.system);
      expect({ withAll: withAll / calls, atOnce: atOnce.length }).toEqual({
        withAll: without / calls,
        atOnce: 2,
      });
    } finally {
      sections.splice(0, sections.length, ...all);
      await app.close();
    }
  });

  it('ENGINE-CPU-202: a run after the first takes the AI SDK kept by the first, no import() of it', async () => {
    const { app } = await agentApp([reply().text('one'), reply().text('two')]);
    const kept = vi.spyOn(stepRequest, 'keptSdk');
    const load = vi.spyOn(stepRequest, 'loadSdk');
    try {
      expect((await app.agent.run({ prompt: 'first' })).status).toBe('completed');
      // The first run of the process loaded it (or an earlier test's run did).
      expect(load.mock.calls.length + kept.mock.results.filter((r) => r.value).length).toBe(1);
      const before = { kept: kept.mock.calls.length, loads: load.mock.calls.length };
      expect((await app.agent.run({ prompt: 'second' })).status).toBe('completed');
      expect(kept.mock.results.at(-1)?.value).toBe(await import('ai'));
      expect({ kept: kept.mock.calls.length, loads: load.mock.calls.length }).toEqual({
        kept: before.kept + 1,
        loads: before.loads,
      });
    } finally {
      kept.mockRestore();
      load.mockRestore();
      await app.close();
    }
  });
});
