/**
 * A scripted TuiClient for component tests: records every call, answers from overridable
 * handlers, and lets the test publish session events to subscribers.
 * @module
 */

import { SvcError } from '../../src/errors';
import type { SessionEvent } from '../../src/events/bus';
import type {
  ModelChoice,
  PermissionPrompt,
  ProviderRow,
  SessionSummary,
  ToolResult,
  TuiClient,
} from '../../src/surfaces/tui/client';
import type { FilterTimers } from '../../src/surfaces/tui/ui/input-filter';

export interface FakeClient extends TuiClient {
  calls: { method: string; args: unknown[] }[];
  callsOf(method: string): unknown[][];
  tools: Record<string, (input: Record<string, unknown>, signal?: AbortSignal) => Promise<unknown> | unknown>;
  models: ModelChoice[];
  providers: ProviderRow[];
  sessions: SessionSummary[];
  /** Publish an event to the session's subscribers. */
  emit(sessionId: string, type: string, payload: Record<string, unknown>): void;
}

export function session(id: string, patch: Partial<SessionSummary> = {}): SessionSummary {
  return {
    id,
    title: `title of ${id}`,
    model: null,
    mode: 'build',
    agent: 'build',
    parent_id: null,
    prompt_tokens: 0,
    completion_tokens: 0,
    cost: 0,
    created_at: 0,
    updated_at: 0,
    ...patch,
  };
}

export function fakeClient(overrides: Partial<FakeClient> = {}): FakeClient {
  const listeners = new Map<string, Set<(e: SessionEvent) => void>>();
  let eventId = 0;
  let created = 0;
  const client: FakeClient = {
    calls: [],
    callsOf(method) {
      return client.calls.filter((c) => c.method === method).map((c) => c.args);
    },
    tools: {},
    models: [
      { selector: 'fake/m1', provider: 'fake', name: 'm1', context_window: 128000, ready: true },
      { selector: 'fake/m2', provider: 'fake', name: 'm2', ready: true },
    ],
    providers: [{ id: 'fake', name: 'Fake', configured: true, ready: true, detail: 'ready' }],
    sessions: [session('ses_1'), session('ses_2')],
    emit(sessionId, type, payload) {
      const event = { id: ++eventId, session_id: sessionId, type, payload, created_at: 0 };
      for (const l of listeners.get(sessionId) ?? []) l(event);
    },
    info: () => ({ target: '/work/fake', transport: 'local', agent: true }),
    async listSessions() {
      record('listSessions');
      return client.sessions;
    },
    async createSession(input = {}) {
      record('createSession', input);
      const s = session(`ses_new${++created}`, { title: '' });
      client.sessions.push(s);
      return s;
    },
    async getSession(id) {
      record('getSession', id);
      const s = client.sessions.find((x) => x.id === id);
      if (!s) throw new SvcError('not_found', `session_id: no session "${id}"`);
      return s;
    },
    async messages(id) {
      record('messages', id);
      return [];
    },
    async sendPrompt(id, text) {
      record('sendPrompt', id, text);
      return { queued: false, run_id: 'run_1' };
    },
    async enqueue(id, text) {
      record('enqueue', id, text);
      return { queued: true, queue_length: 1 };
    },
    async cancel(id) {
      record('cancel', id);
    },
    async pendingPermissions(id): Promise<PermissionPrompt[]> {
      record('pendingPermissions', id);
      return [];
    },
    async answerPermission(id, requestId, decision) {
      record('answerPermission', id, requestId, decision);
    },
    async subscribe(sessionId, listener) {
      record('subscribe', sessionId);
      const set = listeners.get(sessionId) ?? new Set();
      listeners.set(sessionId, set);
      set.add(listener);
      return { close: () => set.delete(listener) };
    },
    toolForCli: () => undefined,
    async callTool(name, input, options = {}): Promise<ToolResult> {
      record('callTool', name, input, options.sessionId);
      const handler = client.tools[name];
      if (!handler) throw new SvcError('unavailable', `${name} is not available in this build`);
      const value = await handler(input, options.signal);
      return { value, text: JSON.stringify(value) };
    },
    async listModels() {
      record('listModels');
      return client.models;
    },
    async setSessionModel(id, selector) {
      record('setSessionModel', id, selector);
      const s = client.sessions.find((x) => x.id === id)!;
      s.model = selector;
      return s;
    },
    async providerStatus() {
      record('providerStatus');
      return client.providers;
    },
    async storeApiKey(provider, key) {
      record('storeApiKey', provider, key);
    },
    async close() {},
    ...overrides,
  };
  function record(method: string, ...args: unknown[]) {
    client.calls.push({ method, args });
  }
  return client;
}

/** Timers that fire when the test says so (KeyInputRoot's paste idle timer). */
export function manualTimers(): FilterTimers & { fire(): void; readonly pending: number } {
  const queue = new Map<number, () => void>();
  let next = 0;
  return {
    set(fn) {
      queue.set(++next, fn);
      return next;
    },
    clear(handle) {
      queue.delete(handle as number);
    },
    fire() {
      const due = [...queue.values()];
      queue.clear();
      for (const fn of due) fn();
    },
    get pending() {
      return queue.size;
    },
  };
}

export const tick = (ms = 30) => new Promise((r) => setTimeout(r, ms));

/**
 * Wait until the frame satisfies the check (bounded), then a little more: Ink attaches a newly
 * shown component's key handler in an effect after the frame is written, so a key sent at once
 * could arrive before anyone listens.
 */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > timeoutMs) throw new Error('waitFor timed out');
    await tick(15);
  }
  await tick(40);
}
