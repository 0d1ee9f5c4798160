/**
 * Compaction guarantees (issue 22, item 5; docs/compaction.md): driven by the scripted fake
 * provider over loopback. (a) it never loops: one compaction per threshold crossing, at most
 * MAX_FAILED_COMPACTIONS failed attempts a run, a summary that is not smaller is rejected;
 * (b) the request after a compaction is smaller than the one before; (c) a window that is
 * already overflowing is cut to fit and the run goes on; (d) it fires at
 * options.compaction_threshold (default 0.85), not before; (e) the system prompt (pinned
 * instructions) and the latest user request are still in the next request.
 */

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentApp, echoTool } from '../../test/helpers/agent-harness';
import { type RecordedRequest, reply } from '../../test/helpers/fake-provider';
import type { SessionEvent } from '../events/bus';
import { invokeTool } from '../tools/core/call-tool';
import { defineTool } from '../tools/core/define-tool';
import { LATEST_REQUEST_HEADING, MAX_FAILED_COMPACTIONS } from './compaction';
import { historyMessages, textOf } from './history';
import { SUMMARY_PROMPT } from './system-prompt.prompt';

const isSummary = (r: RecordedRequest) => r.body.messages?.[0]?.content === SUMMARY_PROMPT;
/** Estimated tokens of a request as sent (4 characters a token). */
const sizeOf = (r: RecordedRequest) => Math.ceil(JSON.stringify(r.body.messages).length / 4);
const stepRequests = (requests: RecordedRequest[]) => requests.filter((r) => !isSummary(r));

/** A read-only tool whose output is `size` characters. */
const bigTool = (size: number) =>
  defineTool({
    name: 'dump',
    family: 'test',
    tag: 'primitive',
    description: 'Dump a large output.',
    input: z.strictObject({}),
    mutates: false,
    run: async () => `HEAD-OF-OUTPUT ${'x'.repeat(size)} TAIL-OF-OUTPUT`,
  });

/** A model with a hard window: a request larger than `window` tokens fails as a real one would. */
const windowed = (window: number, next: ReturnType<typeof reply>) => (request: RecordedRequest) =>
  sizeOf(request) > window
    ? reply().httpError(400, {
        error: {
          message: 'context_length_exceeded: the request is over the window',
          type: 'invalid_request',
        },
      })
    : next;

const compactionEvents = (events: SessionEvent[]) => events.filter((e) => e.type === 'compaction.started');
const compactionReasons = (events: SessionEvent[]) =>
  compactionEvents(events).map((e) => (e.payload as { reason: string }).reason);

