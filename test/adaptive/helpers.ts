/**
 * Shared set-up of the adaptive orchestration tests: an agent app (real loop, fake provider)
 * with the gate on, and readers of the adaptive events it published.
 * @module
 */
import { expect } from 'vitest';
import type { App } from '../../src/app';
import type { SessionEvent } from '../../src/events/bus';
import { invokeTool } from '../../src/tools/core/call-tool';
import { type AgentAppOptions, agentApp } from '../helpers/agent-harness';
import type { FakeProvider, RecordedRequest, ScriptEntry } from '../helpers/fake-provider';

export const ADAPTIVE = 'adaptive_orchestration.';

/** Provider failures that fail a run at once (a 500 is retried by the SDK with backoff). */
export const FAILURE_STATUS = 400;

export async function adaptiveApp(
  script: ScriptEntry[],
  adaptive: Record<string, unknown> = {},
  options: AgentAppOptions & { options?: Record<string, unknown> } = {},
) {
  const { options: extraOptions = {}, extraConfig = {}, ...rest } = options;
  return agentApp(script, {
    ...rest,
    extraConfig: {
      ...extraConfig,
      options: { ...extraOptions, adaptive_orchestration: { enabled: true, ...adaptive } },
    },
  });
}

export const adaptiveEvents = (events: SessionEvent[], sessionId?: string) =>
  events.filter((e) => e.type.startsWith(ADAPTIVE) && (!sessionId || e.session_id === sessionId));

/** `type[:reshape_action]` of each adaptive event, in order. */
export const adaptiveSequence = (events: SessionEvent[], sessionId?: string) =>
  adaptiveEvents(events, sessionId).map((e) => {
    const action = (e.payload as { reshape_action?: string }).reshape_action;
    return `${e.type.slice(ADAPTIVE.length)}${action ? `:${action}` : ''}`;
  });

export async function snapshotOf(app: App, sessionId: string): Promise<any> {
  return app.redactor.value(
    await invokeTool(app, 'get_adaptive_orchestration', { session_id: sessionId }, { surface: 'agent' }),
  );
}

/** The system prompt of a recorded chat-completions request. */
export const systemOf = (request: { body: any }): string => String(request.body.messages[0]?.content ?? '');

/** The first recorded request whose last user message is `prompt`. */
export function requestFor(provider: FakeProvider, prompt: string): RecordedRequest {
  const found = provider.requests.find((r) => {
    const users = (r.body.messages as { role: string; content: unknown }[]).filter((m) => m.role === 'user');
    const last = users.at(-1)?.content;
    return (typeof last === 'string' ? last : JSON.stringify(last)).includes(prompt);
  });
  if (!found) throw new Error(`no request for the prompt ${JSON.stringify(prompt)}`);
  return found;
}

export const toolNamesOf = (request: { body: any }): string[] =>
  ((request.body.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name);

export const SNAPSHOT_KEYS_WITH_GENOME = [
  'session_id',
  'action',
  'posture',
  'classification_source',
  'effective_genome',
  'last_reshape_reason',
  'last_reshape_signal_id',
  'runtime_apply_status',
  'runtime_apply_pending_reason',
];

export const POSTURE_KEYS = [
  'state',
  'reason',
  'implemented',
  'configured',
  'available',
  'active',
  'pending_apply',
  'applied',
  'degraded',
  'decision_trace_available',
];

export function expectPosture(posture: Record<string, unknown>) {
  for (const key of POSTURE_KEYS) expect(posture, key).toHaveProperty(key);
  expect(typeof posture.reason).toBe('string');
  expect((posture.reason as string).length).toBeLessThanOrEqual(240);
  expect([
    'disabled',
    'unavailable',
    'enabled-idle',
    'active',
    'pending-apply',
    'applied',
    'degraded',
    'unknown',
  ]).toContain(posture.state);
}
