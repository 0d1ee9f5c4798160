/**
 * A step's two messages as the step recorder leaves them before the step's end (an assistant
 * tool call and its tool result, both unfinished): the fixture of the PostgreSQL step-end tests
 * (test/store/pg-step-close.test.ts, pg-step-end.test.ts).
 */
import type { App } from '../../src/app';
import type { SessionStore } from '../../src/sessions/types';

/** A session store, SQLite's (synchronous) or PostgreSQL's. */
interface Appends<M> {
  appendMessage(input: Parameters<SessionStore['appendMessage']>[0]): M | Promise<M>;
}

export async function appendStepMessages<M>(sessions: Appends<M>, sessionId: string, runId: string | null) {
  const assistant = await sessions.appendMessage({
    session_id: sessionId,
    role: 'assistant',
    parts: [{ type: 'tool-call', tool_call_id: 'c1', tool: 'echo', input: { text: 'hi' } }],
    model: 'fake/m1',
    provider: 'fake',
    run_id: runId,
    finished: false,
  });
  const tool = await sessions.appendMessage({
    session_id: sessionId,
    role: 'tool',
    parts: [{ type: 'tool-result', tool_call_id: 'c1', tool: 'echo', output: 'first', is_error: false }],
    run_id: runId,
    finished: false,
  });
  return { assistant, tool };
}

/** A new session (`title`) with a running run of the build agent: what a step's writes belong to. */
export async function sessionWithRun(app: Pick<App, 'sessions' | 'runs'>, title: string) {
  const session = await app.sessions.create({ title });
  const run = await app.runs.create({
    session_id: session.id,
    family_session_id: session.id,
    agent: 'build',
    origin: 'cli',
    prompt: 'go',
    status: 'running',
  });
  return { session, run };
}
