/**
 * Reading a `POST /v1/chat/completions` body (spec, Endpoints → Compat surface), leniently: the
 * only request-level errors are an empty (or missing) `messages` and a malformed JSON body (the
 * unknown model is the resolver's call), and a size limit: more `messages` than
 * `options.openai_compat.max_messages` is a 413, as a body over the byte limit is (a new session
 * imports each message in the request's transaction: 40k of them held the server for 48 s). Every ignored field is accepted whatever its type and has
 * no effect; fields outside both lists are ignored too (no chat-completions field is rejected).
 * @module
 */
import { SvcError } from '../../../errors';
import { nestsDeeperThan } from '../../../util/json-depth';

/** Honored fields (spec table). `stream_options` is honored for its `include_usage`. */
export const HONORED_FIELDS = ['model', 'messages', 'stream', 'stream_options'] as const;
/** Message fields that are read. */
export const HONORED_MESSAGE_FIELDS = ['role', 'content', 'tool_calls', 'tool_call_id', 'name'] as const;
/** Accepted but silently ignored (spec table, COMPAT-18): the service uses its own defaults. */
export const IGNORED_FIELDS = [
  'temperature',
  'top_p',
  'n',
  'max_tokens',
  'max_completion_tokens',
  'presence_penalty',
  'frequency_penalty',
  'stop',
  'seed',
  'logprobs',
  'top_logprobs',
  'logit_bias',
  'response_format',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'user',
  'service_tier',
  'prediction',
  'audio',
  'modalities',
  'metadata',
  'store',
] as const;

export interface CompatToolCall {
  id: string;
  name: string;
  /** The parsed `function.arguments` (the raw string when it is not JSON). */
  input: unknown;
}

export type CompatMessage =
  | { role: 'system'; text: string }
  | { role: 'user'; text: string }
  | { role: 'assistant'; text: string; tool_calls: CompatToolCall[] }
  | { role: 'tool'; tool_call_id: string; text: string };

export interface ChatRequest {
  /** The `model` string as sent (trimmed), or '' when absent. */
  model: string;
  messages: CompatMessage[];
  stream: boolean;
  include_usage: boolean;
  /** Ignored fields present in the body (for the ledger and the posture). */
  ignored: string[];
  /** Fields outside both lists (ignored as well). */
  unknown: string[];
}

const KNOWN = new Set<string>([...HONORED_FIELDS, ...IGNORED_FIELDS]);

/** `options.openai_compat.max_messages` when unset: far above a chat client's, a few tenths of a second to import. */
export const DEFAULT_MAX_MESSAGES = 2000;

export function parseChatRequest(text: string, maxMessages = DEFAULT_MAX_MESSAGES): ChatRequest {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new SvcError('invalid_input', 'invalid JSON body');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new SvcError('invalid_input', 'invalid JSON body: expected an object');
  }
  const record = body as Record<string, unknown>;
  const raw = record.messages;
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new SvcError('invalid_input', 'messages: required and must be a non-empty array');
  }
  if (raw.length > maxMessages) throw tooManyMessages(raw.length, maxMessages);
  // One loop, not map then filter: TurboFan's inlined `map` answers a holey array where the
  // builtin answers a packed one, so the optimized parse would deopt at the `filter` once and be
  // compiled again (docs/performance-log.md, p-jit).
  const messages: CompatMessage[] = [];
  for (const entry of raw) {
    const message = readMessage(entry);
    if (message !== undefined) messages.push(message);
  }
  if (messages.length === 0) {
    throw new SvcError(
      'invalid_input',
      'messages: required and must be a non-empty array of message objects',
    );
  }
  const streamOptions = record.stream_options;
  return {
    model: typeof record.model === 'string' ? record.model.trim() : '',
    messages,
    stream: record.stream === true,
    include_usage:
      typeof streamOptions === 'object' &&
      streamOptions !== null &&
      (streamOptions as Record<string, unknown>).include_usage === true,
    ignored: IGNORED_FIELDS.filter((f) => f in record),
    unknown: Object.keys(record).filter((k) => !KNOWN.has(k)),
  };
}

function tooManyMessages(count: number, max: number): SvcError {
  return new SvcError(
    'invalid_input',
    `messages: ${count} messages, over the limit of ${max} (options.openai_compat.max_messages); ` +
      'send only the recent part of the conversation, or bind a session with X-Svc-Session-Id and send only the new messages',
    { status: 413 },
  );
}

function readMessage(value: unknown): CompatMessage | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const m = value as Record<string, unknown>;
  const role = typeof m.role === 'string' ? m.role : 'user';
  const text = contentText(m.content);
  switch (role) {
    case 'system':
    case 'developer':
      return { role: 'system', text };
    case 'assistant':
      return { role: 'assistant', text, tool_calls: toolCalls(m.tool_calls, m.function_call) };
    case 'tool':
    case 'function':
      return {
        role: 'tool',
        tool_call_id:
          typeof m.tool_call_id === 'string' ? m.tool_call_id : typeof m.name === 'string' ? m.name : '',
        text,
      };
    default:
      // user, and any role this version does not know: read as the user's words.
      return { role: 'user', text };
  }
}

/** `content` as text: a string, or the text of a parts array (image/audio/file parts are named). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const out: string[] = [];
  for (const part of content) {
    if (typeof part === 'string') out.push(part);
    else if (typeof part === 'object' && part !== null) {
      const p = part as Record<string, unknown>;
      if (typeof p.text === 'string') out.push(p.text);
      else if (typeof p.refusal === 'string') out.push(p.refusal);
      else if (typeof p.type === 'string') out.push(`[${p.type} content omitted]`);
    }
  }
  return out.join('\n');
}

function toolCalls(value: unknown, legacy: unknown): CompatToolCall[] {
  const list = Array.isArray(value) ? value : [];
  const calls: CompatToolCall[] = [];
  for (const [index, item] of list.entries()) {
    if (typeof item !== 'object' || item === null) continue;
    const call = item as Record<string, unknown>;
    const fn = (call.function ?? {}) as Record<string, unknown>;
    if (typeof fn.name !== 'string' || !fn.name) continue;
    calls.push({
      id: typeof call.id === 'string' && call.id ? call.id : `call_${index}`,
      name: fn.name,
      input: parseArguments(fn.arguments),
    });
  }
  // Legacy single `function_call` (pre-tools clients).
  if (calls.length === 0 && typeof legacy === 'object' && legacy !== null) {
    const fn = legacy as Record<string, unknown>;
    if (typeof fn.name === 'string' && fn.name) {
      calls.push({ id: fn.name, name: fn.name, input: parseArguments(fn.arguments) });
    }
  }
  return calls;
}

/**
 * Arguments nested deeper than this are kept as their JSON text (or a note, when they came as an
 * object): storing them would overflow the stack (`JSON.stringify` gives up at a few thousand
 * levels) and no tool's input nests near it. A call svc runs gets them as invalid input.
 */
const MAX_ARGUMENT_DEPTH = 100;

function parseArguments(value: unknown): unknown {
  if (typeof value !== 'string') {
    if (!nestsDeeperThan(value, MAX_ARGUMENT_DEPTH)) return value ?? {};
    return `[arguments nested deeper than ${MAX_ARGUMENT_DEPTH} levels, not kept]`;
  }
  if (value.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(value);
    return nestsDeeperThan(parsed, MAX_ARGUMENT_DEPTH) ? value : parsed;
  } catch {
    return value;
  }
}