describe('compaction guarantees (issue 22)', () => {
  describe('(d) fires at the documented threshold, not before', () => {
    const big = { context_window: 100_000 };
    /** Only options.compaction_threshold decides (the health token-pressure follow-on is off). */
    const alone = (options: Record<string, unknown> = {}) => ({
      options: { health_followons: { enabled: false }, ...options },
    });
    const crossing = (input: number) => [
      reply().toolCall('echo', { text: 'a' }).usage(input, 100),
      reply().text('## Task\nsummary'),
      reply().text('done'),
    ];

    it('issue 22 (d): at 84.9% of the window (options.compaction_threshold default 0.85) it does not compact', async () => {
      const { app, provider, events } = await agentApp(
        [reply().toolCall('echo', { text: 'a' }).usage(84_800, 100), reply().text('done')],
        { extraTools: [echoTool], modelInfo: big, extraConfig: alone() },
      );
      const result = await app.agent.run({ prompt: 'go' });
      expect(result.status).toBe('completed');
      expect(provider.requests.filter(isSummary)).toHaveLength(0);
      expect(compactionEvents(events)).toHaveLength(0);
    });

    it('issue 22 (d): at 85% of the window (options.compaction_threshold default 0.85) it compacts once, at the step boundary', async () => {
      const { app, provider, events } = await agentApp(crossing(84_900), {
        extraTools: [echoTool],
        modelInfo: big,
        extraConfig: alone(),
      });
      const result = await app.agent.run({ prompt: 'go' });
      expect(result.status).toBe('completed');
      expect(provider.requests.map(isSummary)).toEqual([false, true, false]);
      expect(compactionReasons(events)).toEqual(['auto']);
    });

    it('issue 22 (d): options.compaction_threshold moves the point (0.5: not at 49.9%, at 50%)', async () => {
      const options = alone({ compaction_threshold: 0.5 });
      const below = await agentApp(
        [reply().toolCall('echo', { text: 'a' }).usage(49_800, 100), reply().text('done')],
        { extraTools: [echoTool], modelInfo: big, extraConfig: options },
      );
      await below.app.agent.run({ prompt: 'go' });
      expect(below.provider.requests.filter(isSummary)).toHaveLength(0);
      const at = await agentApp(crossing(49_900), {
        extraTools: [echoTool],
        modelInfo: big,
        extraConfig: options,
      });
      await at.app.agent.run({ prompt: 'go' });
      expect(at.provider.requests.filter(isSummary)).toHaveLength(1);
    });

    it('issue 22 (d): with the defaults the health token-pressure follow-on compacts first, at 80% (not at 79.9%)', async () => {
      const below = await agentApp(
        [reply().toolCall('echo', { text: 'a' }).usage(79_800, 100), reply().text('done')],
        { extraTools: [echoTool], modelInfo: big },
      );
      await below.app.agent.run({ prompt: 'go' });
      expect(below.provider.requests.filter(isSummary)).toHaveLength(0);
      const at = await agentApp(crossing(79_900), { extraTools: [echoTool], modelInfo: big });
      await at.app.agent.run({ prompt: 'go' });
      expect(at.provider.requests.map(isSummary)).toEqual([false, true, false]);
      expect(compactionReasons(at.events)).toEqual(['health_followon']);
    });

    it('issue 22 (d): options.auto_compact = false never compacts automatically, even at 99%', async () => {
      const { app, provider } = await agentApp(
        [reply().toolCall('echo', { text: 'a' }).usage(98_000, 1_000), reply().text('done')],
        { extraTools: [echoTool], modelInfo: big, extraConfig: alone({ auto_compact: false }) },
      );
      const result = await app.agent.run({ prompt: 'go' });
      expect(result.status).toBe('completed');
      expect(provider.requests.filter(isSummary)).toHaveLength(0);
    });
  });

  describe('(a) never loops', () => {
    const window = { context_window: 1000 };

    it('issue 22 (a): one compaction per threshold crossing, billed as purpose compaction, with tokens before and after', async () => {
      const { app, provider, events } = await agentApp(
        [
          reply().toolCall('echo', { text: 'one' }).usage(900, 20),
          reply().text('## Task\nEcho things.'),
          reply().toolCall('echo', { text: 'two' }).usage(200, 10),
          reply().toolCall('echo', { text: 'three' }).usage(250, 10),
          reply().text('done').usage(300, 5),
        ],
        { extraTools: [echoTool], modelInfo: window },
      );
      const result = await app.agent.run({ prompt: 'echo three times' });
      expect(result).toMatchObject({ status: 'completed', text: 'done' });
      expect(provider.requests.map(isSummary)).toEqual([false, true, false, false, false]);
      expect(compactionEvents(events)).toHaveLength(1);
      const finished = events.find((e) => e.type === 'compaction.finished')!.payload as {
        tokens_before: number;
        tokens_after: number;
      };
      expect(finished.tokens_before).toBe(920);
      expect(finished.tokens_after).toBeLessThan(finished.tokens_before);
      const purposes = (await app.telemetry.ledger.calls({ runId: result.run_id })).map((c) => c.purpose);
      expect(purposes.filter((p) => p === 'compaction')).toHaveLength(1);
      expect(purposes.filter((p) => p === 'agent_step')).toHaveLength(4);
    });

    it(`issue 22 (a): a failing summarizer is tried at most MAX_FAILED_COMPACTIONS (${MAX_FAILED_COMPACTIONS}) times a run, then the run goes on`, async () => {
      const refused = () =>
        reply().httpError(400, { error: { message: 'summary model refused', type: 'invalid' } });
      const { app, provider } = await agentApp(
        [
          reply().toolCall('echo', { text: '1' }).usage(950, 10),
          refused(),
          reply().toolCall('echo', { text: '2' }).usage(960, 10),
          refused(),
          reply().toolCall('echo', { text: '3' }).usage(970, 10),
          reply().toolCall('echo', { text: '4' }).usage(980, 10),
          reply().text('done anyway').usage(990, 5),
        ],
        { extraTools: [echoTool], modelInfo: window },
      );
      const result = await app.agent.run({ prompt: 'go' });
      expect(result).toMatchObject({ status: 'completed', text: 'done anyway', steps: 5 });
      expect(provider.requests.filter(isSummary)).toHaveLength(MAX_FAILED_COMPACTIONS);
      const failed = await app.runs.events(result.run_id, { types: ['compaction.failed'] });
      expect(failed).toHaveLength(MAX_FAILED_COMPACTIONS);
      expect(failed[0].payload.message).toContain('summarizing failed');
      expect((await app.sessions.require(result.session_id)).metadata.compactions).toBeUndefined();
    });

    it('issue 22 (a)(b): a summary that is not smaller than the history is rejected and the history stays whole', async () => {
      const tooLarge = () => reply().text(`## Task\n${'words '.repeat(2_000)}`);
      const { app, provider } = await agentApp(
        [
          reply().toolCall('echo', { text: '1' }).usage(900, 10),
          tooLarge(),
          reply().toolCall('echo', { text: '2' }).usage(920, 10),
          tooLarge(),
          reply().toolCall('echo', { text: '3' }).usage(930, 10),
          reply().text('done').usage(940, 5),
        ],
        { extraTools: [echoTool], modelInfo: window },
      );
      const result = await app.agent.run({ prompt: 'go' });
      expect(result).toMatchObject({ status: 'completed', text: 'done' });
      expect(provider.requests.filter(isSummary)).toHaveLength(MAX_FAILED_COMPACTIONS);
      const failed = await app.runs.events(result.run_id, { types: ['compaction.failed'] });
      expect(failed.map((e) => e.payload.message)).toEqual([
        expect.stringContaining('is not smaller than the history'),
        expect.stringContaining('is not smaller than the history'),
      ]);
      const session = await app.sessions.require(result.session_id);
      expect(session.metadata.summary_message_id).toBeUndefined();
      // The last request still carries every step: nothing was replaced by the oversized summary.
      const last = stepRequests(provider.requests).at(-1)!;
      expect(last.body.messages.map((m: { role: string }) => m.role)).toEqual([
        'system',
        'user',
        'assistant',
        'tool',
        'assistant',
        'tool',
        'assistant',
        'tool',
      ]);
    });
  });

  describe('(b) the context after compaction is smaller', () => {
    it('issue 22 (b): the request after a compaction is smaller than the request before it', async () => {
      const text = 'y'.repeat(1_500);
      const { app, provider, events } = await agentApp(
        [
          reply().toolCall('echo', { text }).usage(200, 100),
          reply().toolCall('echo', { text }).usage(900, 400),
          reply().text('## Task\nEcho a long text twice.\n## Next steps\nAnswer.'),
          reply().text('done').usage(200, 5),
        ],
        { extraTools: [echoTool], modelInfo: { context_window: 1500 } },
      );
      const result = await app.agent.run({ prompt: 'echo it twice' });
      expect(result.status).toBe('completed');
      const steps = stepRequests(provider.requests);
      expect(steps).toHaveLength(3);
      expect(sizeOf(steps[2])).toBeLessThan(sizeOf(steps[1]));
      expect(JSON.stringify(steps[2].body.messages)).not.toContain(text);
      const finished = events.find((e) => e.type === 'compaction.finished')!.payload as {
        tokens_before: number;
        tokens_after: number;
      };
      expect(finished.tokens_after).toBeLessThan(finished.tokens_before);
    });
  });

  describe('(c) a window already overflowing', () => {
    const window = 8_000;

    it('issue 22 (c): a single huge tool result is summarized away and the run continues within the window', async () => {
      const { app, provider } = await agentApp(
        [
          reply().toolCall('dump', {}).usage(1_500, 10),
          reply().text('## Task\nDumped a large output.'),
          windowed(window, reply().text('done').usage(1_600, 5)),
        ],
        { extraTools: [bigTool(200_000)], modelInfo: { context_window: window } },
      );
      const result = await app.agent.run({ prompt: 'dump it' });
      expect(result).toMatchObject({ status: 'completed', text: 'done' });
      const summary = provider.requests.find(isSummary)!;
      expect(sizeOf(summary)).toBeLessThan(window);
      expect(sizeOf(stepRequests(provider.requests).at(-1)!)).toBeLessThan(window);
    });

    it('issue 22 (c): without a summary (summarizer down), the largest tool output is cut to fit and the run continues', async () => {
      const { app, provider } = await agentApp(
        [
          reply().toolCall('dump', {}).usage(1_500, 10),
          reply().httpError(400, { error: { message: 'summary model refused', type: 'invalid' } }),
          windowed(window, reply().text('done').usage(1_600, 5)),
        ],
        { extraTools: [bigTool(200_000)], modelInfo: { context_window: window } },
      );
      const result = await app.agent.run({ prompt: 'dump it' });
      expect(result).toMatchObject({ status: 'completed', text: 'done' });
      const last = stepRequests(provider.requests).at(-1)!;
      expect(sizeOf(last)).toBeLessThan(window);
      const sent = JSON.stringify(last.body.messages);
      expect(sent).toContain('HEAD-OF-OUTPUT');
      expect(sent).toContain('characters left out to fit the context window');
      expect(await app.runs.events(result.run_id, { types: ['context.trimmed'] })).toHaveLength(1);
      // Only the request was cut: the store keeps the whole output.
      const stored = (await app.sessions.messages(result.session_id)).find((m) => m.role === 'tool')!;
      expect(JSON.stringify(stored.parts).length).toBeGreaterThan(100_000);
    });

    it('issue 22 (c): with options.auto_compact = false the overflowing output is still cut to fit', async () => {
      const { app, provider } = await agentApp(
        [
          reply().toolCall('dump', {}).usage(1_500, 10),
          windowed(window, reply().text('done').usage(1_600, 5)),
        ],
        {
          extraTools: [bigTool(200_000)],
          modelInfo: { context_window: window },
          extraConfig: { options: { auto_compact: false } },
        },
      );
      const result = await app.agent.run({ prompt: 'dump it' });
      expect(result).toMatchObject({ status: 'completed', text: 'done' });
      expect(provider.requests.filter(isSummary)).toHaveLength(0);
    });

    it('issue 22 (c): a long history on a tiny window: the summary request itself fits the window', async () => {
      const text = 'z'.repeat(3_000);
      let first = reply();
      for (let i = 0; i < 12; i++) first = first.toolCall('echo', { text: `${i}${text}` });
      const { app, provider } = await agentApp(
        [
          first.usage(3_000, 500),
          reply().text('## Task\nEchoed twelve long texts.'),
          windowed(window, reply().text('done').usage(900, 5)),
        ],
        { extraTools: [echoTool], modelInfo: { context_window: window } },
      );
      const result = await app.agent.run({ prompt: 'echo twelve' });
      expect(result).toMatchObject({ status: 'completed', text: 'done' });
      const summary = provider.requests.find(isSummary)!;
      expect(JSON.stringify(summary.body.messages)).toContain('characters of the middle left out');
      expect(sizeOf(summary)).toBeLessThan(window);
    });
  });

  describe('(e) what it keeps', () => {
    it('issue 22 (e): after a compaction mid-run the next request has the system prompt (pinned instructions) and the latest request verbatim', async () => {
      const prompt = 'Rename every `foo` to `bar` in src/, then run the tests.\nDo not touch docs/.';
      const { app, provider } = await agentApp(
        [
          reply().toolCall('echo', { text: 'working' }).usage(900, 20),
          reply().text('## Task\nRenaming.'),
          reply().text('done').usage(200, 5),
        ],
        {
          extraTools: [echoTool],
          modelInfo: { context_window: 1000 },
          files: { 'AGENTS.md': 'PINNED-INSTRUCTION: never edit generated files.' },
        },
      );
      const result = await app.agent.run({ prompt });
      expect(result.status).toBe('completed');
      const [before, after] = stepRequests(provider.requests);
      expect(after.body.messages[0]).toEqual(before.body.messages[0]);
      expect(after.body.messages[0].content).toContain('PINNED-INSTRUCTION');
      const sent = after.body.messages.at(-1).content as string;
      expect(sent).toContain('## Task\nRenaming.');
      const nonce = /<<<user request ([0-9a-f]{16})>>>/.exec(sent)![1];
      expect(sent).toContain(
        `${LATEST_REQUEST_HEADING}\n<<<user request ${nonce}>>>\n${prompt}\n<<<end of user request ${nonce}>>>`,
      );
    });

    it('issue 22 (e): a run that starts near the window keeps its own prompt verbatim after the summary of the earlier runs', async () => {
      const { app, provider } = await agentApp(
        [
          reply().text('first answer').usage(880, 20),
          reply().text('## Task\nFirst question answered.'),
          reply().text('second answer'),
        ],
        { modelInfo: { context_window: 1000 } },
      );
      const first = await app.agent.run({ prompt: 'first question' });
      await app.agent.run({ sessionId: first.session_id, prompt: 'second question' });
      const next = stepRequests(provider.requests).at(-1)!.body.messages;
      expect(next.at(-1)).toEqual({ role: 'user', content: 'second question' });
      expect(next.at(-2).content).not.toContain(LATEST_REQUEST_HEADING);
    });

    it('issue 22: a compaction is undone by forking from the run before it', async () => {
      const { app } = await agentApp(
        [
          reply().text('first answer').usage(880, 20),
          reply().text('## Task\nFirst question answered.'),
          reply().text('second answer'),
        ],
        { modelInfo: { context_window: 1000 } },
      );
      const first = await app.agent.run({ prompt: 'first question' });
      await app.agent.run({ sessionId: first.session_id, prompt: 'second question' });
      expect((await app.sessions.require(first.session_id)).metadata.compactions).toBe(1);
      const fork = (await invokeTool(
        app,
        'fork_agent_run',
        { run_id: first.run_id },
        { surface: 'cli' },
      )) as {
        session_id: string;
      };
      const forked = await app.sessions.require(fork.session_id);
      expect(forked.metadata.summary_message_id).toBeUndefined();
      expect((await historyMessages(app.sessions, forked)).map((m) => [m.role, textOf(m.parts)])).toEqual([
        ['user', 'first question'],
        ['assistant', 'first answer'],
      ]);
    });
  });
});
