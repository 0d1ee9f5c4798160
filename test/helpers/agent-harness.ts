/**
 * An App wired to the scripted fake provider, with extra tools defined by the test, for driving
 * the agent loop: `const { app, provider } = await agentApp([reply().toolCall('echo', {…}), reply().text('done')])`.
 * @module
 */
import { z } from 'zod';
import type { App } from '../../src/app';
import type { SessionEvent } from '../../src/events/bus';
import { type AnyTool, defineTool } from '../../src/tools/core/define-tool';
import { allTools } from '../../src/tools/index';
import { type FakeProvider, fakeProvider, type ScriptEntry } from './fake-provider';
import { makeTestApp, type TestAppOptions } from './make-test-app';

export interface AgentAppOptions extends TestAppOptions {
  /** Tools added to the registry for this test. */
  extraTools?: AnyTool[];
  /** Merged into the generated config (providers and models are set). */
  extraConfig?: Record<string, unknown>;
  /** Model entry of the fake provider (context window, prices). */
  modelInfo?: Record<string, unknown>;
  allowExtra?: boolean;
}

export async function agentApp(
  script: ScriptEntry[],
  options: AgentAppOptions = {},
): Promise<{ app: Awaited<ReturnType<typeof makeTestApp>>; provider: FakeProvider; events: SessionEvent[] }> {
  const provider = await fakeProvider(script, { allowExtra: options.allowExtra });
  const { extraTools = [], extraConfig = {}, modelInfo, ...rest } = options;
  const app = await makeTestApp({
    ...rest,
    tools: [...allTools, ...extraTools],
    config: {
      providers: {
        fake: {
          type: 'openai-compat',
          base_url: provider.url,
          ...(modelInfo ? { models: [{ id: 'm1', ...modelInfo }] } : {}),
        },
      },
      models: { large: 'fake/m1' },
      ...extraConfig,
    },
  });
  const events: SessionEvent[] = [];
  app.bus.subscribe('*', (event) => events.push(event));
  return { app, provider, events };
}

/** A read-only tool that echoes its input. */
export const echoTool = defineTool({
  name: 'echo',
  family: 'test',
  tag: 'primitive',
  description: 'Echo the text back.',
  input: z.strictObject({ text: z.string().describe('Text to echo.') }),
  mutates: false,
  run: async (_ctx, input) => `echo: ${input.text}`,
});

/** A read-only tool that always throws a plain Error (a bug in a tool). */
export const throwingTool = defineTool({
  name: 'explode',
  family: 'test',
  tag: 'primitive',
  description: 'Always fails.',
  input: z.strictObject({}),
  mutates: false,
  run: async () => {
    throw new Error('kaboom');
  },
});

/** A mutating tool that does not ask itself: the loop must ask centrally. */
export function touchTool(log: string[]) {
  return defineTool({
    name: 'touch',
    family: 'test',
    tag: 'primitive',
    description: 'Record a mutation.',
    input: z.strictObject({ name: z.string() }),
    mutates: true,
    run: async (_ctx, input) => {
      log.push(input.name);
      return `touched ${input.name}`;
    },
  });
}

/** A mutating tool that asks itself, with a scope and a safe hint. */
export function shellTool(log: string[]) {
  return defineTool({
    name: 'shell',
    family: 'test',
    tag: 'primitive',
    description: 'Pretend to run a command.',
    input: z.strictObject({ command: z.string() }),
    mutates: true,
    asksPermission: true,
    run: async (ctx, input) => {
      const safe = /^(ls|cat|git status)\b/.test(input.command);
      await ctx.ask({
        tool: 'shell',
        title: `shell: ${input.command}`,
        scope: input.command.split(' ')[0],
        safe,
      });
      ctx.event?.('local_shell_started', { command: input.command });
      log.push(input.command);
      return `ran ${input.command}`;
    },
  });
}

export const eventTypes = (events: SessionEvent[], sessionId?: string) =>
  events.filter((e) => !sessionId || e.session_id === sessionId).map((e) => e.type);

/** A read-only tool that blocks until `release()` (or the run is cancelled). */
export function gateTool() {
  let release!: () => void;
  let entered!: () => void;
  const opened = new Promise<void>((resolve) => {
    release = resolve;
  });
  const reached = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const tool = defineTool({
    name: 'gate',
    family: 'test',
    tag: 'primitive',
    description: 'Wait at the gate.',
    input: z.strictObject({}),
    mutates: false,
    run: async (ctx) => {
      entered();
      await new Promise<void>((resolve, reject) => {
        opened.then(resolve);
        ctx.signal.addEventListener('abort', () => reject(new Error('aborted at the gate')), { once: true });
      });
      return 'passed the gate';
    },
  });
  return { tool, release, reached };
}

/** Resolve when the first event of `type` is published (any session). */
export function nextEvent(app: App, type: string): Promise<SessionEvent> {
  return new Promise((resolve) => {
    const off = app.bus.subscribe('*', (event) => {
      if (event.type === type) {
        off();
        resolve(event);
      }
    });
  });
}
