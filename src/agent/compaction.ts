/**
 * Compaction: the session's history since its last summary is summarized by the small model
 * into one summary message; later turns start from it (`session.metadata.summary_message_id`).
 * Auto-compaction (context near the model window) and `summarize_session` run this same
 * pipeline. The agent service owns the state machine and the events around it.
 * @module
 */

import { SvcError, toSvcError } from '../errors';
import type { Message } from '../sessions/session-store';
import { requestNonce, withRequestSection } from './compaction-summary';
import {
  neutraliseSummary,
  renderTranscript,
  summaryRequest,
  transcriptNonce,
} from './compaction-transcript';
import type { AgentHost } from './deps';
import { historyMessages, textOf } from './history';
import { SUMMARY_PROMPT } from './system-prompt.prompt';

/** Longest transcript sent to the summarizer; the middle is cut first. */
const MAX_TRANSCRIPT_CHARS = 240_000;
/** Share of the summarizing model's window the transcript may take (the rest: prompt and answer). */
const TRANSCRIPT_WINDOW_SHARE = 0.5;
/** Auto-compactions that may fail in one run before it stops trying (docs/compaction.md). */
export const MAX_FAILED_COMPACTIONS = 2;
export { LATEST_REQUEST_HEADING } from './compaction-summary';

export interface CompactionOutcome {
  summary_message_id: string;
  messages_summarized: number;
  tokens_before: number;
  tokens_after: number;
  cost: number;
}

export async function compactHistory(
  app: AgentHost,
  input: {
    sessionId: string;
    runId?: string;
    signal?: AbortSignal;
    /** This message and later ones stay verbatim after the summary (the prompt of a starting run). */
    keepFromMessageId?: string;
  },
): Promise<CompactionOutcome> {
  const session = await app.sessions.require(input.sessionId);
  const all = await historyMessages(app.sessions, session);
  const keepIndex = input.keepFromMessageId ? all.findIndex((m) => m.id === input.keepFromMessageId) : -1;
  const messages = keepIndex === -1 ? all : all.slice(0, keepIndex);
  if (messages.filter((m) => m.role !== 'system').length < 2) {
    throw new SvcError(
      'conflict',
      `session ${session.id} has nothing to summarize yet (fewer than two messages since the last summary)`,
    );
  }
  const model = await resolveSmallModel(app, session.model, input);
  const window = model.info.context_window ?? 0;
  // Tool output in the transcript is fenced with a nonce it cannot know (compaction-transcript.ts).
  const nonce = transcriptNonce();
  const transcript = renderTranscript(
    messages,
    window > 0
      ? Math.min(MAX_TRANSCRIPT_CHARS, Math.floor(window * 4 * TRANSCRIPT_WINDOW_SHARE))
      : MAX_TRANSCRIPT_CHARS,
    nonce,
  );
  const ai = await import('ai');
  let result: Awaited<ReturnType<typeof ai.generateText>>;
  try {
    result = await ai.generateText({
      model: model.language_model,
      system: SUMMARY_PROMPT,
      prompt: summaryRequest(transcript, nonce),
      abortSignal: input.signal,
      maxRetries: 2,
    });
  } catch (error) {
    if (input.signal?.aborted) throw new SvcError('cancelled', 'summarizing was cancelled', { cause: error });
    throw new SvcError(
      'unavailable',
      `summarizing failed: ${app.redactor.string(toSvcError(error).message)}`,
      {
        cause: error,
      },
    );
  }
  const text = result.text.trim();
  if (!text) throw new SvcError('unavailable', 'summarizing failed: the model returned an empty summary');
  // A summary must be smaller than the messages it replaces, else it is not applied (the history
  // stays as it was). Not the reported usage: that counts the system prompt and tool schemas too.
  const replaced = messagesTokens(messages);
  if (estimateTokens(text) >= replaced) {
    throw new SvcError(
      'unavailable',
      `summarizing failed: the summary (~${estimateTokens(text)} tokens) is not smaller than the history it would replace (~${replaced} tokens)`,
    );
  }
  const tokensBefore = contextTokens(messages);
  // Lines of the summary that pass for svc's structure are escaped; the request is svc's own text.
  const request = keepIndex === -1 ? await latestRequest(app, session.id, messages) : '';
  const stored = withRequestSection(neutraliseSummary(text), request, requestNonce());
  const inputTokens = result.usage.inputTokens ?? 0;
  const outputTokens = result.usage.outputTokens ?? 0;
  const cost =
    (inputTokens * (model.info.cost_per_1m_in ?? 0) + outputTokens * (model.info.cost_per_1m_out ?? 0)) / 1e6;
  const summary = await app.sessions.appendMessage({
    session_id: session.id,
    role: 'system',
    parts: [{ type: 'text', text: stored }],
    model: model.selector,
    provider: model.provider,
    usage: { input_tokens: inputTokens, output_tokens: outputTokens },
    cost,
    run_id: input.runId ?? null,
  });
  const compactions = typeof session.metadata.compactions === 'number' ? session.metadata.compactions : 0;
  await app.sessions.update(session.id, {
    metadata: {
      summary_message_id: summary.id,
      summary_covers_until: messages[messages.length - 1].id,
      compactions: compactions + 1,
    },
  });
  await app.sessions.addUsage(session.id, { input_tokens: inputTokens, output_tokens: outputTokens, cost });
  return {
    summary_message_id: summary.id,
    messages_summarized: messages.length,
    tokens_before: tokensBefore,
    tokens_after: estimateTokens(stored),
    cost,
  };
}

async function resolveSmallModel(
  app: AgentHost,
  sessionModel: string | null,
  context: { sessionId: string; runId?: string; signal?: AbortSignal },
) {
  const turn = {
    sessionId: context.sessionId,
    runId: context.runId,
    signal: context.signal,
    // Inside a run it is the automatic compaction; outside one, a summary someone asked for.
    call_purpose: context.runId ? ('compaction' as const) : ('summary' as const),
  };
  try {
    return await app.models.resolve({ purpose: 'small', ...turn });
  } catch (error) {
    // No [models] at all, but the session has its own model: summarize with that.
    if (sessionModel) return app.models.resolve({ sessionModel, ...turn });
    throw error;
  }
}

/** Tokens the history takes: the last step's reported usage, else an estimate from its size. */
export function contextTokens(messages: readonly Message[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    const usage = messages[i].role === 'assistant' ? messages[i].usage : null;
    if (usage) return usage.input_tokens + usage.output_tokens;
  }
  return messagesTokens(messages);
}

/** An estimate of the tokens the messages themselves take (their parts as stored). */
export function messagesTokens(messages: readonly Message[]): number {
  return estimateTokens(messages.map((m) => JSON.stringify(m.parts)).join(''));
}

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * The latest user request, when the summary covers it (a compaction in the middle of a run, or
 * of an idle session): it follows the summary verbatim, so the model still reads what it was
 * asked. Taken from the whole session when the history since the last summary has no user
 * message (a second compaction in one run), never from the earlier summary's text.
 */
async function latestRequest(
  app: AgentHost,
  sessionId: string,
  messages: readonly Message[],
): Promise<string> {
  const last =
    messages.findLast((m) => m.role === 'user') ??
    (await app.sessions.messages(sessionId)).findLast((m) => m.role === 'user');
  return last ? textOf(last.parts).trim() : '';
}
