/**
 * `session/prompt`: send the prompt through the one session API, stream the run's events as
 * `session/update` notifications (turn-events.ts), and answer with the stop reason and usage once
 * every notification has gone out.
 * @module
 */
import * as acp from '@agentclientprotocol/sdk/unstable';
import type { RunResult } from '../../agent/types';
import type { SessionEvent } from '../../events/bus';
import type { Logger } from '../../log';
import { stopReason } from './mapping';
import { createUpdateQueue, type OpenSession, type TurnContext } from './turn-context';
import { turnEventHandler } from './turn-events';

export async function runTurn(
  session: OpenSession,
  sessionId: string,
  text: string,
  client: acp.AgentContext,
  log: Logger,
): Promise<acp.PromptResponse> {
  const { app } = session;
  const updates = createUpdateQueue(client, sessionId, log);
  const turn: TurnContext = { app, session, sessionId, client, log, updates };
  let runId: string | undefined;
  const early: SessionEvent[] = [];
  const onEvent = turnEventHandler(turn, () => runId, early);

  const unsubscribe = await app.agent.subscribe(sessionId, onEvent);
  try {
    const sent = await app.agent.send({ sessionId, prompt: text, origin: 'acp' });
    runId = sent.run_id;
    for (const event of early.splice(0)) onEvent(event);
    if (!(await app.sessions.require(sessionId)).title)
      updates.update({ sessionUpdate: 'session_info_update', title: text.split('\n')[0].slice(0, 80) });
    const result = await app.agent.wait(sent.run_id);
    await updates.drained();
    const title = (await app.sessions.require(sessionId)).title;
    if (title)
      await client.notify('session/update', {
        sessionId,
        update: { sessionUpdate: 'session_info_update', title },
      });
    return promptResponse(result);
  } finally {
    unsubscribe();
  }
}

/** The run's outcome as the prompt's response; a run that did not end a turn is an error. */
function promptResponse(result: RunResult): acp.PromptResponse {
  const reason = stopReason(result);
  if (!reason) {
    throw new acp.RequestError(-32603, result.error ?? `the run ${result.status}`, {
      run_id: result.run_id,
      status: result.status,
      reason: result.reason,
    });
  }
  return {
    stopReason: reason,
    usage: {
      inputTokens: result.usage.input_tokens,
      outputTokens: result.usage.output_tokens,
      totalTokens: result.usage.input_tokens + result.usage.output_tokens,
      ...(result.usage.reasoning_tokens ? { thoughtTokens: result.usage.reasoning_tokens } : {}),
      ...(result.usage.cached_input_tokens ? { cachedReadTokens: result.usage.cached_input_tokens } : {}),
    },
    _meta: {
      svc: { run_id: result.run_id, steps: result.steps, cost: result.cost, model: result.model },
    },
  };
}
