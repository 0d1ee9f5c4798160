/**
 * Resuming a run on another node (issue 19): the node that ran it died; the durable engine
 * (src/engine/dbos-engine.ts) starts it again here. Its checkpoint is what the run already stored:
 * the transcript (each step's assistant message and each finished call's result are written as
 * they happen, and a call's `tool-call` part before the tool acts) and the ledger (steps, usage,
 * cost on the run's row). So the run goes on from the first unfinished step: the model is not
 * asked again for the steps already answered, and a call that started and never reported back is
 * not run again. The model is told its outcome is unknown, with what the workspace shows now, and
 * decides (call it again, look first, or go on).
 * @module
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { SvcError } from '../errors';
import type { Message, MessagePart } from '../sessions/session-store';
import { guardEnv, guardedArgs } from '../workspace/git-guard';
import type { RunContext } from './run-types';
import type { ToolBridge } from './tool-bridge';

const run = promisify(execFile);

/** What a call that never reported back gets instead of its result. */
export const UNKNOWN_OUTCOME =
  'outcome unknown: the node running this call stopped while it ran, and the run was resumed on another node. The call was NOT run again: it may have run completely, partly or not at all. Check the workspace before you repeat it.';

export type ToolCallPart = Extract<MessagePart, { type: 'tool-call' }>;

/**
 * The run's prompt as stored, and its totals so far from the run's row; with the session's
 * messages as read (read once: `settleUnfinishedCalls` goes on from them).
 */
export async function reopenedTurn(
  c: RunContext,
): Promise<{ user: Message; messages: Message[] } | undefined> {
  const { app, run, sessionId } = c;
  const messages = await app.sessions.messages(sessionId);
  const user = [...messages].reverse().find((m) => m.role === 'user' && m.run_id === run.id);
  if (!user) return undefined;
  c.steps = run.steps;
  Object.assign(c.usage, run.usage);
  c.cost = run.cost;
  return { user, messages };
}

/** A resumed run as its checkpoint leaves it: its stored prompt and its calls that wait for an answer. */
export interface ResumedTurn {
  user: Message;
  waiting: ToolCallPart[];
}

/**
 * The run resumed after its node died: its stored prompt, its unfinished calls settled (the
 * operator asked first, `unknown_outcome = "ask"`: the caller holds no read scope over this);
 * `afresh` when its node died before it stored its prompt, `unresumable` when it did more
 * without one.
 */
export async function resumedTurn(c: RunContext): Promise<ResumedTurn | 'afresh' | 'unresumable'> {
  const reopened = await reopenedTurn(c);
  // Its node died before it stored its prompt: nothing was done, it starts from its prompt here.
  if (!reopened) return c.run.steps === 0 ? 'afresh' : 'unresumable';
  const { settled, waiting } = await settleUnfinishedCalls(c, reopened.messages);
  // The step whose calls were cut off is closed here (its usage died with the node).
  if (settled.length > 0 || waiting.length > 0) {
    c.steps++;
    await c.app.runs.update(c.run.id, { steps: c.steps });
  }
  await c.ledger('phase', {
    phase: 'resumed',
    step: c.steps,
    unknown_outcomes: settled.length,
    ...(waiting.length ? { waiting_for_permission: waiting.length } : {}),
  });
  return { user: reopened.user, waiting };
}

/**
 * The calls of this run with a `tool-call` part and no result get the unknown outcome (stored, so
 * the history and every later read agree); an assistant message cut mid-stream is closed as it
 * is. A call that was waiting for a stored permission request never started (a tool asks before
 * it acts; issue 19 item 4): it is not settled here but returned in `waiting`, to be run again
 * (`runWaitingCalls`), which waits for the same request. `session`: the session's messages as
 * `reopenedTurn` read them. Returns the calls closed and those waiting.
 */
export async function settleUnfinishedCalls(
  c: RunContext,
  session: readonly Message[],
): Promise<{ settled: ToolCallPart[]; waiting: ToolCallPart[] }> {
  const { app, run } = c;
  const messages = session.filter((m) => m.run_id === run.id);
  const answered = new Set<string>();
  for (const m of messages)
    for (const part of m.parts) if (part.type === 'tool-result') answered.add(part.tool_call_id);
  const asking = new Set(await app.permissions.waitingCalls(run.id));
  const open: OpenCall[] = [];
  const waiting: ToolCallPart[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    if (m.finished_at === null) await app.sessions.updateMessage(m.id, { finished: true });
    for (const part of m.parts)
      if (part.type === 'tool-call' && !answered.has(part.tool_call_id)) {
        answered.add(part.tool_call_id); // once, even if a transcript holds the call twice
        if (asking.has(part.tool_call_id)) waiting.push(part);
        else open.push({ call: part, after: m });
      }
  }
  if (open.length === 0) return { settled: [], waiting };
  const workspace = await workspaceNow(app.workspace);
  if (app.config.engine.unknown_outcome === 'ask') {
    // The operator decides per call: allowed, it runs again with the waiting calls.
    const again = new Set(await askToRunAgain(c, open, workspace));
    waiting.push(...again);
    const notAgain = open.filter((o) => !again.has(o.call));
    return settle(c, messages, notAgain, workspace, waiting);
  }
  return settle(c, messages, open, workspace, waiting);
}

