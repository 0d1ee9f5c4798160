/**
 * A test App on a fresh migrated PostgreSQL database whose statements are recorded as they are
 * sent: the frame of the store tests that count an append's statements
 * (test/store/pg-step-phase.test.ts, pg-tool-finished.test.ts); and an agent App on such a
 * database driven by a scripted model (pg-step-phase, pg-model-call-step-end).
 */
import { vi } from 'vitest';
import { StepRecorder } from '../../src/agent/step-recorder';
import type { App } from '../../src/app';
import type { SessionEvent } from '../../src/events/bus';
import type { RunEvent } from '../../src/runs/types';
import type { SqlClient } from '../../src/store/postgres/client';
import type { ModelCallRow } from '../../src/telemetry/model-call-store';
import type { AnyTool } from '../../src/tools/core/define-tool';
import { agentApp, echoTool } from './agent-harness';
import { makeTestApp } from './make-test-app';
import { driverStatements, migratedDatabase, type PostgresCluster, recordingClient } from './postgres';

/** The App and its database, its statements' texts in `sent`; `closers` gets their closes. */
export async function recordedApp(
  cluster: PostgresCluster,
  sent: string[],
  closers: (() => Promise<void>)[],
) {
  const sql = await migratedDatabase(cluster);
  const app = await makeTestApp({ postgres: recordingClient(sql, sent) });
  closers.push(async () => {
    await app.close();
    await sql.close();
  });
  return { app, sql };
}

/** An agent App with the echo tool on a fresh migrated database, its model scripted; `closers` gets their closes. */
export async function pgAgentApp(
  cluster: PostgresCluster,
  script: Parameters<typeof agentApp>[0],
  closers: (() => Promise<void>)[],
) {
  const sql = await migratedDatabase(cluster);
  const { app } = await agentApp(script, { extraTools: [echoTool], postgres: sql });
  closers.push(async () => {
    await app.close();
    await sql.close();
  });
  return { app, sql };
}

/** Session event types that are not the run's own writes' order (streaming, timing). */
export const QUIET = new Set(['message.delta', 'context.usage']);

/**
 * A scripted run on a fresh migrated PostgreSQL database (`cluster`) or on SQLite (undefined): the
 * statements the driver sent meanwhile (PostgreSQL), the run events stored and heard, the session's
 * events and messages. The frame of the tests that compare a run's writes on both stores
 * (test/store/pg-tool-finished.test.ts, pg-held-assistant.test.ts).
 */
export async function storeRun(
  cluster: PostgresCluster | undefined,
  script: Parameters<typeof agentApp>[0],
  options: {
    tools: AnyTool[];
    title: string;
    closers: (() => Promise<void>)[];
    config?: Record<string, unknown>;
    /** The client the App gets in place of the database's (a fault injected, PostgreSQL). */
    client?: (sql: SqlClient) => SqlClient;
    /** Called with the App and the session before the run is sent (a hook into the App; awaited). */
    started?: (app: App, sessionId: string) => void | Promise<void>;
  },
) {
  const sql = cluster ? await migratedDatabase(cluster) : undefined;
  const { app, events, provider } = await agentApp(script, {
    extraTools: options.tools,
    ...(sql ? { postgres: options.client ? options.client(sql) : sql } : {}),
    ...(options.config ? { extraConfig: options.config } : {}),
  });
  options.closers.push(async () => {
    await app.close();
    await sql?.close();
  });
  const heard: RunEvent[] = [];
  app.runs.onAppend((event) => heard.push(event));
  const session = await app.sessions.create({ title: options.title });
  await options.started?.(app, session.id);
  const driver = driverStatements();
  let sent: string[];
  let runId: string;
  let status: string;
  try {
    runId = (await app.agent.send({ sessionId: session.id, prompt: 'go' })).run_id;
    status = (await app.agent.wait(runId)).status;
    await app.bus.flush();
    sent = [...driver.sent];
  } finally {
    driver.restore();
  }
  const runEvents = await app.runs.events(runId);
  const messages = await app.sessions.messages(session.id);
  const sessionEvents = events.filter((e: SessionEvent) => e.session_id === session.id);
  return { app, sql, provider, session, runId, status, sent, heard, runEvents, messages, sessionEvents };
}

/** What must be the same on both stores: event types in order, messages' roles and parts. */
export function storeRunShape(r: Awaited<ReturnType<typeof storeRun>>) {
  return {
    status: r.status,
    run: r.runEvents.map((e) => [
      e.type,
      e.payload.tool ?? e.payload.phase ?? null,
      e.payload.is_error ?? null,
    ]),
    session: r.sessionEvents.filter((e) => !QUIET.has(e.type)).map((e) => e.type),
    messages: r.messages.map((m) => [
      m.role,
      m.parts.map((p) => ('output' in p ? [p.output, p.is_error] : p.type)),
    ]),
  };
}

/** A finished `agent_step` model-call row (1 in, 2 out, 0.5 cost) for the riding-insert tests. */
export function modelCallRow(id: string, session_id: string | null, run_id: string | null): ModelCallRow {
  return {
    id,
    at: 1_000,
    day: '1970-01-01',
    session_id,
    run_id,
    provider: 'fake',
    model: 'm',
    purpose: 'agent_step',
    input_tokens: 1,
    output_tokens: 2,
    reasoning_tokens: 0,
    cached_input_tokens: 0,
    cost: 0.5,
    ttft_ms: null,
    duration_ms: 3,
    status: 'ok',
  };
}

/**
 * A stop in the gap between a tool's end and its step end (p-pgtoolend's held result): spies
 * `StepRecorder.toolResult` so that, once a result part is recorded (the `nth` since arming: a step
 * of several calls, its last), the stop `arm` was given runs (once per arming), and records whether
 * the step's first result was then held for the step end (PostgreSQL) or already written (SQLite).
 * `restore()` removes the spy.
 */
export function stopInTheGap(): {
  arm(stop: () => Promise<unknown>, nth?: number): void;
  states: ('held' | 'written')[];
  restore(): void;
} {
  let stop: (() => Promise<unknown>) | undefined;
  let left = 0;
  const states: ('held' | 'written')[] = [];
  const toolResult = StepRecorder.prototype.toolResult;
  const spied = vi.spyOn(StepRecorder.prototype, 'toolResult').mockImplementation(async function (
    this: StepRecorder,
    ...args: Parameters<StepRecorder['toolResult']>
  ) {
    await toolResult.apply(this, args);
    if (!stop || --left > 0) return;
    const now = stop;
    stop = undefined;
    states.push((this as unknown as { heldResult?: unknown }).heldResult ? 'held' : 'written');
    await now();
  });
  return {
    arm: (next, nth = 1) => {
      stop = next;
      left = nth;
    },
    states,
    restore: () => spied.mockRestore(),
  };
}

/**
 * `app.telemetry.run` (the run's body, src/agent/run-control.ts) wrapped: once the body answered
 * its outcome and before the run's finish, `between` runs (awaited).
 */
export function betweenBodyAndFinish(app: App, between: () => Promise<unknown>) {
  const run = app.telemetry.run.bind(app.telemetry);
  vi.spyOn(app.telemetry, 'run').mockImplementation(async (...args: Parameters<App['telemetry']['run']>) => {
    const outcome = await run(...args);
    await between();
    return outcome;
  });
}
