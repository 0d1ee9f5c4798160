/**
 * The prompt's messages converted and encoded once per run, not on every step. The SDK's
 * OpenAI-compatible chat model converts the whole prompt to its wire messages on every call, and
 * the request's JSON encodes all of them again; a run's steps send the same history each time
 * with two new messages at its end (the step driver keeps the same message objects from step to
 * step). Its conversion is one message at a time (a prompt message becomes its wire messages
 * whatever comes before or after it), so each prompt message is converted alone the first time it
 * is sent (by ./openai-compatible-request.ts's copy of that conversion, at once, for the messages
 * it covers; through the model's own `getArgs` for the others), its wire JSON registered with
 * ./request-body.ts, and from then on it goes to the SDK as a small marker message that the
 * provider's fetch (`sendOnce`) replaces with those bytes. The bytes sent are the same as without
 * it (a test compares them with the SDK's own requests).
 *
 * Keyed by the message object (a WeakMap): a message is never changed once it is in a prompt;
 * the kept bytes go when the message does. Only for a model whose fetch goes through `sendOnce`.
 * @module
 */
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3Prompt } from '@ai-sdk/provider';
import { chatMessages } from './openai-compatible-request';
import { messageMarker } from './request-body';
import { wrapModel } from './wrap-model';

type Message = LanguageModelV3Prompt[number];
type GetArgs = (options: LanguageModelV3CallOptions) => Promise<{ args: { messages?: unknown } }>;

/** Each prompt message's marker message (null: sent as it is, e.g. it has no wire message). */
const markers = new WeakMap<object, Message | null>();

/**
 * The OpenAI-compatible chat model with its prompt's messages converted and encoded once (see the
 * module comment): a model that hands `model` each call with its prompt's messages as markers. The
 * model as it is when it lacks the SDK's `getArgs` (nothing to convert a message with).
 */
export function withPromptMessages(model: LanguageModelV3): LanguageModelV3 {
  const getArgs: unknown = Reflect.get(model, 'getArgs');
  if (typeof getArgs !== 'function') return model;
  // svc's own conversion (./openai-compatible-request.ts, the SDK's output for the messages it
  // covers, at once); the SDK's `getArgs` for the others.
  const convert = (message: Message): unknown =>
    chatMessages([message]) ??
    (getArgs as GetArgs).call(model, { prompt: [message] }).then(({ args }) => args.messages);
  const last: LastPrompt = { prompt: [], marked: [] };
  return wrapModel(model, {
    doStream: (params) => then(markedPrompt(params, convert, last), (marked) => model.doStream(marked)),
    doGenerate: (params) => then(markedPrompt(params, convert, last), (marked) => model.doGenerate(marked)),
  });
}

/** `next` of the value, at once when it is no promise (a request need not wait a turn for it). */
function then<T, R>(value: T | Promise<T>, next: (value: T) => PromiseLike<R>): Promise<R> {
  if (value instanceof Promise) return value.then(next);
  try {
    return Promise.resolve(next(value));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * The model's last marked prompt: a step's prompt is the last step's messages (the same objects)
 * and its new ones, so the leading messages that are the very same objects take their markers
 * from it, without a WeakMap look-up each (~800 of them late in a long run).
 */
interface LastPrompt {
  prompt: readonly Message[];
  marked: readonly Message[];
}

/**
 * The call with each message of its prompt as its marker message: at once when every new message
 * converts at once (svc's conversion), a promise when one waits for the SDK's.
 */
function markedPrompt(
  params: LanguageModelV3CallOptions,
  convert: (message: Message) => unknown,
  last: LastPrompt,
): LanguageModelV3CallOptions | Promise<LanguageModelV3CallOptions> {
  const prompt = params.prompt;
  if (!Array.isArray(prompt) || prompt.length === 0) return params;
  const start = samePrefix(prompt, last.prompt);
  const marked = last.marked.slice(0, start);
  for (let i = start; i < prompt.length; i++) {
    const message = prompt[i];
    let marker = markers.get(message);
    if (marker === undefined) {
      const made = markerFor(message, convert);
      // Waiting for the SDK's conversion: once it is kept, the same walk again finds every marker.
      if (made instanceof Promise)
        return made.then((later) => {
          markers.set(message, later);
          return markedPrompt(params, convert, last);
        });
      marker = made;
      markers.set(message, marker);
    }
    marked.push(marker ?? message);
  }
  return markedCall(params, prompt, marked, last);
}

function markedCall(
  params: LanguageModelV3CallOptions,
  prompt: LanguageModelV3Prompt,
  marked: Message[],
  last: LastPrompt,
): LanguageModelV3CallOptions {
  // A copy: the caller may add to its array after the call (the next step's messages).
  last.prompt = prompt.slice();
  last.marked = marked;
  return { ...params, prompt: marked };
}

/** How many leading messages of `a` are the very objects of `b` (a small function: it gets optimized). */
function samePrefix(a: readonly Message[], b: readonly Message[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** A message's marker message: at once from svc's conversion, a promise from the SDK's. */
function markerFor(
  message: Message,
  convert: (message: Message) => unknown,
): Message | null | Promise<Message | null> {
  let wire: unknown;
  try {
    wire = convert(message);
  } catch {
    // The SDK's own conversion of the whole prompt reports it.
    return null;
  }
  if (wire instanceof Promise)
    return wire.then(
      (converted) => markerOf(message, converted),
      () => null,
    );
  return markerOf(message, wire);
}

function markerOf(message: Message, wire: unknown): Message | null {
  if (!Array.isArray(wire) || wire.length === 0) return null;
  // Pushed, not mapped: TurboFan's inlined `map` answers a holey array, and the `join` would
  // deopt the optimized caller once (docs/performance-log.md, p-jit).
  const entries: (string | undefined)[] = [];
  for (const entry of wire) entries.push(JSON.stringify(entry));
  const json = entries.join(',');
  const text = messageMarker(message, json);
  return text === undefined ? null : ({ role: 'system', content: text } satisfies Message);
}