/** The calls in `open` get the unknown outcome: stored, in the ledger and on the bus. */
async function settle(
  c: RunContext,
  messages: Message[],
  open: readonly OpenCall[],
  workspace: string,
  waiting: ToolCallPart[],
): Promise<{ settled: ToolCallPart[]; waiting: ToolCallPart[] }> {
  const { app, run, sessionId } = c;
  if (open.length === 0) return { settled: [], waiting };
  const output = workspace
    ? `${UNKNOWN_OUTCOME}\n\nThe workspace now (git status --short):\n${workspace}`
    : UNKNOWN_OUTCOME;
  await storeResults(
    c,
    messages,
    open.map((o) => ({ ...o, output, isError: true })),
  );
  for (const { call } of open) {
    await c.ledger('tool.outcome_unknown', { tool_call_id: call.tool_call_id, tool: call.tool });
    app.bus.publish(sessionId, 'tool.finished', {
      session_id: sessionId,
      run_id: run.id,
      tool_call_id: call.tool_call_id,
      tool: call.tool,
      is_error: true,
      error: 'outcome unknown (the node running it stopped; not run again)',
      error_code: 'outcome_unknown',
    });
  }
  return { settled: open.map((o) => o.call), waiting };
}

/** The permission request asking whether to run a cut-off call again has this `tool_call_id`. */
export const RERUN_PREFIX = 'rerun:';

/**
 * `[engine] unknown_outcome = "ask"`: one permission request per cut-off call, "run it again?",
 * answered on any node (a durable request: when this node dies too, the next resume waits for the
 * same request, found by its `rerun:<call id>` tool call id). Returns the calls the operator
 * allowed; a deny, a timeout or nobody to ask (`permissions.unattended = "fail"`) leaves a call to
 * the unknown outcome. A cancel or a hand-over of the run ends the wait and the resume.
 */
async function askToRunAgain(c: RunContext, open: OpenCall[], workspace: string): Promise<ToolCallPart[]> {
  const { app, run, sessionId } = c;
  const again: ToolCallPart[] = [];
  for (const { call } of open) {
    try {
      await app.permissions.ask(
        {
          tool: call.tool,
          title: `run ${call.tool} again: its outcome is unknown (the node running it stopped)`,
          unverified: 'it may have run completely, partly or not at all',
          details: app.redactor.value({
            input: call.input,
            ...(workspace ? { workspace } : {}),
            reason: 'outcome_unknown',
          }),
        },
        { sessionId, runId: run.id, toolCallId: `${RERUN_PREFIX}${call.tool_call_id}`, signal: c.signal },
      );
      again.push(call);
      await c.ledger('tool.rerun', { tool_call_id: call.tool_call_id, tool: call.tool });
    } catch (error) {
      if (!SvcError.is(error) || error.code !== 'forbidden') throw error;
    }
  }
  return again;
}

/**
 * The calls that waited for a permission answer when their node died, run now through the run's
 * tool bridge (their ask finds the same request and waits for it, or takes the answer given
 * meanwhile); their results are stored after their call's assistant message.
 */
export async function runWaitingCalls(
  c: RunContext,
  bridge: Pick<ToolBridge, 'call'>,
  calls: ToolCallPart[],
): Promise<void> {
  if (calls.length === 0) return;
  const messages = (await c.app.sessions.messages(c.sessionId)).filter((m) => m.run_id === c.run.id);
  const results: (OpenCall & { output: string; isError: boolean })[] = [];
  for (const call of calls) {
    const after = messages.find(
      (m) =>
        m.role === 'assistant' &&
        m.parts.some((p) => p.type === 'tool-call' && p.tool_call_id === call.tool_call_id),
    );
    if (!after) continue;
    try {
      results.push({
        call,
        after,
        output: await bridge.call(call.tool, call.input, call.tool_call_id),
        isError: false,
      });
    } catch (error) {
      results.push({
        call,
        after,
        output: error instanceof Error ? error.message : String(error),
        isError: true,
      });
    }
  }
  await storeResults(c, messages, results);
}

interface OpenCall {
  call: ToolCallPart;
  /** The assistant message that holds the call. */
  after: Message;
}

/** Results go to the tool message that follows their call's assistant message (made if none). */
async function storeResults(
  c: RunContext,
  messages: Message[],
  results: (OpenCall & { output: string; isError: boolean })[],
): Promise<void> {
  const { app, run, sessionId } = c;
  const byAssistant = new Map<string, (OpenCall & { output: string; isError: boolean })[]>();
  for (const r of results) byAssistant.set(r.after.id, [...(byAssistant.get(r.after.id) ?? []), r]);
  for (const [assistantId, group] of byAssistant) {
    const at = messages.findIndex((m) => m.id === assistantId);
    const next = messages[at + 1];
    const parts: MessagePart[] = group.map(({ call, output, isError }) => ({
      type: 'tool-result',
      tool_call_id: call.tool_call_id,
      tool: call.tool,
      output,
      is_error: isError,
    }));
    if (next?.role === 'tool') {
      const current = (await app.sessions.messages(sessionId)).find((m) => m.id === next.id) ?? next;
      await app.sessions.updateMessage(next.id, { parts: [...current.parts, ...parts], finished: true });
    } else {
      const made = await app.sessions.appendMessage({
        session_id: sessionId,
        role: 'tool',
        parts,
        run_id: run.id,
        finished: true,
      });
      app.bus.publish(sessionId, 'message.created', {
        session_id: sessionId,
        message_id: made.id,
        role: 'tool',
        run_id: run.id,
      });
    }
  }
}

/** `git status --short` of the workspace, bounded; empty when it is not a repository. */
async function workspaceNow(root: string): Promise<string> {
  try {
    // The repository's own config runs no command, and git gets no secret (git-guard.ts).
    const env = guardEnv(process.env, root);
    const { stdout } = await run('git', await guardedArgs(root, ['status', '--short'], env), {
      cwd: root,
      env,
      timeout: 5_000,
      maxBuffer: 1 << 20,
    });
    const text = stdout.trim();
    return text.length > 2_000 ? `${text.slice(0, 2_000)}\n…` : text || '(no changes)';
  } catch {
    return '';
  }
}
