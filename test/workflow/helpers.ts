/**
 * Helpers for driving workflows through the real loop: read what a fake-provider request asks
 * (the child's prompt, its tools, whether it follows a tool result), answer requests by content
 * when parallel children make the order unknowable, and read tool results and ledger lineage.
 * @module
 */
import type { App } from '../../src/app';
import type { SessionEvent } from '../../src/events/bus';
import type { RecordedRequest, Reply, ScriptEntry } from '../helpers/fake-provider';

type Message = { role: string; content?: unknown };

const text = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((c) => (typeof c === 'string' ? c : ((c as { text?: string }).text ?? ''))).join('')
      : '';

/** The first user message of the request: the run's prompt (a child's task). */
export const promptOf = (request: RecordedRequest): string =>
  text((request.body.messages as Message[]).find((m) => m.role === 'user')?.content);

/** The system prompt of the request. */
export const systemOf = (request: RecordedRequest): string =>
  text((request.body.messages as Message[]).find((m) => m.role === 'system')?.content);

/** True when the request follows a tool result (the model's next turn after a tool call). */
export const afterTool = (request: RecordedRequest): boolean =>
  (request.body.messages as Message[]).at(-1)?.role === 'tool';

/** The last tool result's text in the request. */
export const lastToolResult = (request: RecordedRequest): string =>
  text((request.body.messages as Message[]).filter((m) => m.role === 'tool').at(-1)?.content);

/** Tool names offered in the request. */
export const toolsOf = (request: RecordedRequest): string[] =>
  ((request.body.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name).sort();

/** `count` script entries that all answer with `answer(request)`: order-free scripting. */
export function router(count: number, answer: (request: RecordedRequest) => Reply): ScriptEntry[] {
  return Array.from({ length: count }, () => answer);
}

/** The tool-result outputs of a session, in order. */
export async function toolResults(
  app: App,
  sessionId: string,
): Promise<{ tool: string; output: string; is_error: boolean }[]> {
  return (await app.sessions.messages(sessionId))
    .flatMap((m) => m.parts)
    .filter((p) => p.type === 'tool-result') as unknown as {
    tool: string;
    output: string;
    is_error: boolean;
  }[];
}

/** Child runs of a run, oldest first. */
export const childRuns = async (app: App, runId: string) =>
  (await app.runs.list({ parent_run_id: runId, limit: 200 })).sort((a, b) => (a.id < b.id ? -1 : 1));

/**
 * The most runs of `runIds` active at once, from the bus `run.started` / `run.finished` events in
 * publication order (so it does not depend on the fixed test clock).
 */
export function maxConcurrent(events: SessionEvent[], runIds: string[]): number {
  const ids = new Set(runIds);
  let active = 0;
  let most = 0;
  for (const event of events) {
    const runId = (event.payload as { run_id?: string }).run_id;
    if (!runId || !ids.has(runId)) continue;
    if (event.type === 'run.started') most = Math.max(most, ++active);
    if (event.type === 'run.finished') active--;
  }
  return most;
}
