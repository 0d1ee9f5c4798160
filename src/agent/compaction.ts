/**
 * Compaction: the session's history since its last summary is summarized by the small model
 * into one summary message; later turns start from it (`session.metadata.summary_message_id`).
 * Auto-compaction (context near the model window) and `summarize_session` run this same
 * pipeline. The agent service owns the state machine and the events around it.
 * @module
 */

import { SvcError, toSvcError } from '../errors';
import type { Message } from '../sessions/session-store';
import type { AgentHost } from './deps';
import { historyMessages, textOf } from './history';
import { SUMMARY_PROMPT } from './system-prompt.prompt';

/** Longest transcript sent to the summarizer; the middle is cut first. */
const MAX_TRANSCRIPT_CHARS = 240_000;
const MAX_TOOL_OUTPUT_CHARS = 2_000;

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
  const session = app.sessions.require(input.sessionId);
  const all = historyMessages(app.sessions, session);
  const keepIndex = input.keepFromMessageId ? all.findIndex((m) => m.id === input.keepFromMessageId) : -1;
  const messages = keepIndex === -1 ? all : all.slice(0, keepIndex);
  if (messages.filter((m) => m.role !== 'system').length < 2) {
    throw new SvcError(
      'conflict',
      `session ${session.id} has nothing to summarize yet (fewer than two messages since the last summary)`,
    );
  }
  const model = await resolveSmallModel(app, session.model, input);
  const transcript = renderTranscript(messages);
  const ai = await import('ai');
  let result: Awaited<ReturnType<typeof ai.generateText>>;
  try {
    result = await ai.generateText({
      model: model.language_model,
      system: SUMMARY_PROMPT,
      prompt: `Summarize this conversation.\n\n${transcript}`,
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
  const inputTokens = result.usage.inputTokens ?? 0;
  const outputTokens = result.usage.outputTokens ?? 0;
  const cost =
    (inputTokens * (model.info.cost_per_1m_in ?? 0) + outputTokens * (model.info.cost_per_1m_out ?? 0)) / 1e6;
  const summary = app.sessions.appendMessage({
    session_id: session.id,
    role: 'system',
    parts: [{ type: 'text', text }],
    model: model.selector,
    provider: model.provider,
    usage: { input_tokens: inputTokens, output_tokens: outputTokens },
    cost,
    run_id: input.runId ?? null,
  });
  const compactions = typeof session.metadata.compactions === 'number' ? session.metadata.compactions : 0;
  app.sessions.update(session.id, {
    metadata: {
      summary_message_id: summary.id,
      summary_covers_until: messages[messages.length - 1].id,
      compactions: compactions + 1,
    },
  });
  app.sessions.addUsage(session.id, { input_tokens: inputTokens, output_tokens: outputTokens, cost });
  return {
    summary_message_id: summary.id,
    messages_summarized: messages.length,
    tokens_before: contextTokens(messages),
    tokens_after: outputTokens || estimateTokens(text),
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
  return estimateTokens(messages.map((m) => JSON.stringify(m.parts)).join(''));
}

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

function renderTranscript(messages: readonly Message[]): string {
  const lines: string[] = [];
  for (const message of messages) {
    if (message.role === 'system') {
      lines.push(`[earlier summary]\n${textOf(message.parts)}`);
      continue;
    }
    for (const part of message.parts) {
      switch (part.type) {
        case 'text':
          if (part.text.trim()) lines.push(`[${message.role}]\n${part.text}`);
          break;
        case 'reasoning':
          break;
        case 'tool-call':
          lines.push(`[tool call ${part.tool}] ${clip(JSON.stringify(part.input ?? {}), 1000)}`);
          break;
        case 'tool-result':
          lines.push(
            `[tool result ${part.tool}${part.is_error ? ', error' : ''}] ${clip(String(part.output ?? ''), MAX_TOOL_OUTPUT_CHARS)}`,
          );
          break;
        case 'file':
          lines.push(`[file ${part.path ?? part.media_type}]`);
          break;
        case 'error':
          lines.push(`[error] ${part.message}`);
          break;
        default: {
          const exhaustive: never = part;
          throw new Error(`unknown part ${JSON.stringify(exhaustive)}`);
        }
      }
    }
  }
  const transcript = lines.join('\n\n');
  if (transcript.length <= MAX_TRANSCRIPT_CHARS) return transcript;
  const half = MAX_TRANSCRIPT_CHARS / 2;
  return `${transcript.slice(0, half)}\n\n[… ${transcript.length - MAX_TRANSCRIPT_CHARS} characters of the middle left out …]\n\n${transcript.slice(-half)}`;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
