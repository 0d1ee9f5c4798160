/**
 * Calls coding tools the way the agent loop does: through invokeTool with an agent ToolContext
 * whose `ask` and `event` are recorded (and `ask` can deny), with bus events captured.
 * @module
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../../src/errors';
import type { SessionEvent } from '../../src/events/bus';
import { invokeTool } from '../../src/tools/core/call-tool';
import type { PermissionRequest } from '../../src/tools/core/define-tool';
import type { CallContext as ToolCallContext } from '../../src/tools/core/types';
import { makeTestApp, type TestAppOptions } from '../helpers/make-test-app';

export interface Harness {
  app: Awaited<ReturnType<typeof makeTestApp>>;
  sessionId: string;
  runId: string;
  /** Call a tool as the agent of this session (or with overrides). */
  call<T = any>(name: string, input: unknown, extra?: Partial<ToolCallContext>): Promise<T>;
  /** The tool's text for the model. */
  modelText(name: string, result: unknown): string;
  asks: PermissionRequest[];
  events: { type: string; payload: Record<string, unknown> }[];
  busEvents: SessionEvent[];
  /** Deny every permission request from now on. */
  denyAll(): void;
  read(path: string): string;
}

export async function toolHarness(options: TestAppOptions = {}): Promise<Harness> {
  const app = await makeTestApp(options);
  const sessionId = 'ses_test';
  const runId = 'run_test';
  const asks: PermissionRequest[] = [];
  const events: Harness['events'] = [];
  const busEvents: SessionEvent[] = [];
  app.bus.subscribe('*', (event) => busEvents.push(event));
  let deny = false;
  return {
    app,
    sessionId,
    runId,
    asks,
    events,
    busEvents,
    call: (name, input, extra = {}) =>
      invokeTool(app, name, input, {
        surface: 'agent',
        sessionId,
        runId,
        ask: async (request) => {
          asks.push(request);
          if (deny) throw new SvcError('forbidden', `permission denied: ${request.title}`);
        },
        event: (type, payload) => events.push({ type, payload }),
        ...extra,
      }) as Promise<any>,
    modelText(name, result) {
      const tool = app.tools.require(name);
      return tool.toModelOutput ? tool.toModelOutput(result) : JSON.stringify(result);
    },
    denyAll() {
      deny = true;
    },
    read: (path) => readFileSync(join(app.workspace, path), 'utf8'),
  };
}
