/**
 * Tool calls the client left without a result run through svc's tool path: the funnel (with the
 * compat tool policy layer), permissions, the tool itself, ledger events. Denied or unknown tools
 * are not run; their result says why. One tool turn with every result goes into the history.
 * @module
 */
import { createToolBridge } from '../../../agent/tool-bridge';
import type { App } from '../../../app';
import { createAgentToolbox } from '../../../tools/core/agent-toolbox';
import type { Conversation } from './conversation';
import { compatRuntime } from './runtime';

export async function runPendingCalls(
  app: App,
  sessionId: string,
  runId: string,
  conversation: Conversation,
  signal: AbortSignal,
): Promise<void> {
  const runtime = compatRuntime(app);
  const effective = new Set(
    app
      .funnel(await app.funnelContext(sessionId))
      .filter((e) => e.effective)
      .map((e) => e.name),
  );
  const toolbox = createAgentToolbox(app);
  const bridge = createToolBridge({
    app,
    toolbox,
    sessionId,
    runId,
    agent: (await app.sessions.require(sessionId)).agent,
    signal,
    permission: {},
    isActive: (name) => effective.has(name),
    onResult: async () => {},
  });
  const results: { tool_call_id: string; tool: string; output: string; is_error: boolean }[] = [];
  for (const call of conversation.pending) {
    const tool = app.tools.get(call.name);
    const denied = tool ? runtime.denies(tool) : undefined;
    if (!tool || denied) {
      const output = tool
        ? `forbidden: ${call.name} was not run: ${denied}`
        : `not_found: ${call.name} is not an svc tool (request tools are ignored; svc runs only its own registry)`;
      await app.runs.append(runId, 'openai_compat.tool_denied', {
        tool_call_id: call.id,
        tool: call.name,
        reason: tool ? denied : 'unknown_tool',
      });
      results.push({ tool_call_id: call.id, tool: call.name, output, is_error: true });
      continue;
    }
    try {
      const output = await bridge.call(tool.name, call.input, call.id);
      results.push({ tool_call_id: call.id, tool: call.name, output, is_error: false });
    } catch (error) {
      results.push({
        tool_call_id: call.id,
        tool: call.name,
        output: error instanceof Error ? error.message : String(error),
        is_error: true,
      });
    }
  }
  // The client's partial results of that turn come first, then the ones run here: one tool turn.
  const messages = await app.sessions.messages(sessionId);
  const last = messages.at(-1);
  const parts = results.map((r) => ({ type: 'tool-result' as const, ...r }));
  if (last?.role === 'tool') await app.sessions.updateMessage(last.id, { parts: [...last.parts, ...parts] });
  else await app.sessions.appendMessage({ session_id: sessionId, role: 'tool', parts, finished: true });
}
