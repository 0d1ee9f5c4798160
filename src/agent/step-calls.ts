/**
 * The tool calls of svc's step driver (./step-driver.ts): a call checked against the step's tools
 * and its input parsed, the errors the SDK names for a call that cannot run, and the step's two
 * messages for the next step (as the SDK's toResponseMessages).
 * @module
 */
import {
  JSONParseError,
  type LanguageModelV3,
  type LanguageModelV3StreamPart,
  type SharedV3ProviderMetadata,
} from '@ai-sdk/provider';
import type { ModelMessage, ToolSet } from 'ai';

type Ai = typeof import('ai');

/** What a call's checks need of the driver: the SDK's error classes, the run's tools, the model. */
export interface CallSource {
  ai: Ai;
  tools: ToolSet;
  model: LanguageModelV3;
}

export interface ParsedCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  providerMetadata?: SharedV3ProviderMetadata;
  /** Why the call cannot run (an unknown tool, an input that does not parse). */
  error?: unknown;
}

export type CallResult =
  | { type: 'tool-result'; call: ParsedCall; output: unknown }
  | { type: 'tool-error'; call: ParsedCall; error: unknown };

/** A text or reasoning part of the step's content. */
export type ContentText = {
  type: 'text' | 'reasoning';
  text: string;
  providerOptions?: SharedV3ProviderMetadata;
};

/** The step's content as its assistant message holds it. */
export type StepContent = Array<
  | ContentText
  | {
      type: 'tool-call';
      toolCallId: string;
      toolName: string;
      input: unknown;
      providerOptions?: SharedV3ProviderMetadata;
    }
>;

type ToolCallChunk = Extract<LanguageModelV3StreamPart, { type: 'tool-call' }>;

/** A call checked against the step's tools and its input parsed (as the SDK's parseToolCall). */
export function parseCall(
  o: CallSource,
  chunk: ToolCallChunk,
  active: ReadonlySet<string> | undefined,
): ParsedCall {
  const base = {
    toolCallId: chunk.toolCallId,
    toolName: chunk.toolName,
    ...(chunk.providerMetadata ? { providerMetadata: chunk.providerMetadata } : {}),
  };
  const text = chunk.input;
  let input: unknown = text;
  let cause: unknown;
  try {
    input = text.trim() === '' ? {} : JSON.parse(text);
  } catch (error) {
    cause = error;
  }
  if (!(chunk.toolName in o.tools) || (active && !active.has(chunk.toolName)))
    return { ...base, input, error: noSuchTool(o, chunk.toolName, active) };
  if (cause === undefined) return { ...base, input };
  const error = new o.ai.InvalidToolInputError({
    toolName: chunk.toolName,
    toolInput: text,
    cause: new JSONParseError({ text, cause }),
  });
  return { ...base, input, error };
}

function noSuchTool(o: CallSource, toolName: string, active: ReadonlySet<string> | undefined) {
  return new o.ai.NoSuchToolError({ toolName, availableTools: active ? [...active] : Object.keys(o.tools) });
}

/** The model called a tool on a step told to answer without tools (the SDK's error, its name kept). */
export function violation(o: CallSource, finishReason: string, content: unknown[]) {
  return new o.ai.ToolChoiceViolationError({
    toolChoice: { type: 'none' },
    finishReason: finishReason as never,
    provider: o.model.provider,
    modelId: o.model.modelId,
    content: content as never,
  });
}

export function errorMessage(error: unknown): string {
  if (error == null) return 'unknown error';
  if (typeof error === 'string') return error;
  if (error instanceof Error) return error.message;
  return JSON.stringify(error);
}

/** The step's messages for the next step (as the SDK's toResponseMessages). */
export function responseMessages(
  outcome: { content: StepContent; calls: ParsedCall[] },
  results: CallResult[],
): ModelMessage[] {
  const content = outcome.content.filter((part) => part.type !== 'text' || part.text.length > 0);
  const out: ModelMessage[] = [];
  if (content.length > 0) out.push({ role: 'assistant', content } as ModelMessage);
  const order = new Map(outcome.calls.map((call, i) => [call.toolCallId, i]));
  const sorted = [...results].sort(
    (a, b) => (order.get(a.call.toolCallId) ?? 0) - (order.get(b.call.toolCallId) ?? 0),
  );
  if (sorted.length > 0) {
    out.push({
      role: 'tool',
      content: sorted.map((result) => ({
        type: 'tool-result' as const,
        toolCallId: result.call.toolCallId,
        toolName: result.call.toolName,
        output:
          result.type === 'tool-error'
            ? { type: 'error-text' as const, value: errorMessage(result.error) }
            : typeof result.output === 'string'
              ? { type: 'text' as const, value: result.output }
              : { type: 'json' as const, value: (result.output ?? null) as never },
      })),
    });
  }
  return out;
}
